// memstage-replayer OPS_FILE [HOLD_BYTES]: runs a recorded allocation sequence (replay_ops.h) through
// whatever malloc this process has: glibc's, or the allocator `memstage replay` preloads,
// under `memstage run` like any program (so each allocator's run is measured and reported
// as `memstage compare` measures one). One thread per recorded thread, each running its
// stream of ops, waiting where the ops say for another's progress. Links no allocator of
// its own, and calls the allocator for the recorded blocks only: its table of them, the
// threads' progress and the stage names are mapped, outside the heap it measures, and it
// uses nothing of libstdc++, which is not loaded (its start-up pool, 71 KiB, would count in
// the replay's heap).
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "harness/replay/replay_ops.h"
#include "profiler/preload/futex.h"
#include "profiler/trace/trace_format.h"

namespace {

using memstage::replay::Op;
using memstage::replay::OpKind;
using memstage::replay::OpsHeader;
using memstage::trace::AllocCall;

constexpr size_t kPageBytes = 4096;

// What the program would have done to a block it asked for: written it (assumed: all of it,
// once; a calloc's block is left as calloc left it). One byte a page makes each page resident
// as the program's writes would.
void touch(void* block, size_t size) {
  auto* bytes = static_cast<volatile unsigned char*>(block);
  for (size_t at = 0; at < size; at += kPageBytes) bytes[at] = 1;
}

[[noreturn]] void fail(const char* why, const char* what = "") {
  fprintf(stderr, "memstage-replayer: %s%s\n", why, what);
  exit(2);
}

// The tracer's stage markers where `memstage run` preloaded it; none otherwise.
struct Stages {
  void (*begin)(const char*) = nullptr;
  void (*end)() = nullptr;
  Stages() {
    begin = reinterpret_cast<void (*)(const char*)>(dlsym(RTLD_DEFAULT, "memstage_tracer_stage_begin"));
    end = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memstage_tracer_stage_end"));
  }
};

struct Mapped {
  const unsigned char* bytes = nullptr;
  size_t size = 0;
};

Mapped map_file(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open ", path);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(OpsHeader)) fail("too short to be a replay's ops: ", path);
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) fail("cannot map ", path);
  return Mapped{static_cast<const unsigned char*>(p), static_cast<size_t>(st.st_size)};
}

// Memory outside the heap measured: mapped, not malloc'd (the program had none of it).
void* map_zeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("out of memory for the table of blocks");
  return p;
}

// The ops run so far handed back every kReleaseEveryOps (1 MiB of them): pages of the file
// read once would otherwise stay in this process's RSS beside the heap it measures (16 bytes
// an op: a good part of the heap's size, docs/performance.md).
constexpr uint64_t kReleaseEveryOps = 65536;

// Hands back the whole pages between the last release and `read_up_to`; returns the new mark.
size_t release_read(const Mapped& file, size_t released_bytes, const void* read_up_to) {
  const size_t up_to = static_cast<size_t>(static_cast<const unsigned char*>(read_up_to) - file.bytes) & ~(kPageBytes - 1);
  madvise(const_cast<unsigned char*>(file.bytes) + released_bytes, up_to - released_bytes, MADV_DONTNEED);
  return up_to;
}

struct Names {
  char** names;
  size_t count;
};

// The stage names after the ops, each a length and its bytes, made C strings once.
Names read_names(const Mapped& file, size_t at) {
  size_t count = 0, text_bytes = 0;
  for (size_t pos = at; pos + 4 <= file.size; ++count) {
    uint32_t length;
    memcpy(&length, file.bytes + pos, 4);
    text_bytes += length + 1;
    pos += 4 + length;
  }
  char** names = static_cast<char**>(map_zeroed((count + 1) * sizeof(char*)));
  char* text = static_cast<char*>(map_zeroed(text_bytes));
  for (size_t pos = at, i = 0; i < count; ++i) {
    uint32_t length;
    memcpy(&length, file.bytes + pos, 4);
    if (pos + 4 + length > file.size) fail("a stage name past the file's end");
    memcpy(text, file.bytes + pos + 4, length);  // the mapping is zeroed: NUL-terminated
    names[i] = text;
    text += length + 1;
    pos += 4 + length;
  }
  return Names{names, count};
}

