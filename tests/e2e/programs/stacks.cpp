// e2e.stacks: blocks of distinctive sizes allocated in places that are hard to unwind
// from, each kept (a leak) so that the report shows its stack. e2e.py checks that the
// frames after malloc are exactly the chain written next to each size below.
//
//   123456  ["alloc_in_catch", "thrower_caller", "main"]       in a catch handler
//   123461  ["alloc_in_cleanup", "Guard::~Guard", "throw_with_cleanup",
//            "cleanup_caller", "main"]                          in a destructor run while
//                                                               an exception unwinds
//   123459  ["alloc_after_longjmp", "longjmp_target", "main"]  after longjmp back
//   123462  ["alloc_deep", "recurse" x 40, "main"]              deep recursion
//   123463  ["alloc_in_thread", "thread_main"]                 in a std::thread
//   123457  ["plugin_alloc", "call_plugin", "main"]            in a dlopen'ed module
//   123458  ["child_alloc", "fork_and_alloc", "main"]          in a forked child
//                                                               (its own trace file)
// Usage: stacks TRUTH PLUGIN_SO
#include <dlfcn.h>
#include <setjmp.h>
#include <sys/wait.h>

#include <stdexcept>
#include <thread>

#include "e2e_common.h"

namespace {
jmp_buf g_env;
volatile int g_after;
}  // namespace

// ---- throw / catch ----
E2E_FRAME void alloc_in_catch() {
  void* p = malloc(123456);
  escape(p);
}

E2E_FRAME void thrower() { throw std::runtime_error("e2e"); }

E2E_FRAME void thrower_caller() {
  try {
    thrower();
    g_after = 1;
  } catch (const std::exception&) {
    alloc_in_catch();
    g_after = 2;
  }
}

// ---- a destructor run by the unwinder ----
E2E_FRAME void alloc_in_cleanup() {
  void* p = malloc(123461);
  escape(p);
}

struct Guard {
  E2E_FRAME ~Guard() {
    alloc_in_cleanup();
    g_after = 3;
  }
};

E2E_FRAME void throw_with_cleanup() {
  Guard guard;
  if (g_after >= 0) throw 42;
  g_after = 4;
}

E2E_FRAME void cleanup_caller() {
  try {
    throw_with_cleanup();
    g_after = 5;
  } catch (int) {
    g_after = 6;
  }
}

// ---- longjmp ----
E2E_FRAME void jumper() { longjmp(g_env, 1); }

E2E_FRAME void alloc_after_longjmp() {
  void* p = malloc(123459);
  escape(p);
}

E2E_FRAME void longjmp_target() {
  if (setjmp(g_env) == 0) {
    jumper();
    g_after = 7;
  } else {
    alloc_after_longjmp();
    g_after = 8;
  }
}

// ---- deep recursion ----
E2E_FRAME void alloc_deep() {
  void* p = malloc(123462);
  escape(p);
}

E2E_FRAME void recurse(int depth) {
  if (depth == 0) {
    alloc_deep();
  } else {
    recurse(depth - 1);
  }
  g_after = depth;  // no tail call
}

// ---- a thread ----
E2E_FRAME void alloc_in_thread() {
  void* p = malloc(123463);
  escape(p);
}

E2E_FRAME void thread_main() {
  alloc_in_thread();
  g_after = 9;
}

// ---- dlopen ----
using PluginAlloc = void* (*)();

E2E_FRAME void* call_plugin(PluginAlloc fn) {
  void* p = fn();
  escape(p);
  return p;
}

// ---- fork ----
E2E_FRAME void child_alloc() {
  void* p = malloc(123458);
  escape(p);
}

E2E_FRAME pid_t fork_and_alloc() {
  const pid_t pid = fork();
  if (pid == 0) {
    child_alloc();
    exit(0);
  }
  return pid;
}

int main(int argc, char** argv) {
  const char* truth_file = truth_path(argc, argv);
  if (argc < 3) return 2;
  thrower_caller();
  cleanup_caller();
  longjmp_target();
  recurse(40);
  std::thread(thread_main).join();
  void* handle = dlopen(argv[2], RTLD_NOW);
  if (!handle) {
    fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
    return 3;
  }
  auto alloc = reinterpret_cast<PluginAlloc>(dlsym(handle, "plugin_alloc"));
  if (!alloc) return 4;
  call_plugin(alloc);
  const pid_t child = fork_and_alloc();
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  static Truth truth;
  truth.add("pid", getpid());
  truth.add("child_pid", child);
  truth.add("recursion_depth", 40);
  truth.write_to(truth_file);
  return 0;
}
