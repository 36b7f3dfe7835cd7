// The descriptors the tracer opens for itself: the trace file, /proc/self/statm and
// libunwind's memory-validation pipe. The program may close any number, or be handed one
// the tracer had (closefrom(3), then open: daemons and shells do). So the tracer keeps its
// own at high numbers, away from those the program is given, remembers which file each
// is (device and inode), and checks before using one that it still is: it never reads,
// writes or closes a descriptor that has become the program's, and opens its own again.
#pragma once

namespace memstage::preload {

// Takes `fd`, just opened by the tracer: moves it to a high number and remembers it.
// Returns the new number, or -1.
int adopt_descriptor(int fd);
// Adopts both ends of a pipe the tracer (libunwind, for it) just made; on failure both
// become -1, so nothing is ever written to a number that is not the tracer's.
void adopt_pipe(int fds[2]);
// True when `fd` was adopted and is no longer the same file (or a pipe end's partner is
// not): the program closed it, maybe reused the number.
bool descriptor_lost(int fd);
// For a number the tracer adopted: closes it if it is still the tracer's file, forgets
// it either way, and returns true. False for any other number (not the tracer's to judge).
bool release_descriptor(int fd);

}  // namespace memstage::preload