// The program's memory outside its heap (code, libraries, stacks) less this process's own,
// as `memstage replay` measured both: held from the start as touched pages outside malloc,
// so that its peak RSS compares with the program's.
void hold_non_heap(uint64_t bytes) {
  if (bytes) touch(map_zeroed(bytes), bytes);
}

// Whether a module loaded beside the tracer (at `data`, its base) may define the C++
// operators: a C++ runtime, or a preloaded library (the allocator memstage replay preloads).
int defines_operators(dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  const bool tracer = reinterpret_cast<const void*>(info->dlpi_addr) == data || strstr(name ? name : "", "libmemstage_preload");
  if (!name || !name[0] || tracer) return 0;
  const char* preloaded = getenv("LD_PRELOAD");
  const char* base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
  return strstr(name, "libstdc++") || strstr(name, "libc++.") || (preloaded && strstr(preloaded, base));
}

// The tracer's operator new alone, with no C++ runtime or allocator's behind it, looks for
// one again at every call (a dlopen's file lookups each: torch_small's replay took minutes);
// malloc is what it would fall back to. Asked without dlopen or a failing dlsym: their
// allocations would count in the replay's heap.
bool operators_beyond(const void* tracer_base) {
  return dl_iterate_phdr(defines_operators, const_cast<void*>(tracer_base)) != 0;
}

// The C++ operators where a loaded module defines them (a preloaded allocator's own, or
// libstdc++'s where loaded), called through the first definition (the tracer's, which
// records them, under memstage run); otherwise what libstdc++'s do: malloc, aligned_alloc,
// free.
struct Operators {
  void* (*new_plain)(size_t) = nullptr;
  void* (*new_array)(size_t) = nullptr;
  void* (*new_aligned)(size_t, size_t) = nullptr;
  void* (*new_array_aligned)(size_t, size_t) = nullptr;
  void (*delete_plain)(void*) = nullptr;
  void (*delete_array)(void*) = nullptr;
  void (*delete_aligned)(void*, size_t) = nullptr;
  void (*delete_array_aligned)(void*, size_t) = nullptr;
  template <class F>
  static void find(F& f, const char* name, bool usable) {
    f = usable ? reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)) : nullptr;
  }
  // `tracer_base`: where the tracer is loaded, or null.
  explicit Operators(const void* tracer_base) {
    const bool usable = !tracer_base || operators_beyond(tracer_base);
    find(new_plain, "_Znwm", usable);
    find(new_array, "_Znam", usable);
    find(new_aligned, "_ZnwmSt11align_val_t", usable);
    find(new_array_aligned, "_ZnamSt11align_val_t", usable);
    find(delete_plain, "_ZdlPv", usable);
    find(delete_array, "_ZdaPv", usable);
    find(delete_aligned, "_ZdlPvSt11align_val_t", usable);
    find(delete_array_aligned, "_ZdaPvSt11align_val_t", usable);
  }
};
// The tracer's load address where memstage run preloaded it; null otherwise.
const void* tracer_base() {
  Dl_info info;
  void* marker = dlsym(RTLD_DEFAULT, "memstage_tracer_stage_begin");
  return marker && dladdr(marker, &info) ? info.dli_fbase : nullptr;
}
const Operators* g_operators = nullptr;

