/* memstage stage API: mark the stages of a program (load, tokenize, train, ...).
 *
 *   #include <memstage/stage.h>
 *   memstage_stage_begin("vectorize");   // stages nest; one process-wide stack
 *   ...
 *   memstage_stage_end();
 *
 *   memstage::Stage s{"vectorize"};      // C++: ends when s goes out of scope
 *
 * Header only, nothing to link. The tracer (libmemstage_preload.so, loaded by
 * `memstage run`) defines the memstage_tracer_* symbols; the references below are
 * weak, so without the tracer they resolve to null and every call is a no-op that
 * costs one well-predicted branch. Programs ship with their markers in.
 */
#ifndef MEMSTAGE_STAGE_H
#define MEMSTAGE_STAGE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Implemented by the tracer. Call the memstage_stage_* wrappers, not these. */
extern void memstage_tracer_stage_begin(const char* name) __attribute__((weak));
extern void memstage_tracer_stage_end(void) __attribute__((weak));

/* Opens a stage named `name` (copied; any bytes) inside the innermost open one. */
static inline void memstage_stage_begin(const char* name) {
  if (memstage_tracer_stage_begin) memstage_tracer_stage_begin(name);
}

/* Closes the innermost open stage. Unbalanced ends are ignored by the tracer. */
static inline void memstage_stage_end(void) {
  if (memstage_tracer_stage_end) memstage_tracer_stage_end();
}

#ifdef __cplusplus
} /* extern "C" */

namespace memstage {

/* RAII stage: begins on construction, ends on destruction. */
class Stage {
 public:
  explicit Stage(const char* name) { memstage_stage_begin(name); }
  ~Stage() { memstage_stage_end(); }
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
};

}  // namespace memstage
#endif

#endif /* MEMSTAGE_STAGE_H */
