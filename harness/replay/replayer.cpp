// memstage-replayer OPS_FILE [HOLD_BYTES]: runs a recorded allocation sequence (replay_ops.h) through
// whatever malloc this process has: glibc's, or the allocator `memstage replay` preloads,
// under `memstage run` like any program (so each allocator's run is measured and reported
// as `memstage compare` measures one). Links no allocator of its own, and calls malloc for
// the recorded blocks only: its table of them and the stage names are mapped, outside the
// heap it measures, and it uses nothing of libstdc++, which is not loaded (its start-up
// pool, 71 KiB, would count in the replay's heap).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "harness/replay/replay_ops.h"

namespace {

using memstage::replay::Op;
using memstage::replay::OpKind;
using memstage::replay::OpsHeader;

constexpr size_t kPageBytes = 4096;

// What the program would have done to a block it asked for: written it (assumed: all of it,
// once). One byte a page makes each page resident as the program's writes would.
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) fail("usage: memstage-replayer OPS_FILE [HOLD_BYTES] (written by memstage replay)");
  const Mapped file = map_file(argv[1]);
  OpsHeader header;
  memcpy(&header, file.bytes, sizeof(header));
  if (memcmp(header.magic, memstage::replay::kOpsMagic, sizeof(header.magic)) != 0 ||
      header.version != memstage::replay::kOpsVersion) {
    fail("not a replay's ops file of this version: ", argv[1]);
  }
  const size_t ops_end = sizeof(OpsHeader) + header.ops * sizeof(Op);
  if (ops_end > file.size) fail("truncated: ", argv[1]);
  const Names names = read_names(file, ops_end);
  void** blocks = static_cast<void**>(map_zeroed((header.slots + 1) * sizeof(void*)));
  if (argc == 3) hold_non_heap(strtoull(argv[2], nullptr, 10));
  const Stages stages;
  const auto* ops = reinterpret_cast<const Op*>(file.bytes + sizeof(OpsHeader));
  size_t released_bytes = 0;
  for (uint64_t i = 0; i < header.ops; ++i) {
    if (i % kReleaseEveryOps == 0 && i > 0) released_bytes = release_read(file, released_bytes, ops + i);
    const Op& op = ops[i];
    if (op.slot > header.slots) fail("an op names a slot past the file's count");
    switch (op.kind) {
      case OpKind::kMalloc:
        blocks[op.slot] = malloc(op.value);
        if (blocks[op.slot]) touch(blocks[op.slot], op.value);
        break;
      case OpKind::kFree:
        free(blocks[op.slot]);
        blocks[op.slot] = nullptr;
        break;
      case OpKind::kRealloc:
        // The old part was written before (realloc copied it): the whole block, once more.
        if (void* grown = realloc(blocks[op.slot], op.value)) {
          touch(grown, op.value);
          blocks[op.slot] = grown;
        }
        break;
      case OpKind::kStageBegin:
        if (stages.begin && op.value < names.count) stages.begin(names.names[op.value]);
        break;
      case OpKind::kStageEnd:
        if (stages.end) stages.end();
        break;
      default:
        fail("an op of an unknown kind");
    }
  }
  return 0;
}
