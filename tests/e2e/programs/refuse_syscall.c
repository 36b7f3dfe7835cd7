// Runs a program with one system call refused (EPERM), as a container's seccomp filter may:
//   membarrier  the tracer in it must then number allocations as every other event
//               (event_order.h);
//   ptrace      gdb, started by memstage attach, cannot attach: memstage says why in one line.
// The filter is inherited by everything the program starts. Checks first that it holds,
// exit 3 if not.
// Usage: refuse_syscall membarrier|ptrace PROGRAM [ARGS...]
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char** argv) {
  const int membarrier = argc >= 3 && strcmp(argv[1], "membarrier") == 0;
  const int ptrace_call = argc >= 3 && strcmp(argv[1], "ptrace") == 0;
  if (!membarrier && !ptrace_call) {
    fprintf(stderr, "usage: refuse_syscall membarrier|ptrace PROGRAM [ARGS...]\n");
    return 2;
  }
  const unsigned refused = membarrier ? __NR_membarrier : __NR_ptrace;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, refused, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {sizeof(filter) / sizeof(filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    perror("refuse_syscall: seccomp");
    return 3;
  }
  // Allowed, either call fails otherwise: membarrier's query succeeds, and a peek at a
  // process this one does not trace is ESRCH.
  const long result = membarrier ? syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0)
                                 : syscall(SYS_ptrace, PTRACE_PEEKDATA, getppid(), 0, 0);
  if (result != -1 || errno != EPERM) {
    fprintf(stderr, "refuse_syscall: %s is not refused\n", argv[1]);
    return 3;
  }
  execv(argv[2], argv + 2);
  perror("refuse_syscall: exec");
  return 127;
}
