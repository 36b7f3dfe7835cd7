// e2e.figures_modes, e2e.stats_stages: nested stages whose heap and counts the program knows
// in both sizes memstage counts (docs/architecture.md, "live heap"): requested (full and
// aggregate modes) and usable, malloc_usable_size (stats and sample modes).
//
//   modes TRUTH [threaded]
//
//   baseline                 (empty: its peak is the live heap of the C/C++ runtime's blocks)
//   outer                    500 allocations (malloc, calloc, realloc, new[], posix_memalign)
//     inner                  7 allocations: 3 x 8 MB (blocks glibc maps on its own) and 4 small
//   outer                    30 more; then everything is freed
//   handover                 a thread allocates 5 x 1000 bytes and ends; this thread frees them
//
// A stage's peak is the highest live heap while it is open; its allocations are those made
// while it was the innermost open stage (a realloc is one). The program's live heap counts
// only its own blocks: e2e.py adds the baseline. `threaded`: a second thread allocates and
// frees first, so that the tracer runs its writer thread (a program with one thread has none).
#include <memstage/stage.h>

#include <malloc.h>

#include <new>

#include "e2e_common.h"

namespace {

constexpr int kMaxStages = 5;
constexpr int kMaxBlocks = 1024;

struct StageFigures {
  const char* name;
  const char* path;
  int depth;
  long long peak, peak_usable, allocations, bytes_allocated;
};
struct Block {
  void* p;
  long long size, usable;
  bool array_new;
};

StageFigures g_stages[kMaxStages];
int g_stage_count = 0;
int g_open[kMaxStages];
int g_open_count = 0;
Block g_blocks[kMaxBlocks];
int g_block_count = 0;
long long g_live = 0, g_live_usable = 0;
long long g_peak = 0, g_peak_usable = 0;

void reach() {
  for (int i = 0; i < g_open_count; ++i) {
    StageFigures& s = g_stages[g_open[i]];
    if (g_live > s.peak) s.peak = g_live;
    if (g_live_usable > s.peak_usable) s.peak_usable = g_live_usable;
  }
  if (g_live > g_peak) g_peak = g_live;
  if (g_live_usable > g_peak_usable) g_peak_usable = g_live_usable;
}

void begin(const char* name, const char* path) {
  memstage_stage_begin(name);
  StageFigures& s = g_stages[g_stage_count];
  s = StageFigures{name, path, g_open_count, g_live, g_live_usable, 0, 0};
  g_open[g_open_count++] = g_stage_count++;
}

void end() {
  memstage_stage_end();
  --g_open_count;
}

// An allocation of `size` bytes now live at p, counted in the innermost stage.
void allocated(void* p, long long size, bool array_new) {
  escape(p);
  const long long usable = static_cast<long long>(malloc_usable_size(p));
  g_blocks[g_block_count++] = Block{p, size, usable, array_new};
  if (g_open_count) {
    StageFigures& s = g_stages[g_open[g_open_count - 1]];
    ++s.allocations;
    s.bytes_allocated += size;
  }
  g_live += size;
  g_live_usable += usable;
  reach();
}

Block* find(void* p) {
  for (int b = 0; b < g_block_count; ++b) {
    if (g_blocks[b].p == p) return &g_blocks[b];
  }
  abort();
}

void forget(Block* b) {
  g_live -= b->size;
  g_live_usable -= b->usable;
  b->p = nullptr;
}

}  // namespace

// The i-th allocation of a stage, by one of the allocator's entry points in turn, of sizes
// that meet each of glibc's roundings (a tiny block, 16-byte steps, a page for a mapped one).
E2E_FRAME void* allocate(int i) {
  const long long size = 1 + (i * 37) % 700;
  void* p = nullptr;
  switch (i % 5) {
    case 0: p = malloc(static_cast<size_t>(size)); break;
    case 1: p = calloc(1, static_cast<size_t>(size)); break;
    case 2: p = new char[static_cast<size_t>(size)]; break;
    case 3:
      if (posix_memalign(&p, 64, static_cast<size_t>(size)) != 0) abort();
      break;
    default: p = malloc(static_cast<size_t>(size)); break;
  }
  if (!p) abort();
  memset(p, 1, static_cast<size_t>(size));
  allocated(p, size, i % 5 == 2);
  return p;
}

