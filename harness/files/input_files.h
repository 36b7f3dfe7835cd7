// Every file a command reads as its input (a report.json, a budget, run.json) goes through
// here: a FIFO given by mistake must not hang the command, nor /dev/zero fill its memory.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace memstage::files {

// A file that could not be read as an input; the message is one line naming it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole of `path`, which must be a regular file of at most `max_bytes`. Opened without
// blocking (a FIFO or device is refused, not waited on) and read no further than the bound.
// `what` names the file in messages ("budget", "report"). Throws InputError.
std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes);

// Bounds for the inputs memstage reads: far above any it writes (report.json of a job of
// thousands of processes is tens of MiB), far below what would exhaust a machine's memory.
inline constexpr size_t kMaxReportBytes = size_t{1} << 30;
inline constexpr size_t kMaxSmallInputBytes = size_t{16} << 20;  // budgets, run.json

}  // namespace memstage::files
