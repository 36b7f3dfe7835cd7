// e2e.attach: a program that runs for a few seconds, long enough for `memstage attach` to
// come and go. Before its loop it allocates blocks from before_attach() (freed in the
// middle of the loop: frees the attached tracer never saw allocated); in its loop it
// grows memory from one site, grow() (64 KiB per round, held to the end), while a second
// thread churns short-lived blocks. It prints a checksum of everything it computed every
// 10 rounds and exits with status 7, so that a run with attach and one without can be
// compared byte for byte. Every ten rounds are a stage. Usage: attach_target TRUTH READY_FILE [ROUNDS]; READY_FILE is
// created once the loop runs. Truth: grow()'s line and block size.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <string>
#include <vector>

#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

constexpr size_t kGrowBytes = 64 * 1024;
constexpr int kBeforeBlocks = 200;
constexpr size_t kBeforeBytes = 4096;

int g_grow_line;
std::atomic<bool> g_stop{false};
std::atomic<unsigned long long> g_churn_sum{0};

void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0) {
  }
}

}  // namespace

E2E_FRAME char* before_attach(int i) {
  char* p = static_cast<char*>(malloc(kBeforeBytes));
  escape(p);
  memset(p, i & 0xff, kBeforeBytes);
  return p;
}

E2E_FRAME char* grow(int round) {
  g_grow_line = __LINE__; char* p = new char[kGrowBytes];
  escape(p);
  for (size_t i = 0; i < kGrowBytes; i += 64) p[i] = static_cast<char>(round + i);
  return p;
}

E2E_FRAME void* churn(void*) {
  unsigned long long sum = 0;
  for (unsigned i = 0; !g_stop.load(); ++i) {
    std::string s(100 + i % 900, static_cast<char>('a' + i % 26));
    void* q = calloc(1, 32 + i % 4000);
    escape(q);
    sum += s.size() + static_cast<unsigned char>(s[s.size() / 2]);
    free(q);
    if (i % 64 == 0) sleep_ms(1);
  }
  // What the thread computed depends on how long it ran: kept, not printed.
  g_churn_sum.store(sum);
  return nullptr;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: attach_target TRUTH READY_FILE [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 3 ? atoi(argv[3]) : 150;
  char* before[kBeforeBlocks];
  for (int i = 0; i < kBeforeBlocks; ++i) before[i] = before_attach(i);
  pthread_t thread;
  pthread_create(&thread, nullptr, churn, nullptr);

  std::vector<char*> held;
  unsigned long long checksum = 0;
  for (int round = 0; round < rounds; ++round) {
    if (round == 1) {
      const int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) close(fd);
    }
    if (round == rounds / 2) {
      for (int i = 0; i < kBeforeBlocks; ++i) {
        checksum += static_cast<unsigned char>(before[i][kBeforeBytes - 1]);
        free(before[i]);
      }
    }
    // Stage markers are no-ops until the tracer is attached, and again after.
    if (round % 10 == 0) memstage_stage_begin("ten rounds");
    char* p = grow(round);
    held.push_back(p);
    for (size_t i = 0; i < kGrowBytes; i += 4096) checksum = checksum * 31 + static_cast<unsigned char>(p[i]);
    if (round % 10 == 9) {
      printf("round %d held %zu checksum %llu\n", round + 1, held.size(), checksum);
      memstage_stage_end();
    }
    sleep_ms(20);
  }
  g_stop.store(true);
  pthread_join(thread, nullptr);
  for (char* p : held) delete[] p;
  printf("done, %zu blocks freed\n", held.size());

  Truth truth;
  truth.add("grow_line", g_grow_line);
  truth.add_u("grow_bytes", kGrowBytes);
  truth.write_to(argv[1]);
  return 7;
}
