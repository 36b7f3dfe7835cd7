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

// Few: the trace file, statm, a pipe, and their replacements while the old ones are let go.
constexpr int kMaxOwned = 32;
// Below the usual 1024 soft limit: a fd table that large costs the kernel nothing much,
// and programs rarely hold this many files.
constexpr int kHighestBase = 1024;
constexpr int kReservedBelowLimit = 64;
constexpr int kClaiming = -2;

struct Owned {
  // -1 free, kClaiming while being filled in: claimed by compare-and-swap, so no lock
  // (none that a fork could leave held).
  std::atomic<int> fd{-1};
  int partner = -1;
  uint64_t device = 0;
  uint64_t inode = 0;
};
Owned g_owned[kMaxOwned];

bool identity(int fd, uint64_t& device, uint64_t& inode) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return false;
  device = st.st_dev;
  inode = st.st_ino;
  return true;
}

Owned* find(int fd) {
  if (fd < 0) return nullptr;
  for (Owned& o : g_owned) {
    if (o.fd.load(std::memory_order_acquire) == fd) return &o;
  }
  return nullptr;
}

bool same_file(const Owned& o) {
  uint64_t device, inode;
  return identity(o.fd.load(std::memory_order_relaxed), device, inode) && device == o.device && inode == o.inode;
}

int high_base() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 3;
  const rlim_t top = limit.rlim_cur < static_cast<rlim_t>(kHighestBase) ? limit.rlim_cur : kHighestBase;
  return top > 2 * kReservedBelowLimit ? static_cast<int>(top - kReservedBelowLimit) : 3;
}

int remember(int fd, int partner) {
  uint64_t device, inode;
  if (!identity(fd, device, inode)) return -1;
  for (Owned& o : g_owned) {
    int expected = -1;
    if (!o.fd.compare_exchange_strong(expected, kClaiming, std::memory_order_acquire)) continue;
    o.partner = partner;
    o.device = device;
    o.inode = inode;
    o.fd.store(fd, std::memory_order_release);  // visible once filled in
    return fd;
  }
  return fd;  // no room: still usable, unchecked
}

int move_high(int fd) {
  if (fd < 0) return -1;
  const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, high_base()));
  if (high < 0) return fd;  // no high number free: keep the one it has
  syscall(SYS_close, fd);
  return high;
}

}  // namespace

int adopt_descriptor(int fd) {
  fd = move_high(fd);
  return fd < 0 ? -1 : remember(fd, -1);
}

void adopt_pipe(int fds[2]) {
  fds[0] = move_high(fds[0]);
  fds[1] = move_high(fds[1]);
  if (fds[0] < 0 || fds[1] < 0) {
    if (fds[0] >= 0) syscall(SYS_close, fds[0]);
    if (fds[1] >= 0) syscall(SYS_close, fds[1]);
    fds[0] = fds[1] = -1;
    return;
  }
  remember(fds[0], fds[1]);
  remember(fds[1], fds[0]);
}

bool descriptor_lost(int fd) {
  const Owned* o = find(fd);
  if (!o) return false;
  if (!same_file(*o)) return true;
  const Owned* partner = find(o->partner);
  return o->partner >= 0 && (!partner || !same_file(*partner));
}

bool release_descriptor(int fd) {
  Owned* o = find(fd);
  if (!o) return false;
  if (same_file(*o)) syscall(SYS_close, fd);
  o->fd.store(-1, std::memory_order_release);
  return true;
}

}  // namespace memstage::preload
