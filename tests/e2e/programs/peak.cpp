// e2e.peak: a program that knows its own peak heap exactly.
//
// Every allocation it makes goes through the helpers below, which keep a counter of the
// bytes it requested and still holds (`g_live`) and its maximum (`g_peak`), with the
// same accounting the tracer documents: a realloc frees the old block and allocates the
// new one; new[] of a type with a destructor asks operator new[] for the array plus an
// 8-byte cookie (Itanium C++ ABI, alignment <= 8).
//
// libc and libstdc++ hold a few blocks of their own (libstdc++'s emergency exception
// pool, the stdout buffer). The program makes them all before its measured part (it
// prints once first) and calls nothing that allocates during it, so the live heap
// during the measured part is baseline + g_live, with a constant baseline. The program
// marks two empty stages, "baseline" before and "after" once it freed everything again:
// the peak of an empty stage is the live heap when it opened, so both equal the
// baseline (e2e.py checks they agree), and the run's peak must be baseline + g_peak.
//
// The highest point is held for 300 ms so that stats mode (which samples counters every
// 10 ms) sees it too.
#include <malloc.h>
#include <time.h>

#include <memstage/stage.h>

#include "e2e_common.h"

namespace {

long long g_live = 0, g_peak = 0, g_allocations = 0, g_frees = 0;

void note(long long delta) {
  g_live += delta;
  if (g_live > g_peak) g_peak = g_live;
}

struct WithDestructor {
  char bytes[24];
  ~WithDestructor() { escape(bytes); }
};
static_assert(sizeof(WithDestructor) == 24 && alignof(WithDestructor) <= 8);
constexpr size_t kArrayCookie = sizeof(size_t);

void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0) {
  }
}

}  // namespace

E2E_FRAME void* do_malloc(size_t n) {
  void* p = malloc(n);
  escape(p);
  note(static_cast<long long>(n));
  ++g_allocations;
  return p;
}

E2E_FRAME void do_free(void* p, size_t n) {
  free(p);
  barrier();
  note(-static_cast<long long>(n));
  ++g_frees;
}

E2E_FRAME void* do_realloc(void* p, size_t old_n, size_t n) {
  void* q = realloc(p, n);
  escape(q);
  note(static_cast<long long>(n) - static_cast<long long>(old_n));
  ++g_allocations;
  ++g_frees;
  return q;
}

E2E_FRAME void* do_calloc(size_t count, size_t size) {
  void* p = calloc(count, size);
  escape(p);
  note(static_cast<long long>(count * size));
  ++g_allocations;
  return p;
}

E2E_FRAME void* do_posix_memalign(size_t alignment, size_t n) {
  void* p = nullptr;
  if (posix_memalign(&p, alignment, n) != 0) abort();
  escape(p);
  note(static_cast<long long>(n));
  ++g_allocations;
  return p;
}

E2E_FRAME void* do_aligned_alloc(size_t alignment, size_t n) {
  void* p = aligned_alloc(alignment, n);
  escape(p);
  note(static_cast<long long>(n));
  ++g_allocations;
  return p;
}

E2E_FRAME void* do_memalign(size_t alignment, size_t n) {
  void* p = memalign(alignment, n);
  escape(p);
  note(static_cast<long long>(n));
  ++g_allocations;
  return p;
}

E2E_FRAME int* do_new_ints(size_t count) {
  int* p = new int[count];  // int has no destructor: no cookie
  escape(p);
  note(static_cast<long long>(count * sizeof(int)));
  ++g_allocations;
  return p;
}

E2E_FRAME void do_delete_ints(int* p, size_t count) {
  delete[] p;
  barrier();
  note(-static_cast<long long>(count * sizeof(int)));
  ++g_frees;
}

E2E_FRAME WithDestructor* do_new_objects(size_t count) {
  WithDestructor* p = new WithDestructor[count];
  escape(p);
  note(static_cast<long long>(count * sizeof(WithDestructor) + kArrayCookie));
  ++g_allocations;
  return p;
}

E2E_FRAME void do_delete_objects(WithDestructor* p, size_t count) {
  delete[] p;
  barrier();
  note(-static_cast<long long>(count * sizeof(WithDestructor) + kArrayCookie));
  ++g_frees;
}

// A block grown by realloc from 16 bytes by half each time, past glibc's mmap threshold.
E2E_FRAME void* grow_chain(size_t& size, size_t limit) {
  size = 16;
  void* p = do_malloc(size);
  while (size < limit) {
    const size_t next = size + size / 2 + 7;
    p = do_realloc(p, size, next);
    size = next;
  }
  return p;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  // Everything libc keeps for the whole run is made here: the stdout buffer.
  printf("peak: measuring\n");
  fflush(stdout);

  memstage_stage_begin("baseline");
  memstage_stage_end();
  {
    memstage::Stage measured{"measure"};

    // Part one: a realloc chain to 3 MB beside some blocks, then all freed but one.
    void* small = do_malloc(1000);
    void* zeros = do_calloc(1000, 333);
    size_t chain_size = 0;
    void* chain = grow_chain(chain_size, 3000000);
    int* ints = do_new_ints(12345);
    WithDestructor* objects = do_new_objects(1000);
    do_free(zeros, 1000 * 333);
    chain = do_realloc(chain, chain_size, 1000000);  // shrink
    chain_size = 1000000;
    do_delete_ints(ints, 12345);
    const long long peak_part_one = g_peak;

    // Part two: aligned blocks and a second chain reach a higher peak, held a while.
    void* aligned_a = do_posix_memalign(64, 100000);
    void* aligned_b = do_aligned_alloc(4096, 4096 * 50);
    void* aligned_c = do_memalign(256, 77777);
    size_t chain2_size = 0;
    void* chain2 = grow_chain(chain2_size, 6000000);
    WithDestructor* more_objects = do_new_objects(5000);
    void* big = do_malloc(1234567);
    const long long held_peak = g_live;
    sleep_ms(300);

    // Part three: everything back, in a mixed order; no new peak.
    do_free(big, 1234567);
    do_delete_objects(more_objects, 5000);
    chain2 = do_realloc(chain2, chain2_size, 10);
    do_free(chain2, 10);
    do_free(aligned_b, 4096 * 50);
    do_free(aligned_a, 100000);
    do_free(aligned_c, 77777);
    do_delete_objects(objects, 1000);
    do_free(chain, chain_size);
    do_free(small, 1000);

    static Truth truth;
    truth.add("peak_bytes", g_peak);
    truth.add("held_peak_bytes", held_peak);
    truth.add("peak_part_one_bytes", peak_part_one);
    truth.add("live_at_end_bytes", g_live);
    truth.add("allocations", g_allocations);
    truth.add("frees", g_frees);
    truth.add_str("source", "peak.cpp");
    truth.write_to(truth_file);
  }
  memstage_stage_begin("after");
  memstage_stage_end();
  return 0;
}
