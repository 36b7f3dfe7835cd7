// e2e.reserved, e2e.heap_peak_sample, e2e.own_allocator: programs whose memory the
// report's figures must describe as it is.
//
//   figures TRUTH reserve        1 GiB of PROT_NONE address space and 1 GiB mapped
//                                MAP_NORESERVE, 1 MiB of the first made writable and
//                                touched: 1 MiB of memory, not 2 GiB
//   figures TRUTH heap_peak      no stages: 64 MiB in 1024 blocks of 64 KiB, all freed
//                                before exit; the fragmentation at the peak is low
//   figures TRUTH own_allocator  96 MiB from its own mmap'd arena, touched, nothing
//                                through malloc
//   figures TRUTH fork_exec CHILD_TRUTH   forks a child that execs `figures CHILD_TRUTH
//                                heap_peak` and waits for it
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_common.h"

namespace {

constexpr size_t kMiB = 1 << 20;

void touch(void* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(p)[i] = 1;
}

int reserve(Truth& truth) {
  const size_t reserved = 1024 * kMiB;
  void* none = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* noreserve = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (none == MAP_FAILED || noreserve == MAP_FAILED) return 1;
  if (mprotect(none, kMiB, PROT_READ | PROT_WRITE) != 0) return 1;
  touch(none, kMiB);
  truth.add_u("reserved_bytes", 2 * reserved);
  truth.add_u("accessible_bytes", kMiB);
  munmap(none, reserved);
  munmap(noreserve, reserved);
  return 0;
}

int heap_peak(Truth& truth) {
  constexpr int kBlocks = 1024;
  constexpr size_t kBlockBytes = 64 * 1024;  // below glibc's mmap threshold: in the heap
  static void* blocks[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    blocks[i] = malloc(kBlockBytes);
    touch(blocks[i], kBlockBytes);
    escape(blocks[i]);
  }
  truth.add_u("peak_heap_bytes", kBlocks * kBlockBytes);
  // Held for a few sampling ticks (10 ms each), as a real peak is: the allocator is sampled
  // at most once a tick, and a high reached between two samples is described at the next
  // tick. A peak shorter than a tick may be described up to a tick early (rss_breakdown.t_s).
  usleep(60 * 1000);
  // Freed in allocation order: glibc trims the heap's top only at the end.
  for (int i = 0; i < kBlocks; ++i) free(blocks[i]);
  return 0;
}

int own_allocator(Truth& truth) {
  const size_t arena = 96 * kMiB;
  void* p = mmap(nullptr, arena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  touch(p, arena);
  truth.add_u("arena_bytes", arena);
  usleep(50 * 1000);  // at least one RSS tick with the arena resident
  return 0;
}

int fork_exec(Truth& truth, char* self, char* child_truth) {
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    char mode[] = "heap_peak";
    char* child_argv[] = {self, child_truth, mode, nullptr};
    execv(self, child_argv);
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  truth.add("child_pid", child);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  static Truth truth;
  const char* mode = argc > 2 ? argv[2] : "";
  int status = 2;
  if (strcmp(mode, "reserve") == 0) status = reserve(truth);
  if (strcmp(mode, "heap_peak") == 0) status = heap_peak(truth);
  if (strcmp(mode, "own_allocator") == 0) status = own_allocator(truth);
  if (strcmp(mode, "fork_exec") == 0 && argc > 3) status = fork_exec(truth, argv[0], argv[3]);
  truth.write_to(truth_file);
  return status;
}
