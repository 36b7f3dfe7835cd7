// gdb in batch mode as `memstage attach` uses it: attach to a process, call functions in
// it, detach. What gdb printed and the values of the calls come back.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace memstage::harness {

// The gdb program on PATH, or nothing.
std::optional<std::string> find_gdb();

struct GdbResult {
  // The value of each call that returned one, in order ("$1 = 0" gives "0"; "(void *)
  // 0x7f..." is kept whole).
  std::vector<std::string> values;
  std::string output;  // stdout and stderr together
  bool timed_out = false;
};

// Attaches gdb to `pid`, runs `commands` ("call (int) f(1)") and detaches. gdb stops every
// thread of the process while it is attached, so it reads the symbols of no library but
// those a command asks for ("sharedlibrary libc\\.so"): less to read while it waits. gdb runs in a
// process group of its own, so that a Ctrl-C at the terminal never reaches it in the
// middle of a call; it is stopped after `timeout_s`.
GdbResult gdb_batch(const std::string& gdb, pid_t pid, const std::vector<std::string>& commands, double timeout_s);

// gdb_batch, its calls made on a thread of the program that is not inside the allocator:
// a call into the tracer asks the allocator (and dlopen allocates), so on a thread gdb
// stopped inside malloc, holding its lock, the call would wait for ever. Where every
// thread is inside it, one is let run out of it and they are looked at again, a few times;
// then gdb detaches, and the batch is tried again after the program ran on a while, until
// `timeout_s`.
GdbResult gdb_batch_outside_allocator(const std::string& gdb, pid_t pid, const std::vector<std::string>& commands,
                                      double timeout_s);

// `text` as a C string literal for gdb's expression parser.
std::string gdb_string_literal(const std::string& text);

}  // namespace memstage::harness
