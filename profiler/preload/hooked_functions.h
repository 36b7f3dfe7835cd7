// The one list of the functions the tracer stands in front of (an X-macro, as memray's
// hooks.h): real_functions.h makes from it the pointers it forwards to and their lookup,
// got_hooks.cpp the names whose relocation slots it points at the tracer when attached.
//
// MEMSTAGE_HOOKED_FUNCTIONS(FORWARDED, OWN) calls, for each function,
//   FORWARDED(field, "symbol", attach, return type, (parameter types)): the tracer's
//     definition forwards to the real one, g_real.field (real_functions.h);
//   OWN("symbol", attach): the tracer's definition forwards through another of its own
//     (reallocarray through realloc, execl through execve) or looks up its own next one
//     (operator new and delete, interpose_new.cpp).
// `attach` (AttachHook) says whether `memstage attach` points the program's slots at it.
// Not listed: the CUDA functions and dlsym (interpose_cuda.cpp: they look up what they
// forward to in a way that only works preloaded), the signal functions (sigaction,
// signal and its kin: preloaded only, as before attach existed) and
// memstage_python_attach and memstage_tracer_flush (called by name, through ctypes).
#pragma once

#include <cstdint>

namespace memstage::preload {

enum class AttachHook : uint8_t {
  kNo,    // preloaded only: a wait or a thread's creation matters only without a writer
          // thread, and attaching starts one at once (got_hooks.cpp)
  kYes,   // its slots point at the tracer while attached, put back at detach
  kKept,  // the stage API: set and never put back (got_hooks.cpp says why)
};

}  // namespace memstage::preload