// A block as the program asked for it: by its call, with its alignment.
void* allocate(const Op& op) {
  const size_t size = op.value, alignment = size_t{1} << op.align_log2;
  const Operators& o = *g_operators;
  void* p = nullptr;
  switch (static_cast<AllocCall>(op.call)) {
    case AllocCall::kCalloc: return calloc(1, size);
    case AllocCall::kRealloc: return realloc(nullptr, size);
    case AllocCall::kPosixMemalign: return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
    case AllocCall::kAlignedAlloc: return aligned_alloc(alignment, size);
    case AllocCall::kMemalign: return memalign(alignment, size);
    case AllocCall::kValloc: return valloc(size);
    case AllocCall::kPvalloc: return pvalloc(size);
    case AllocCall::kNew:
      if (op.align_log2) return o.new_aligned ? o.new_aligned(size, alignment) : aligned_alloc(alignment, size);
      return o.new_plain ? o.new_plain(size) : malloc(size);
    case AllocCall::kNewArray:
      if (op.align_log2) return o.new_array_aligned ? o.new_array_aligned(size, alignment) : aligned_alloc(alignment, size);
      return o.new_array ? o.new_array(size) : malloc(size);
    default: return malloc(size);  // kMalloc, and kUnknown (a trace before version 6)
  }
}

// A block freed as its call's blocks are (an allocator's operator delete may not be free).
void deallocate(void* p, const Op& op) {
  const Operators& o = *g_operators;
  const size_t alignment = size_t{1} << op.align_log2;
  if (op.call == static_cast<uint8_t>(AllocCall::kNew)) {
    if (op.align_log2 && o.delete_aligned) return o.delete_aligned(p, alignment);
    if (!op.align_log2 && o.delete_plain) return o.delete_plain(p);
  } else if (op.call == static_cast<uint8_t>(AllocCall::kNewArray)) {
    if (op.align_log2 && o.delete_array_aligned) return o.delete_array_aligned(p, alignment);
    if (!op.align_log2 && o.delete_array) return o.delete_array(p);
  }
  free(p);
}

// A thread's ops run so far, on a cache line of its own: what another's kWait looks at.
struct alignas(64) Progress {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> wanted{0};  // the lowest count a sleeper waits for; 0: none
};

// Spins a little (the op waited for is usually close), then sleeps on the futex of the
// counter's low half, saying the count it wants: advance() wakes the sleepers only once it
// is reached, not at every op (a wake at every op took more system time than the replay
// itself). A wake missed in a race is made up by the sleep's 1 ms limit.
void wait_for(Progress& p, uint64_t mark) {
  for (int spin = 0; spin < 256; ++spin) {
    if (p.done.load(std::memory_order_acquire) >= mark) return;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  for (;;) {
    uint64_t wanted = p.wanted.load(std::memory_order_seq_cst);
    while ((wanted == 0 || wanted > mark) && !p.wanted.compare_exchange_weak(wanted, mark, std::memory_order_seq_cst)) {
    }
    const uint64_t seen = p.done.load(std::memory_order_seq_cst);
    if (seen >= mark) return;
    memstage::preload::futex_wait(&p.done, static_cast<uint32_t>(seen), 1'000'000);
  }
}
void advance(Progress& p, uint64_t done) {
  p.done.store(done, std::memory_order_seq_cst);
  const uint64_t wanted = p.wanted.load(std::memory_order_seq_cst);
  if (wanted != 0 && done >= wanted) {
    // Every sleeper wakes and says again what it wants, if it wants more.
    p.wanted.store(0, std::memory_order_seq_cst);
    memstage::preload::futex_wake(&p.done, INT32_MAX);
  }
}

// What every replay thread shares: all mapped, outside the heap measured.
struct Replay {
  Mapped file;
  OpsHeader header;
  const Op* const* streams;  // by thread: its first op
  const uint64_t* counts;    // by thread: its ops
  Progress* progress;        // by thread
  void** blocks;             // by slot
  Names names;
  Stages stages;
};
const Replay* g_replay = nullptr;

void run_op(const Replay& r, const Op& op) {
  if (op.slot > r.header.slots && op.kind != OpKind::kWait) fail("an op names a slot past the file's count");
  void*& block = r.blocks[op.slot];
  switch (op.kind) {
    case OpKind::kMalloc:
      block = allocate(op);
      if (block && op.call != static_cast<uint8_t>(AllocCall::kCalloc)) touch(block, op.value);
      break;
    case OpKind::kFree:
      deallocate(block, op);
      block = nullptr;
      break;
    case OpKind::kRealloc:
      // The old part was written before (realloc copied it): the whole block, once more.
      if (void* grown = realloc(block, op.value)) {
        touch(grown, op.value);
        block = grown;
      }
      break;
    case OpKind::kWait:
      if (op.slot >= r.header.threads || op.value > r.counts[op.slot]) fail("a wait past a thread's ops");
      wait_for(r.progress[op.slot], op.value);
      break;
    case OpKind::kStageBegin:
      if (r.stages.begin && op.value < r.names.count) r.stages.begin(r.names.names[op.value]);
      break;
    case OpKind::kStageEnd:
      if (r.stages.end) r.stages.end();
      break;
    default:
      fail("an op of an unknown kind");
  }
}

// One thread's stream, its progress said after each op.
void* run_stream(void* thread_number) {
  const Replay& r = *g_replay;
  const auto thread = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(thread_number));
  const Op* ops = r.streams[thread];
  size_t released_bytes = static_cast<size_t>(reinterpret_cast<const unsigned char*>(ops) - r.file.bytes) & ~(kPageBytes - 1);
  for (uint64_t i = 0; i < r.counts[thread]; ++i) {
    if (i % kReleaseEveryOps == 0 && i > 0) released_bytes = release_read(r.file, released_bytes, ops + i);
    if (ops[i].kind == OpKind::kWait && ops[i].slot == thread) fail("a thread's op waits for the thread itself");
    run_op(r, ops[i]);
    advance(r.progress[thread], i + 1);
  }
  return nullptr;
}