E2E_FRAME void* allocate_size(long long size) {
  void* p = malloc(static_cast<size_t>(size));
  if (!p) abort();
  memset(p, 1, static_cast<size_t>(size));
  allocated(p, size, false);
  return p;
}

// A realloc is one allocation of the new size; the old block's bytes go.
E2E_FRAME void* grow(void* p, long long size) {
  Block* b = find(p);
  if (b->array_new) abort();
  forget(b);
  void* q = realloc(p, static_cast<size_t>(size));
  if (!q) abort();
  allocated(q, size, false);
  return q;
}

E2E_FRAME void release(void* p) {
  Block* b = find(p);
  forget(b);
  if (b->array_new) {
    delete[] static_cast<char*>(p);
  } else {
    free(p);
  }
  barrier();
}

// The blocks a thread allocates and leaves to another when it ends: stats and sample modes
// count them in the thread's own count until it is added to the process's.
void handover() {
  begin("handover", "handover");
  pthread_t thread;
  static void* blocks[5];
  const auto work = [](void*) -> void* {
    for (void*& p : blocks) p = allocate_size(1000);
    return nullptr;
  };
  if (pthread_create(&thread, nullptr, work, nullptr) != 0) abort();
  pthread_join(thread, nullptr);
  for (void* p : blocks) release(p);
  end();
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  if (argc > 2 && strcmp(argv[2], "threaded") == 0) churn_in_a_second_thread(10000);

  begin("baseline", "baseline");
  end();

  begin("outer", "outer");
  void* kept[64];
  int kept_count = 0;
  for (int i = 0; i < 490; ++i) {
    void* p = allocate(i);
    if (i % 8 == 0 && kept_count < 64) {
      kept[kept_count++] = p;
    } else {
      release(p);
    }
  }
  // 10 reallocs: 500 allocations in outer before inner.
  for (int i = 0, done = 0; i < kept_count && done < 10; ++i) {
    if (find(kept[i])->array_new) continue;
    kept[i] = grow(kept[i], 1000 + 300 * done);
    ++done;
  }

  begin("inner", "outer/inner");
  void* big[3];
  for (long long i = 0; i < 3; ++i) big[i] = allocate_size(8000000 + 1000 * i);
  void* small[4];
  for (int i = 0; i < 4; ++i) small[i] = allocate(1000 + i);
  for (void* p : small) release(p);
  for (void* p : big) release(p);
  end();

  for (int i = 0; i < 30; ++i) release(allocate(2000 + i));
  for (int i = 0; i < kept_count; ++i) release(kept[i]);
  end();
  handover();

  static char list[4096];
  size_t n = 0;
  n += snprintf(list + n, sizeof(list) - n, "[");
  for (int i = 0; i < g_stage_count; ++i) {
    const StageFigures& s = g_stages[i];
    n += snprintf(list + n, sizeof(list) - n,
                  "%s{\"name\": \"%s\", \"path\": \"%s\", \"depth\": %d, \"peak_heap_bytes\": %lld, "
                  "\"peak_usable_bytes\": %lld, \"allocations\": %lld, \"bytes_allocated\": %lld}",
                  i ? ", " : "", s.name, s.path, s.depth, s.peak, s.peak_usable, s.allocations, s.bytes_allocated);
  }
  n += snprintf(list + n, sizeof(list) - n, "]");
  static Truth truth;
  truth.add_raw("stages", list);
  truth.add("peak_heap_bytes", g_peak);
  truth.add("peak_usable_bytes", g_peak_usable);
  truth.add("live_at_end_bytes", g_live);
  truth.write_to(truth_file);
  return 0;
}
