// Shared helpers of the end-to-end test programs (tests/e2e/programs).
//
// The programs state their own truth (sizes, counts, peaks, source lines, pids) in a
// small JSON file that e2e.py compares with memstage's report. The helpers here never
// allocate: the truth must not change the heap it describes.
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// A function that stays a frame of its own: not inlined, cloned or merged by GCC.
#if defined(__clang__)
#define E2E_FRAME __attribute__((noinline))
#else
#define E2E_FRAME __attribute__((noipa))
#endif

// Makes `p` observable so that GCC neither removes a malloc/free pair nor turns
// `return malloc(n)` into a tail call (the caller's frame would vanish from the stack).
inline void* volatile g_e2e_sink;
inline void escape(void* p) {
  g_e2e_sink = p;
  asm volatile("" : : "r"(p) : "memory");
}
// Code after a call that the compiler must keep there (no tail call, no reordering).
inline void barrier() { asm volatile("" : : : "memory"); }

// Collects "key": value pairs in a static buffer, then writes them as one JSON object.
class Truth {
 public:
  void add(const char* key, long long value) { append("\"%s\": %lld", key, value); }
  void add_u(const char* key, unsigned long long value) { append("\"%s\": %llu", key, value); }
  void add_str(const char* key, const char* value) { append("\"%s\": \"%s\"", key, value); }
  // `list` is already JSON (an array or object).
  void add_raw(const char* key, const char* json) { append("\"%s\": %s", key, json); }

  // Writes the file with open/write only (stdio would allocate a buffer).
  void write_to(const char* path) const {
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      static const char msg[] = "e2e program: cannot write the truth file\n";
      (void)!::write(2, msg, sizeof(msg) - 1);
      _exit(90);
    }
    (void)!::write(fd, "{", 1);
    (void)!::write(fd, buf_, len_);
    (void)!::write(fd, "}\n", 2);
    close(fd);
  }

 private:
  void append(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (len_ > 0) len_ += snprintf(buf_ + len_, sizeof(buf_) - len_, ", ");
    va_list args;
    va_start(args, fmt);
    len_ += vsnprintf(buf_ + len_, sizeof(buf_) - len_, fmt, args);
    va_end(args);
    if (len_ >= sizeof(buf_)) abort();
  }
  char buf_[1 << 16];
  size_t len_ = 0;
};

// A second thread that makes and frees `pairs` small blocks and is joined: from then on the
// tracer runs its writer and compressor threads (a program with one thread has neither),
// and its chunks are written by the compressor. The blocks it frees leave the truth as it
// was.
inline void churn_in_a_second_thread(long pairs) {
  pthread_t thread;
  if (pthread_create(
          &thread, nullptr,
          [](void* n) -> void* {
            for (long i = 0; i < reinterpret_cast<long>(n); ++i) {
              void* p = malloc(16 + i % 512);
              escape(p);
              free(p);
            }
            return nullptr;
          },
          reinterpret_cast<void*>(pairs)) != 0) {
    static const char msg[] = "e2e program: cannot make a thread\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    _exit(92);
  }
  pthread_join(thread, nullptr);
}

// The truth file's path: argv[1] of every program.
inline const char* truth_path(int argc, char** argv) {
  if (argc < 2) {
    static const char msg[] = "usage: PROGRAM TRUTH_FILE [ARGS...]\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    _exit(91);
  }
  return argv[1];
}
