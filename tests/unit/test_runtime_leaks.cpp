// Units of reports/analysis/runtime_leaks.h and runtime_frames.h: which leaked stacks are the
// runtime's (held for the process's life) and which the program's, on hand-made stacks.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <vector>

#include "reports/analysis/runtime_frames.h"
#include "reports/analysis/runtime_leaks.h"

using namespace memstage::reports;

namespace {

Frame native(const char* function, const char* module) {
  Frame f;
  f.function = function;
  f.module = module;
  return f;
}

Frame python(const char* function, const char* file) {
  Frame f;
  f.kind = "python";
  f.function = function;
  f.file = file;
  return f;
}

// A stack of `frames`, outermost first, added to `report`; its index.
StackIndex add_stack(Report& report, std::initializer_list<Frame> frames) {
  if (report.stack_nodes.empty()) report.stack_nodes.push_back(StackNode{});  // node 0: the empty stack
  StackNodeIndex node = 0;
  for (const Frame& f : frames) {
    report.frames.push_back(f);
    report.stack_nodes.push_back(StackNode{static_cast<FrameIndex>(report.frames.size() - 1), node});
    node = static_cast<StackNodeIndex>(report.stack_nodes.size() - 1);
  }
  report.stacks.push_back(Stack{node});
  return static_cast<StackIndex>(report.stacks.size() - 1);
}

}  // namespace

TEST_CASE("runtime leaks: the C library's buffers and the loader's initializers, not the program's strdup") {
  Report r;
  const StackIndex stdout_buffer = add_stack(r, {native("_start", "/bin/prog"), native("main", "/bin/prog"),
                                                 native("puts", "/lib/libc.so.6"),
                                                 native("_IO_file_doallocate", "/lib/libc.so.6"),
                                                 native("malloc", "/lib/libc.so.6")});
  const StackIndex emergency_pool = add_stack(r, {native("_dl_init", "/lib64/ld-linux-x86-64.so.2"),
                                                  native("call_init", "/lib64/ld-linux-x86-64.so.2"),
                                                  native("(anonymous namespace)::pool::pool()", "/lib/libstdc++.so.6"),
                                                  native("malloc", "/lib/libc.so.6")});
  const StackIndex strdup = add_stack(r, {native("_start", "/bin/prog"), native("main", "/bin/prog"),
                                          native("strdup", "/lib/libc.so.6"), native("malloc", "/lib/libc.so.6")});
  const StackIndex without_symbols = add_stack(r, {native("", "/bin/prog"), native("", "/lib/libc.so.6")});
  RuntimeLeaks leaks(r, false);
  CHECK(leaks.is_runtime(stdout_buffer));
  CHECK(leaks.is_runtime(emergency_pool));
  CHECK_FALSE(leaks.is_runtime(strdup));
  CHECK_FALSE(leaks.is_runtime(without_symbols));
}

TEST_CASE("runtime leaks: in a Python run, the interpreter's unless a frame of the program's own files holds it") {
  Report r;
  const StackIndex startup = add_stack(r, {native("Py_Initialize", "/usr/bin/python3.11"),
                                           python("<module>", "/usr/lib/python3.11/site.py"),
                                           native("PyMem_Malloc", "/usr/bin/python3.11")});
  const StackIndex own = add_stack(r, {python("<module>", "/home/me/train.py"), python("leak", "/home/me/train.py"),
                                       native("malloc", "/lib/libc.so.6")});
  const StackIndex frozen = add_stack(r, {python("_find_and_load", "<frozen importlib._bootstrap>"),
                                          native("PyMem_Malloc", "/usr/bin/python3.11")});
  // `import torch` on the program's line: what torch allocates as it is imported is its initialization.
  const StackIndex library_import =
      add_stack(r, {python("<module>", "/home/me/train.py"), python("_find_and_load", "<frozen importlib._bootstrap>"),
                    python("<module>", "/usr/lib/python3/dist-packages/torch/__init__.py"),
                    native("PyMem_Malloc", "/usr/bin/python3.11")});
  // The program importing its own module: that module's code is the program's.
  const StackIndex own_import =
      add_stack(r, {python("<module>", "/home/me/train.py"), python("_find_and_load", "<frozen importlib._bootstrap>"),
                    python("<module>", "/home/me/data.py"), native("PyMem_Malloc", "/usr/bin/python3.11")});
  RuntimeLeaks leaks(r, true);
  CHECK(leaks.is_runtime(startup));
  CHECK_FALSE(leaks.is_runtime(own));
  CHECK(leaks.is_runtime(frozen));
  CHECK(leaks.is_runtime(library_import));
  CHECK_FALSE(leaks.is_runtime(own_import));
  // Without the program's Python frames (--no-python-frames), nothing is taken for the interpreter's.
  RuntimeLeaks no_frames(r, false);
  CHECK_FALSE(no_frames.is_runtime(startup));
  CHECK_FALSE(no_frames.is_runtime(own));
}

TEST_CASE("a user's suppression matches a frame's function, file or module, as LSan's patterns do") {
  Frame f = native("load_cache(int)", "/opt/app/libcache.so.1");
  f.file = "/src/cache/loader.cpp";
  CHECK(matches_suppression(f, "load_cache"));
  CHECK(matches_suppression(f, "libcache.so"));
  CHECK(matches_suppression(f, "cache/loader.cpp"));
  CHECK(matches_suppression(f, "load_*(int)"));
  CHECK(matches_suppression(f, "^load_cache"));
  CHECK(matches_suppression(f, "loader.cpp$"));
  CHECK_FALSE(matches_suppression(f, "^cache"));
  CHECK_FALSE(matches_suppression(f, "load_cache$"));
  CHECK_FALSE(matches_suppression(f, "save_*"));
  CHECK(matches_suppression(f, "^load_cache(int)$"));
}

TEST_CASE("runtime leaks: a stack a user's suppression matches is held apart") {
  Report r;
  const StackIndex cache = add_stack(r, {native("main", "/bin/prog"), native("load_cache", "/bin/prog"),
                                         native("malloc", "/lib/libc.so.6")});
  const StackIndex other = add_stack(r, {native("main", "/bin/prog"), native("parse", "/bin/prog"),
                                         native("malloc", "/lib/libc.so.6")});
  const std::vector<std::string> suppressions = {"load_cache"};
  RuntimeLeaks leaks(r, false, suppressions);
  CHECK(leaks.is_runtime(cache));
  CHECK_FALSE(leaks.is_runtime(other));
}
