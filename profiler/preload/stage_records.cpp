// Stages (recording.h, record_stage_begin and record_stage_end): the process's stack of
// open stages and their interned names (recording_core.h, Tracer), each edge a record with
// the samples around it.
#include "profiler/preload/stage_records.h"

#include <string.h>

#include "profiler/preload/recording.h"
#include "profiler/preload/sample_records.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {
namespace {

namespace records = trace::records;

uint32_t stage_name_hash(const char* name, size_t length) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (size_t i = 0; i < length; ++i) h = (h ^ static_cast<uint8_t>(name[i])) * 16777619u;
  return h;
}

// The id of a stage name, interned (and its StageName record pushed) on first use;
// kDroppedStage when the name is new and kMaxStageNames are taken. Under stage_mutex.
uint32_t intern_stage_name(ThreadState* ts, const char* name, size_t length) {
  constexpr uint32_t kMask = Tracer::kStageNameSlots - 1;
  static_assert((Tracer::kStageNameSlots & kMask) == 0);
  uint32_t slot = stage_name_hash(name, length) & kMask;
  for (;; slot = (slot + 1) & kMask) {
    const uint32_t held = g_tracer.stage_name_slots[slot];
    if (held == 0) break;
    const uint32_t id = held - 1;
    if (g_tracer.stage_name_lengths[id] == length && memcmp(g_tracer.stage_names[id], name, length) == 0) return id;
  }
  const uint32_t id = g_tracer.stage_name_count;
  if (id == Tracer::kMaxStageNames) return Tracer::kDroppedStage;
  auto* copy = static_cast<char*>(g_tracer.stage_name_arena.allocate(length + 1, 1));
  if (!copy) return Tracer::kDroppedStage;
  memcpy(copy, name, length);
  g_tracer.stage_names[id] = copy;
  g_tracer.stage_name_lengths[id] = static_cast<uint32_t>(length);
  g_tracer.stage_name_slots[slot] = id + 1;
  ++g_tracer.stage_name_count;
  uint8_t buf[1 + trace::kMaxVarintBytes + trace::kMaxStageNameBytes];
  // Numbered under the stage lock: no other thread can begin this stage before
  // its name is in the trace.
  push_encoded(ts, buf,
               static_cast<uint32_t>(records::encode(buf, records::StageName{std::string_view(name, length)}) - buf));
  return id;
}

void push_stage_limit(ThreadState* ts, trace::StageLimit limit) {
  const auto which = static_cast<uint32_t>(limit);
  push_record(ts, records::StageLimitHit{
                      trace_time_ns(), which,
                      limit == trace::StageLimit::kDepth ? Tracer::kMaxStageDepth : Tracer::kMaxStageNames,
                      g_tracer.stage_begins_dropped[which]});
}

// Counts a begin not recorded; the first of each limit is said in the trace at once.
void drop_stage_begin(ThreadState* ts, trace::StageLimit limit) {
  if (g_tracer.stage_begins_dropped[static_cast<uint32_t>(limit)]++ == 0) push_stage_limit(ts, limit);
}

}  // namespace

void record_stage_begin(const char* name) {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  const size_t length = name ? strnlen(name, trace::kMaxStageNameBytes) : 0;
  // The heap's high and the calls until now belong to the enclosing stage.
  if (counting_mode()) push_heap_counters(ts);
  pthread_mutex_lock(&g_tracer.stage_mutex);
  if (g_tracer.open_stage_count == Tracer::kMaxStageDepth) {
    ++g_tracer.open_past_depth;
    drop_stage_begin(ts, trace::StageLimit::kDepth);
  } else {
    const uint32_t id = intern_stage_name(ts, name, length);
    g_tracer.open_stages[g_tracer.open_stage_count++] = id;
    if (id == Tracer::kDroppedStage) {
      drop_stage_begin(ts, trace::StageLimit::kDistinctNames);
    } else {
      push_record(ts, records::StageBegin{id, trace_time_ns()});
    }
  }
  pthread_mutex_unlock(&g_tracer.stage_mutex);
  push_samples(ts, true);
  serve_point();
}

void record_stage_end() {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  // The stage's last samples belong inside it.
  push_samples(ts, true);
  pthread_mutex_lock(&g_tracer.stage_mutex);
  // The end of a dropped begin is dropped too: the enclosing stage stays open.
  if (g_tracer.open_past_depth > 0) {
    --g_tracer.open_past_depth;
  } else if (g_tracer.open_stage_count > 0 &&
             g_tracer.open_stages[--g_tracer.open_stage_count] != Tracer::kDroppedStage) {
    push_record(ts, records::StageEnd{trace_time_ns()});
  }
  pthread_mutex_unlock(&g_tracer.stage_mutex);
  serve_point();
}

void push_stage_limit_totals(ThreadState* ts) {
  pthread_mutex_lock(&g_tracer.stage_mutex);
  for (auto limit : {trace::StageLimit::kDistinctNames, trace::StageLimit::kDepth}) {
    if (g_tracer.stage_begins_dropped[static_cast<uint32_t>(limit)]) push_stage_limit(ts, limit);
  }
  pthread_mutex_unlock(&g_tracer.stage_mutex);
}

}  // namespace memstage::preload
