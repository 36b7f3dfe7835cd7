// e2e.stages: nested stages whose figures the program knows exactly.
//
//   baseline                  (empty: its peak is the live heap of libc's own blocks)
//   load                      1 MiB kept until train; 50 000 bytes temporary
//     parse                   200 000 temporary; 300 000 kept until train; 5 x 1000 leaked
//   train                     frees load's and parse's blocks; 7 x 100 leaked
//     epoch                   2 MiB allocated and freed
//     epoch                   2 MiB allocated and freed, 3 x 64 leaked
//
// The program mirrors the tracer's accounting (docs/architecture.md): an allocation belongs to the
// innermost open stage; a stage's peak is the highest live heap while it is open;
// retained = bytes allocated in the stage or its nested stages still live when it ends;
// leaked per stage = allocated in it (innermost) and never freed. Its live heap counts
// only its own blocks: e2e.py adds the baseline (libc's blocks, constant here because
// nothing else allocates between the stages). It writes its figures per stage, in the
// order stages began, to the truth file.
#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

constexpr int kMaxStages = 16;
constexpr int kMaxBlocks = 64;

struct StageFigures {
  const char* name;
  const char* path;
  int depth;
  long long peak, allocations, bytes_allocated, retained, leaked_bytes, leaked_blocks;
};
struct Block {
  void* p;
  long long size;
  int stage;
};

StageFigures g_stages[kMaxStages];
int g_stage_count = 0;
int g_open[kMaxStages];
int g_open_count = 0;
Block g_blocks[kMaxBlocks];
int g_block_count = 0;
long long g_live = 0;

void reach() {
  for (int i = 0; i < g_open_count; ++i) {
    StageFigures& s = g_stages[g_open[i]];
    if (g_live > s.peak) s.peak = g_live;
  }
}

void begin(const char* name, const char* path) {
  memstage_stage_begin(name);
  StageFigures& s = g_stages[g_stage_count];
  s = StageFigures{name, path, g_open_count, g_live, 0, 0, 0, 0, 0};
  g_open[g_open_count++] = g_stage_count++;
}

void end() {
  memstage_stage_end();
  const int index = g_open[--g_open_count];
  // Stages are numbered as they begin: the nested ones of `index` are those after it.
  for (int b = 0; b < g_block_count; ++b) {
    if (g_blocks[b].p && g_blocks[b].stage >= index) g_stages[index].retained += g_blocks[b].size;
  }
}

}  // namespace

E2E_FRAME void* allocate(long long size) {
  void* p = malloc(static_cast<size_t>(size));
  escape(p);
  memset(p, 1, static_cast<size_t>(size));
  const int stage = g_open_count ? g_open[g_open_count - 1] : -1;
  g_blocks[g_block_count++] = Block{p, size, stage};
  if (stage >= 0) {
    ++g_stages[stage].allocations;
    g_stages[stage].bytes_allocated += size;
  }
  g_live += size;
  reach();
  return p;
}

E2E_FRAME void release(void* p) {
  for (int b = 0; b < g_block_count; ++b) {
    if (g_blocks[b].p == p) {
      g_live -= g_blocks[b].size;
      g_blocks[b].p = nullptr;
    }
  }
  free(p);
  barrier();
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);

  begin("baseline", "baseline");
  end();

  begin("load", "load");
  void* corpus = allocate(1048576);
  begin("parse", "load/parse");
  release(allocate(200000));
  void* tokens = allocate(300000);
  for (int i = 0; i < 5; ++i) allocate(1000);  // leaked
  end();
  release(allocate(50000));
  end();

  begin("train", "train");
  for (int epoch = 0; epoch < 2; ++epoch) {
    begin("epoch", "train/epoch");
    release(allocate(2097152));
    if (epoch == 1) {
      for (int i = 0; i < 3; ++i) allocate(64);  // leaked
    }
    end();
  }
  release(corpus);
  release(tokens);
  for (int i = 0; i < 7; ++i) allocate(100);  // leaked
  end();

  // Leaked per stage: the blocks still live now.
  for (int b = 0; b < g_block_count; ++b) {
    if (g_blocks[b].p && g_blocks[b].stage >= 0) {
      g_stages[g_blocks[b].stage].leaked_bytes += g_blocks[b].size;
      ++g_stages[g_blocks[b].stage].leaked_blocks;
    }
  }
  static char list[8192];
  size_t n = 0;
  n += snprintf(list + n, sizeof(list) - n, "[");
  for (int i = 0; i < g_stage_count; ++i) {
    const StageFigures& s = g_stages[i];
    n += snprintf(list + n, sizeof(list) - n,
                  "%s{\"name\": \"%s\", \"path\": \"%s\", \"depth\": %d, \"peak_heap_bytes\": %lld, "
                  "\"allocations\": %lld, \"bytes_allocated\": %lld, \"retained_bytes\": %lld, "
                  "\"leaked_bytes\": %lld, \"leaked_blocks\": %lld}",
                  i ? ", " : "", s.name, s.path, s.depth, s.peak, s.allocations, s.bytes_allocated, s.retained,
                  s.leaked_bytes, s.leaked_blocks);
  }
  n += snprintf(list + n, sizeof(list) - n, "]");
  static Truth truth;
  truth.add_raw("stages", list);
  truth.add("live_at_end_bytes", g_live);
  truth.write_to(truth_file);
  return 0;
}
