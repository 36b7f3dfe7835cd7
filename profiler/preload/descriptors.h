// The descriptors the tracer opens for itself: the trace file, /proc/self/statm and
// libunwind's memory-validation pipe. The program may close any number, or be handed one
// the tracer had (closefrom(3), then open: daemons and shells do), and the tracer may then
// be handed a number one of its own files had. So a number alone never says whose file it
// is: each user keeps the identity it adopted (number, device, inode) and checks it
// (fstat) before each use. A descriptor that is no longer the file adopted is never read,
// written or closed by the tracer; its user opens its own again. The tracer's own are kept
// at high numbers, away from those the program is given.
#pragma once

#include <cstdint>

namespace memstage::preload {

// A descriptor the tracer opened, and which file it is.
struct OwnedDescriptor {
  int fd = -1;
  uint64_t device = 0;
  uint64_t inode = 0;
};

// Takes `fd`, just opened by the tracer: moves it to a high number and records which file
// it is. fd -1 when `fd` was -1 or cannot be asked about (then it is closed).
OwnedDescriptor adopt_descriptor(int fd);
// True while `d.fd` is still the file adopted: false once the program closed it, whoever
// has the number now.
bool still_owned(const OwnedDescriptor& d);
// Closes `d.fd` if it is still the file adopted, and forgets it (fd -1) either way.
void release_descriptor(OwnedDescriptor& d);

// libunwind's validation pipe, which libunwind knows only by its numbers (and reads,
// writes and closes through the C library: interpose.cpp asks here).
// Adopts both ends of a pipe libunwind just made for the tracer; on failure both become
// -1, so nothing is ever written to a number that is not the tracer's.
void adopt_unwind_pipe(int fds[2]);
enum class PipeEnd {
  kNotOne,  // not a number of libunwind's pipe: its own business (an ELF file it reads)
  kOwned,   // one of its pipe's ends, both still the pipe adopted
  kLost,    // was one, but the program closed it or its partner (maybe took the number)
};
PipeEnd unwind_pipe_end(int fd);
// libunwind closes `fd`: closed if it is still a pipe end adopted, forgotten either way.
// False when it is not a number of libunwind's pipe.
bool release_unwind_pipe_end(int fd);

}  // namespace memstage::preload