// The header and the streams' table, checked against the file.
Replay* read_replay(const char* path) {
  auto* r = static_cast<Replay*>(map_zeroed(sizeof(Replay)));
  r->file = map_file(path);
  memcpy(&r->header, r->file.bytes, sizeof(OpsHeader));
  const OpsHeader& h = r->header;
  if (memcmp(h.magic, memstage::replay::kOpsMagic, sizeof(h.magic)) != 0 || h.version != memstage::replay::kOpsVersion) {
    fail("not a replay's ops file of this version: ", path);
  }
  const size_t table_end = sizeof(OpsHeader) + size_t{h.threads} * sizeof(uint64_t);
  if (h.threads == 0 || h.threads > memstage::trace::kMaxTraceThreads || table_end > r->file.size) fail("truncated: ", path);
  r->counts = reinterpret_cast<const uint64_t*>(r->file.bytes + sizeof(OpsHeader));
  auto* streams = static_cast<const Op**>(map_zeroed(h.threads * sizeof(Op*)));
  uint64_t at = 0;
  for (uint32_t t = 0; t < h.threads; ++t) {
    streams[t] = reinterpret_cast<const Op*>(r->file.bytes + table_end) + at;
    at += r->counts[t];
  }
  if (at != h.ops || table_end + h.ops * sizeof(Op) > r->file.size) fail("truncated: ", path);
  r->streams = streams;
  r->names = read_names(r->file, table_end + h.ops * sizeof(Op));
  r->progress = static_cast<Progress*>(map_zeroed(h.threads * sizeof(Progress)));
  r->blocks = static_cast<void**>(map_zeroed((h.slots + 1) * sizeof(void*)));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) fail("usage: memstage-replayer OPS_FILE [HOLD_BYTES] (written by memstage replay)");
  Replay* replay = read_replay(argv[1]);
  if (argc == 3) hold_non_heap(strtoull(argv[2], nullptr, 10));
  new (&replay->stages) Stages();
  g_operators = new (map_zeroed(sizeof(Operators))) Operators(tracer_base());
  g_replay = replay;
  const uint32_t threads = replay->header.threads;
  auto* ids = static_cast<pthread_t*>(map_zeroed(threads * sizeof(pthread_t)));
  for (uint32_t t = 1; t < threads; ++t) {
    if (pthread_create(&ids[t], nullptr, run_stream, reinterpret_cast<void*>(uintptr_t{t})) != 0) fail("cannot start a replay thread");
  }
  run_stream(nullptr);
  for (uint32_t t = 1; t < threads; ++t) pthread_join(ids[t], nullptr);
  return 0;
}
