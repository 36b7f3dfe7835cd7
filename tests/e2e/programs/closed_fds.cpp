// e2e.closed_fds: a program that closes every descriptor from 3 up (closefrom, as daemons
// and shells do), then opens its output file (descriptor 3) and a pipe of its own, puts
// 4096 bytes in the pipe and allocates: 20000 blocks from stacks of many depths, each
// line written to out.txt, in the stage "work". Then it reads its 4096 bytes back. The
// tracer must not close, read or write any of these descriptors. Truth: the blocks and
// bytes it allocated in "work", and the leaked ones (every 100th block, 1000 bytes).
// Usage: closed_fds TRUTH_FILE
#include <memstage/stage.h>

#include "e2e_common.h"

constexpr int kBlocks = 20000;

E2E_FRAME void* allocate_at_depth(int depth, size_t bytes) {
  if (depth > 0) {
    void* p = allocate_at_depth(depth - 1, bytes);
    barrier();
    return p;
  }
  void* p = malloc(bytes);
  escape(p);
  return p;
}

int main(int argc, char** argv) {
  static char truth_file[4096];
  snprintf(truth_file, sizeof(truth_file), "%s", truth_path(argc, argv));
  closefrom(3);
  const int out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int pipe_fds[2];
  if (out != 3 || pipe(pipe_fds) != 0) return 2;
  char sent[4096], got[4096];
  for (size_t i = 0; i < sizeof(sent); ++i) sent[i] = static_cast<char>('a' + i % 26);
  if (write(pipe_fds[1], sent, sizeof(sent)) != static_cast<ssize_t>(sizeof(sent))) return 3;

  long long bytes = 0, leaked_bytes = 0, leaked_blocks = 0;
  memstage_stage_begin("work");
  for (int i = 0; i < kBlocks; ++i) {
    const size_t size = 1000 + i % 977;
    void* p = allocate_at_depth(i % 97, size);
    bytes += size;
    char line[64];
    const int n = snprintf(line, sizeof(line), "block %d: %zu bytes\n", i, size);
    if (write(out, line, n) != n) return 4;
    if (i % 100 == 0) {
      leaked_bytes += size;
      ++leaked_blocks;
    } else {
      free(p);
    }
  }
  memstage_stage_end();
  if (read(pipe_fds[0], got, sizeof(got)) != static_cast<ssize_t>(sizeof(got)) || memcmp(sent, got, sizeof(got))) {
    return 5;
  }
  if (close(out) != 0 || close(pipe_fds[0]) != 0 || close(pipe_fds[1]) != 0) return 6;
  printf("wrote %d lines, read back %zu bytes\n", kBlocks, sizeof(got));
  static Truth truth;
  truth.add("allocations", kBlocks);
  truth.add("bytes_allocated", bytes);
  truth.add("leaked_bytes", leaked_bytes);
  truth.add("leaked_blocks", leaked_blocks);
  truth.write_to(truth_file);
  return 0;
}
