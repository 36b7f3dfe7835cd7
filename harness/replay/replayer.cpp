// memstage-replayer OPS_FILE: runs a recorded allocation sequence (replay_ops.h) through
// whatever malloc this process has: glibc's, or the allocator `memstage replay` preloads,
// under `memstage run` like any program (so each allocator's run is measured and reported
// as `memstage compare` measures one). Links no allocator of its own; its table of blocks
// is mapped, outside the heap it measures (its stage names are its only allocations).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

[[noreturn]] void fail(const std::string& why) {
  fprintf(stderr, "memstage-replayer: %s\n", why.c_str());
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
  if (fd < 0) fail(std::string("cannot open ") + path + ": " + strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(OpsHeader)) fail(std::string(path) + " is too short");
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) fail(std::string("cannot map ") + path);
  return Mapped{static_cast<const unsigned char*>(p), static_cast<size_t>(st.st_size)};
}

// The stage names after the ops, each a length and its bytes, made C strings once.
char** read_names(const Mapped& file, size_t at) {
  size_t count = 0;
  for (size_t pos = at; pos + 4 <= file.size; ++count) {
    uint32_t length;
    memcpy(&length, file.bytes + pos, 4);
    pos += 4 + length;
  }
  char** names = static_cast<char**>(calloc(count + 1, sizeof(char*)));
  for (size_t pos = at, i = 0; i < count; ++i) {
    uint32_t length;
    memcpy(&length, file.bytes + pos, 4);
    names[i] = strndup(reinterpret_cast<const char*>(file.bytes + pos + 4), length);
    pos += 4 + length;
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) fail("usage: memstage-replayer OPS_FILE (written by memstage replay)");
  const Mapped file = map_file(argv[1]);
  OpsHeader header;
  memcpy(&header, file.bytes, sizeof(header));
  if (memcmp(header.magic, memstage::replay::kOpsMagic, sizeof(header.magic)) != 0 ||
      header.version != memstage::replay::kOpsVersion) {
    fail(std::string(argv[1]) + " is not a replay's ops file of this version");
  }
  const size_t ops_end = sizeof(OpsHeader) + header.ops * sizeof(Op);
  if (ops_end > file.size) fail(std::string(argv[1]) + " is truncated");
  char** names = read_names(file, ops_end);
  // The table of blocks outside the heap measured (the program had none): mapped, not malloc'd.
  void* table = mmap(nullptr, (header.slots + 1) * sizeof(void*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (table == MAP_FAILED) fail("cannot map the table of blocks");
  void** blocks = static_cast<void**>(table);
  const Stages stages;
  const auto* ops = reinterpret_cast<const Op*>(file.bytes + sizeof(OpsHeader));
  for (uint64_t i = 0; i < header.ops; ++i) {
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
        if (stages.begin && names[op.value]) stages.begin(names[op.value]);
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
