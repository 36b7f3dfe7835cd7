// e2e.sigkill_random: allocates kBlocks blocks of kBlockSize bytes one after the other from
// hold_block(), touching each whole, frees none, then sleeps until killed. Its truth at any
// instant is in a file it keeps mapped (argv[1], made by e2e.py, two pages), so that a
// SIGKILL landing anywhere leaves it behind: its pid, the block size and usable size, how
// many blocks malloc was asked for ("asked") and how many it returned ("held"). asked >
// held only while a malloc runs: the kill then came between the two, where either count is
// the truth. Nothing else allocates (no stdio, no iostream), so the heap is held * size.
// After touching each block it notes the kernel's high-water mark of its RSS: the peak RSS
// at its death is at least that. "paced" (e2e.sigkill_compressor_stalled): it starts only
// once the file's `go` is set, and sleeps 10 ms after each block, so that the tracer's
// writer runs many rounds while it allocates.
#include <malloc.h>
#include <sys/mman.h>
#include <time.h>

#include "e2e_common.h"

// 2 MiB: more than the kernel's error in counting RSS here (e2e.py), so a block touched and
// not counted shows. Under 64 MiB in all: below it every block is a heap high the tracer
// samples (sample_records.cpp, note_live_bytes).
constexpr size_t kBlockSize = 2u << 20;
constexpr long kBlocks = 24;

struct Progress {
  volatile long pid;
  volatile long block_size;
  volatile long usable_size;
  volatile long blocks;
  volatile long asked;
  volatile long held;
  volatile long finished;
  volatile long rss_high_water_bytes;  // VmHWM, read after each block was touched
  volatile long go;                    // "paced": set by the test to start
};

// VmHWM from /proc/self/status, read without stdio (which would allocate); 0 if unreadable.
long read_rss_high_water_bytes() {
  char buf[4096];
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* line = strstr(buf, "VmHWM:");
  if (!line) return 0;
  long kib = 0;
  for (const char* c = line + 6; *c && *c != '\n'; ++c) {
    if (*c >= '0' && *c <= '9') kib = kib * 10 + (*c - '0');
  }
  return kib * 1024;
}

E2E_FRAME void* hold_block(int i) {
  void* p = malloc(kBlockSize);
  escape(p);
  return p;
}

void* sleep_forever(void*) {
  for (;;) pause();
}

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], flag) == 0) return true;
  }
  return false;
}

// nanosleep, which never allocates.
void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  while (nanosleep(&t, &t) != 0) {
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  // "threaded": a second thread (that only sleeps) first, so that the tracer's writer thread
  // writes what the allocating thread records.
  pthread_t sleeper;
  if (has_flag(argc, argv, "threaded") && pthread_create(&sleeper, nullptr, sleep_forever, nullptr) != 0) return 5;
  const bool paced = has_flag(argc, argv, "paced");
  const int fd = open(argv[1], O_RDWR | O_CLOEXEC);
  if (fd < 0) return 3;
  auto* progress = static_cast<Progress*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (progress == MAP_FAILED) return 4;
  progress->block_size = kBlockSize;
  progress->pid = getpid();  // e2e.py waits for it, then kills at an instant of its choice
  progress->blocks = kBlocks;
  while (paced && !progress->go) sleep_ms(1);
  for (long i = 0; i < kBlocks; ++i) {
    progress->asked = i + 1;
    barrier();
    void* p = hold_block(static_cast<int>(i));
    barrier();
    progress->held = i + 1;
    if (i == 0) progress->usable_size = static_cast<long>(malloc_usable_size(p));
    memset(p, static_cast<int>(i), kBlockSize);
    progress->rss_high_water_bytes = read_rss_high_water_bytes();
    if (paced) sleep_ms(10);
  }
  progress->finished = 1;
  for (;;) pause();
  return 0;
}