// clang-format off
#define MEMSTAGE_HOOKED_FUNCTIONS(FORWARDED, OWN)                                                       \
  /* the malloc family */                                                                               \
  FORWARDED(malloc, "malloc", AttachHook::kYes, void*, (size_t))                                        \
  FORWARDED(free, "free", AttachHook::kYes, void, (void*))                                              \
  FORWARDED(calloc, "calloc", AttachHook::kYes, void*, (size_t, size_t))                                \
  FORWARDED(realloc, "realloc", AttachHook::kYes, void*, (void*, size_t))                               \
  OWN("reallocarray", AttachHook::kYes)                                                                 \
  FORWARDED(posix_memalign, "posix_memalign", AttachHook::kYes, int, (void**, size_t, size_t))          \
  FORWARDED(aligned_alloc, "aligned_alloc", AttachHook::kYes, void*, (size_t, size_t))                  \
  FORWARDED(memalign, "memalign", AttachHook::kYes, void*, (size_t, size_t))                            \
  FORWARDED(valloc, "valloc", AttachHook::kYes, void*, (size_t))                                        \
  FORWARDED(pvalloc, "pvalloc", AttachHook::kYes, void*, (size_t))                                      \
  FORWARDED(malloc_usable_size, "malloc_usable_size", AttachHook::kYes, size_t, (void*))                \
  /* mappings */                                                                                        \
  FORWARDED(mmap, "mmap", AttachHook::kYes, void*, (void*, size_t, int, int, int, off_t))               \
  OWN("mmap64", AttachHook::kYes)                                                                       \
  FORWARDED(munmap, "munmap", AttachHook::kYes, int, (void*, size_t))                                   \
  FORWARDED(mprotect, "mprotect", AttachHook::kYes, int, (void*, size_t, int))                          \
  FORWARDED(mremap, "mremap", AttachHook::kYes, void*, (void*, size_t, size_t, int, ...))               \
  /* modules, exec, exit */                                                                             \
  FORWARDED(dlopen, "dlopen", AttachHook::kYes, void*, (const char*, int))                              \
  FORWARDED(dlclose, "dlclose", AttachHook::kYes, int, (void*))                                         \
  FORWARDED(execve, "execve", AttachHook::kYes, int, (const char*, char* const[], char* const[]))       \
  OWN("execv", AttachHook::kYes)                                                                        \
  FORWARDED(execvp, "execvp", AttachHook::kYes, int, (const char*, char* const[]))                      \
  FORWARDED(execvpe, "execvpe", AttachHook::kYes, int, (const char*, char* const[], char* const[]))     \
  FORWARDED(fexecve, "fexecve", AttachHook::kYes, int, (int, char* const[], char* const[]))             \
  OWN("execl", AttachHook::kYes)                                                                        \
  OWN("execlp", AttachHook::kYes)                                                                       \
  OWN("execle", AttachHook::kYes)                                                                       \
  FORWARDED(exit_now, "_exit", AttachHook::kYes, void, (int))                                           \
  FORWARDED(exit_now_c99, "_Exit", AttachHook::kYes, void, (int))                                       \
  /* libunwind's validation pipe (descriptors.h): libunwind is a library of its own, whose  */         \
  /* slots are pointed at the tracer when attached, so all four are hooked then, write too */          \
  FORWARDED(pipe2, "pipe2", AttachHook::kYes, int, (int[2], int))                                       \
  FORWARDED(read, "read", AttachHook::kYes, ssize_t, (int, void*, size_t))                              \
  FORWARDED(write, "write", AttachHook::kYes, ssize_t, (int, const void*, size_t))                      \
  FORWARDED(close, "close", AttachHook::kYes, int, (int))                                               \
  /* the writer thread made before the program's second (writer.h) */                                   \
  FORWARDED(pthread_create, "pthread_create", AttachHook::kNo, int,                                     \
            (pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))                               \
  /* waits and sleeps (interpose_waits.cpp) */                                                          \
  FORWARDED(nanosleep, "nanosleep", AttachHook::kNo, int, (const timespec*, timespec*))                 \
  FORWARDED(clock_nanosleep, "clock_nanosleep", AttachHook::kNo, int,                                   \
            (clockid_t, int, const timespec*, timespec*))                                               \
  FORWARDED(sleep, "sleep", AttachHook::kNo, unsigned, (unsigned))                                      \
  FORWARDED(usleep, "usleep", AttachHook::kNo, int, (useconds_t))                                       \
  FORWARDED(poll, "poll", AttachHook::kNo, int, (pollfd*, nfds_t, int))                                 \
  FORWARDED(ppoll, "ppoll", AttachHook::kNo, int, (pollfd*, nfds_t, const timespec*, const sigset_t*))  \
  FORWARDED(select, "select", AttachHook::kNo, int, (int, fd_set*, fd_set*, fd_set*, timeval*))         \
  FORWARDED(pselect, "pselect", AttachHook::kNo, int,                                                   \
            (int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*))                         \
  FORWARDED(epoll_wait, "epoll_wait", AttachHook::kNo, int, (int, epoll_event*, int, int))              \
  FORWARDED(epoll_pwait, "epoll_pwait", AttachHook::kNo, int, (int, epoll_event*, int, int, const sigset_t*)) \
  FORWARDED(wait, "wait", AttachHook::kNo, pid_t, (int*))                                               \
  FORWARDED(waitpid, "waitpid", AttachHook::kNo, pid_t, (pid_t, int*, int))                             \
  FORWARDED(wait4, "wait4", AttachHook::kNo, pid_t, (pid_t, int*, int, rusage*))                        \
  FORWARDED(waitid, "waitid", AttachHook::kNo, int, (idtype_t, id_t, siginfo_t*, int))                  \
  FORWARDED(pause, "pause", AttachHook::kNo, int, ())                                                   \
  FORWARDED(sigsuspend, "sigsuspend", AttachHook::kNo, int, (const sigset_t*))                          \
  FORWARDED(recv, "recv", AttachHook::kNo, ssize_t, (int, void*, size_t, int))                          \
  FORWARDED(recvfrom, "recvfrom", AttachHook::kNo, ssize_t, (int, void*, size_t, int, sockaddr*, socklen_t*)) \
  FORWARDED(recvmsg, "recvmsg", AttachHook::kNo, ssize_t, (int, msghdr*, int))                          \
  FORWARDED(accept, "accept", AttachHook::kNo, int, (int, sockaddr*, socklen_t*))                       \
  FORWARDED(accept4, "accept4", AttachHook::kNo, int, (int, sockaddr*, socklen_t*, int))                \
  /* operator new and delete (interpose_new.cpp) */                                                     \
  OWN("_Znwm", AttachHook::kYes)                                                                        \
  OWN("_Znam", AttachHook::kYes)                                                                        \
  OWN("_ZnwmRKSt9nothrow_t", AttachHook::kYes)                                                          \
  OWN("_ZnamRKSt9nothrow_t", AttachHook::kYes)                                                          \
  OWN("_ZnwmSt11align_val_t", AttachHook::kYes)                                                         \
  OWN("_ZnamSt11align_val_t", AttachHook::kYes)                                                         \
  OWN("_ZnwmSt11align_val_tRKSt9nothrow_t", AttachHook::kYes)                                           \
  OWN("_ZnamSt11align_val_tRKSt9nothrow_t", AttachHook::kYes)                                           \
  OWN("_ZdlPv", AttachHook::kYes)                                                                       \
  OWN("_ZdaPv", AttachHook::kYes)                                                                       \
  OWN("_ZdlPvm", AttachHook::kYes)                                                                      \
  OWN("_ZdaPvm", AttachHook::kYes)                                                                      \
  OWN("_ZdlPvSt11align_val_t", AttachHook::kYes)                                                        \
  OWN("_ZdaPvSt11align_val_t", AttachHook::kYes)                                                        \
  OWN("_ZdlPvmSt11align_val_t", AttachHook::kYes)                                                       \
  OWN("_ZdaPvmSt11align_val_t", AttachHook::kYes)                                                       \
  OWN("_ZdlPvRKSt9nothrow_t", AttachHook::kYes)                                                         \
  OWN("_ZdaPvRKSt9nothrow_t", AttachHook::kYes)                                                         \
  OWN("_ZdlPvSt11align_val_tRKSt9nothrow_t", AttachHook::kYes)                                          \
  OWN("_ZdaPvSt11align_val_tRKSt9nothrow_t", AttachHook::kYes)                                          \
  /* the stage API (interpose.cpp) */                                                                   \
  OWN("memstage_tracer_stage_begin", AttachHook::kKept)                                                 \
  OWN("memstage_tracer_stage_end", AttachHook::kKept)                                                   \
  OWN("memstage_tracer_device_cache", AttachHook::kKept)
// clang-format on
