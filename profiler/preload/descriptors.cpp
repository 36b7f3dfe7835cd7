#include "profiler/preload/descriptors.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace memstage::preload {
namespace {

// Below the usual 1024 soft limit: a fd table that large costs the kernel nothing much,
// and programs rarely hold this many files.
constexpr int kHighestBase = 1024;
constexpr int kReservedBelowLimit = 64;

bool identity(int fd, uint64_t& device, uint64_t& inode) {
  struct stat st;
  if (fd < 0 || syscall(SYS_fstat, fd, &st) != 0) return false;
  device = st.st_dev;
  inode = st.st_ino;
  return true;
}

int high_base() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 3;
  const rlim_t top = limit.rlim_cur < static_cast<rlim_t>(kHighestBase) ? limit.rlim_cur : kHighestBase;
  return top > 2 * kReservedBelowLimit ? static_cast<int>(top - kReservedBelowLimit) : 3;
}

int move_high(int fd) {
  if (fd < 0) return -1;
  const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, high_base()));
  if (high < 0) return fd;  // no high number free: keep the one it has
  syscall(SYS_close, fd);
  return high;
}

// libunwind's pipe ends: few (one pipe, and a new one each time the program closed it).
// A number may be listed twice for a moment (an end the program closed, not yet closed by
// libunwind, and a new end on the same number): an entry counts only while its file is
// the one adopted. Claimed by compare-and-swap, so no lock (none that a fork could leave
// held).
constexpr int kMaxPipeEnds = 16;
constexpr int kClaiming = -2;
struct PipeEntry {
  std::atomic<int> fd{-1};  // -1 free, kClaiming while being filled in
  OwnedDescriptor self;
  OwnedDescriptor partner;
};
PipeEntry g_pipe_ends[kMaxPipeEnds];

void remember_pipe_end(const OwnedDescriptor& self, const OwnedDescriptor& partner) {
  for (PipeEntry& e : g_pipe_ends) {
    int expected = -1;
    if (!e.fd.compare_exchange_strong(expected, kClaiming, std::memory_order_acquire)) continue;
    e.self = self;
    e.partner = partner;
    e.fd.store(self.fd, std::memory_order_release);  // visible once filled in
    return;
  }
  // No room: left unlisted, libunwind's calls on it pass through as on any number.
}

}  // namespace

OwnedDescriptor adopt_descriptor(int fd) {
  OwnedDescriptor d;
  fd = move_high(fd);
  if (fd < 0) return d;
  if (!identity(fd, d.device, d.inode)) {
    syscall(SYS_close, fd);
    return d;
  }
  d.fd = fd;
  return d;
}

bool still_owned(const OwnedDescriptor& d) {
  uint64_t device, inode;
  return identity(d.fd, device, inode) && device == d.device && inode == d.inode;
}

void release_descriptor(OwnedDescriptor& d) {
  if (still_owned(d)) syscall(SYS_close, d.fd);
  d = OwnedDescriptor{};
}

void adopt_unwind_pipe(int fds[2]) {
  OwnedDescriptor ends[2] = {adopt_descriptor(fds[0]), adopt_descriptor(fds[1])};
  if (ends[0].fd < 0 || ends[1].fd < 0) {
    release_descriptor(ends[0]);
    release_descriptor(ends[1]);
    fds[0] = fds[1] = -1;
    return;
  }
  remember_pipe_end(ends[0], ends[1]);
  remember_pipe_end(ends[1], ends[0]);
  fds[0] = ends[0].fd;
  fds[1] = ends[1].fd;
}

PipeEnd unwind_pipe_end(int fd) {
  if (fd < 0) return PipeEnd::kNotOne;
  PipeEnd found = PipeEnd::kNotOne;
  for (const PipeEntry& e : g_pipe_ends) {
    if (e.fd.load(std::memory_order_acquire) != fd) continue;
    if (still_owned(e.self) && still_owned(e.partner)) return PipeEnd::kOwned;
    found = PipeEnd::kLost;
  }
  return found;
}

bool release_unwind_pipe_end(int fd) {
  if (fd < 0) return false;
  bool found = false;
  for (PipeEntry& e : g_pipe_ends) {
    if (e.fd.load(std::memory_order_acquire) != fd) continue;
    found = true;
    release_descriptor(e.self);  // closed only while still the pipe end: at most once
    e.fd.store(-1, std::memory_order_release);
  }
  return found;
}

}  // namespace memstage::preload
