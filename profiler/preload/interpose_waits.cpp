// The waits and sleeps the tracer stands in front of: where a program with one thread,
// which has no writer thread, has what it recorded written and its memory sampled before
// it blocks, and the time it woke noted (tracer.h, before_wait). A wait that cannot block
// (a zero timeout, WNOHANG) is no wait. Each passes the call on unchanged.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "profiler/preload/real_functions.h"
#include "profiler/preload/tracer.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

using namespace memstage::preload;

namespace memstage::preload {
namespace {
// Zero (kNoWait) for a zero timeout, kUnknownWait for none.
uint64_t wait_of(const timespec* t) {
  return t ? static_cast<uint64_t>(t->tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t->tv_nsec) : kUnknownWait;
}
uint64_t wait_of_ms(int timeout_ms) {
  return timeout_ms < 0 ? kUnknownWait : static_cast<uint64_t>(timeout_ms) * 1'000'000ull;
}
}  // namespace
}  // namespace memstage::preload

// The real function, looked up first if need be; nullptr when there is none.
#define MEMSTAGE_REAL_OR_NOTHING(name) (resolve() ? g_real.name : nullptr)

// The wait `wait_ns` (kNoWait: the call cannot block), then the call itself.
#define MEMSTAGE_WAIT(wait_ns, name, ...)                \
  const uint64_t wait_started_ns = before_wait(wait_ns); \
  auto* f = MEMSTAGE_REAL_OR_NOTHING(name);              \
  if (!f) {                                              \
    errno = ENOSYS;                                      \
    return -1;                                           \
  }                                                      \
  const auto result = f(__VA_ARGS__);                    \
  after_wait(wait_started_ns);                           \
  return result

namespace memstage::preload {
namespace {
uint64_t clock_now_ns(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return wait_of(&now);
}
timespec timespec_of(uint64_t ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000ull), static_cast<long>(ns % 1'000'000'000ull)};
}
// A sliced sleep's end as nanosleep and usleep say it: 0, or -1 with errno set.
int sleep_result(int error) {
  if (error == 0) return 0;
  errno = error;
  return -1;
}
// Whether a sleep of `request` is taken in slices (tracer.h, sleep_sliced): a valid
// request on a clock that measures time passing, at least a sampling interval long.
bool slice_sleep(clockid_t clock, const timespec* request) {
  return request && request->tv_sec >= 0 && request->tv_nsec >= 0 && request->tv_nsec < 1'000'000'000 &&
         (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME || clock == CLOCK_BOOTTIME) &&
         sleeps_sliced() &&
         wait_of(request) >= g_tracer.options.sample_interval_ms * 1'000'000ull;
}
// A relative sleep, sliced: 0, or the error number (EINTR: `remaining` says what is left).
int sleep_relative_sliced(clockid_t clock, const timespec* request, timespec* remaining) {
  const uint64_t deadline_ns = clock_now_ns(clock) + wait_of(request);
  const uint64_t wait_started_ns = before_wait(wait_of(request));
  const int error = sleep_sliced(clock, deadline_ns);
  after_wait(wait_started_ns);
  if (error == EINTR && remaining) {
    const uint64_t now_ns = clock_now_ns(clock);
    const uint64_t left_ns = deadline_ns > now_ns ? deadline_ns - now_ns : 0;
    *remaining = timespec_of(left_ns);
  }
  return error;
}
}  // namespace
}  // namespace memstage::preload

// Sleeps of a sampling interval or more, while there is no writer thread, are taken in
// slices with the writer's round between them (tracer.h, sleep_sliced); they end when they
// would have, and a signal's handler interrupts them as it would have.
MEMSTAGE_EXPORT int nanosleep(const timespec* request, timespec* remaining) {
  if (slice_sleep(CLOCK_MONOTONIC, request)) {
    return sleep_result(sleep_relative_sliced(CLOCK_MONOTONIC, request, remaining));
  }
  MEMSTAGE_WAIT(wait_of(request), nanosleep, request, remaining);
}

MEMSTAGE_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* request, timespec* remaining) {
  uint64_t wait_ns = wait_of(request);
  if (request && (flags & TIMER_ABSTIME)) {
    const uint64_t now_ns = clock_now_ns(clock);
    wait_ns = wait_ns > now_ns ? wait_ns - now_ns : 0;
  }
  const timespec wait = timespec_of(wait_ns);
  if (slice_sleep(clock, request ? &wait : nullptr)) {
    if (!(flags & TIMER_ABSTIME)) return sleep_relative_sliced(clock, request, remaining);
    const uint64_t wait_started_ns = before_wait(wait_ns);
    const int error = sleep_sliced(clock, wait_of(request));
    after_wait(wait_started_ns);
    return error;
  }
  const uint64_t wait_started_ns = before_wait(wait_ns);
  auto* f = MEMSTAGE_REAL_OR_NOTHING(clock_nanosleep);
  const int result = f ? f(clock, flags, request, remaining) : ENOSYS;  // returns the error
  after_wait(wait_started_ns);
  return result;
}

