// Runs the traced command as a child process and waits for it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memstage::harness {

struct ChildResult {
  int exit_code = 0;          // the code it exited with, or 128 + signal
  std::optional<int> signal;  // the signal that killed it
  double duration_s = 0;
  uint64_t pid = 0;
  // wait4's ru_maxrss: the highest RSS of the child (any program it exec'd included) and of
  // the children it waited for. The kernel keeps it past a SIGKILL, which no tracer sees.
  uint64_t max_rss_bytes = 0;
};

// Where `program` (a name without '/') is on PATH, as execvp would find it; nothing when
// no folder of PATH holds it as an executable file.
std::optional<std::string> find_on_path(const std::string& program);

// Starts `command` (looked up in PATH) with `extra_env` added to this process's
// environment, waits for it, and returns how it ended. Throws CliError (exit 127) when
// the command can't be started. `started`, if given, is called with the child's pid once
// the command is running, before waiting for it.
ChildResult run_child(const std::vector<std::string>& command,
                      const std::vector<std::pair<std::string, std::string>>& extra_env,
                      const std::function<void(uint64_t pid)>& started = {});

}  // namespace memstage::harness