MEMSTAGE_EXPORT unsigned sleep(unsigned seconds) {
  const timespec request{static_cast<time_t>(seconds), 0};
  if (slice_sleep(CLOCK_MONOTONIC, &request)) {
    timespec remaining{};
    if (sleep_relative_sliced(CLOCK_MONOTONIC, &request, &remaining) == 0) return 0;
    // As the C library's: what is left, in whole seconds rounded.
    return static_cast<unsigned>(remaining.tv_sec) + (remaining.tv_nsec >= 500'000'000 ? 1 : 0);
  }
  const uint64_t wait_started_ns = before_wait(seconds * 1'000'000'000ull);
  auto* f = MEMSTAGE_REAL_OR_NOTHING(sleep);
  const unsigned left = f ? f(seconds) : seconds;
  after_wait(wait_started_ns);
  return left;
}

MEMSTAGE_EXPORT int usleep(useconds_t microseconds) {
  const timespec request = timespec_of(microseconds * 1000ull);
  if (slice_sleep(CLOCK_MONOTONIC, &request)) {
    return sleep_result(sleep_relative_sliced(CLOCK_MONOTONIC, &request, nullptr));
  }
  MEMSTAGE_WAIT(microseconds * 1000ull, usleep, microseconds);
}

MEMSTAGE_EXPORT int poll(pollfd* fds, nfds_t count, int timeout_ms) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), poll, fds, count, timeout_ms);
}

MEMSTAGE_EXPORT int ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of(timeout), ppoll, fds, count, timeout, mask);
}

MEMSTAGE_EXPORT int select(int count, fd_set* read, fd_set* write, fd_set* except, timeval* timeout) {
  const uint64_t wait_ns = timeout ? static_cast<uint64_t>(timeout->tv_sec) * 1'000'000'000ull +
                                         static_cast<uint64_t>(timeout->tv_usec) * 1000ull
                                   : kUnknownWait;
  MEMSTAGE_WAIT(wait_ns, select, count, read, write, except, timeout);
}

MEMSTAGE_EXPORT int pselect(int count, fd_set* read, fd_set* write, fd_set* except, const timespec* timeout,
                            const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of(timeout), pselect, count, read, write, except, timeout, mask);
}

MEMSTAGE_EXPORT int epoll_wait(int epoll, epoll_event* events, int count, int timeout_ms) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), epoll_wait, epoll, events, count, timeout_ms);
}

MEMSTAGE_EXPORT int epoll_pwait(int epoll, epoll_event* events, int count, int timeout_ms, const sigset_t* mask) {
  MEMSTAGE_WAIT(wait_of_ms(timeout_ms), epoll_pwait, epoll, events, count, timeout_ms, mask);
}

MEMSTAGE_EXPORT pid_t wait(int* status) {
  MEMSTAGE_WAIT(kUnknownWait, wait, status);
}

MEMSTAGE_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, waitpid, pid, status, options);
}

MEMSTAGE_EXPORT pid_t wait4(pid_t pid, int* status, int options, rusage* usage) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, wait4, pid, status, options, usage);
}

MEMSTAGE_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  MEMSTAGE_WAIT(options & WNOHANG ? kNoWait : kUnknownWait, waitid, type, id, info, options);
}

MEMSTAGE_EXPORT int pause() {
  MEMSTAGE_WAIT(kUnknownWait, pause);
}

MEMSTAGE_EXPORT int sigsuspend(const sigset_t* mask) {
  MEMSTAGE_WAIT(kUnknownWait, sigsuspend, mask);
}

// Reads from sockets may block as long as the peer likes (Chromium's zygote waits for its
// commands in recvmsg).
MEMSTAGE_EXPORT ssize_t recv(int socket, void* buffer, size_t bytes, int flags) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recv, socket, buffer, bytes, flags);
}

MEMSTAGE_EXPORT ssize_t recvfrom(int socket, void* buffer, size_t bytes, int flags, sockaddr* from,
                                 socklen_t* from_length) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recvfrom, socket, buffer, bytes, flags, from, from_length);
}

MEMSTAGE_EXPORT ssize_t recvmsg(int socket, msghdr* message, int flags) {
  MEMSTAGE_WAIT(flags & MSG_DONTWAIT ? kNoWait : kUnknownWait, recvmsg, socket, message, flags);
}

MEMSTAGE_EXPORT int accept(int socket, sockaddr* address, socklen_t* address_length) {
  MEMSTAGE_WAIT(kUnknownWait, accept, socket, address, address_length);
}

MEMSTAGE_EXPORT int accept4(int socket, sockaddr* address, socklen_t* address_length, int flags) {
  MEMSTAGE_WAIT(kUnknownWait, accept4, socket, address, address_length, flags);
}

#undef MEMSTAGE_WAIT
#undef MEMSTAGE_REAL_OR_NOTHING
