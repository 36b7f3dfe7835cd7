#include "harness/cli/child_process.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "harness/cli/cli_error.h"

namespace memstage::harness {

namespace {

// The child's environment: this process's, with `extra_env` set over it.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra_env) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [extra_name, value] : extra_env) replaced = replaced || extra_name == name;
    if (!replaced) entries.emplace_back(text);
  }
  for (const auto& [name, value] : extra_env) entries.push_back(name + "=" + value);
  return entries;
}

}  // namespace

std::optional<std::string> find_on_path(const std::string& program) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + program;
    std::error_code ec;
    if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

ChildResult run_child(const std::vector<std::string>& command,
                      const std::vector<std::pair<std::string, std::string>>& extra_env,
                      const std::function<void(uint64_t pid)>& started) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment = child_environment(extra_env);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // posix_spawnp rather than fork and exec: glibc's shares the address space until the
  // exec (CLONE_VM | CLONE_VFORK), where a fork copied memstage's page tables (its libraries,
  // jemalloc's arenas) only for the exec to drop them, and it returns the exec's error
  // itself (a command not found, not executable).
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int spawn_error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (spawn_error == ENOEXEC) {
    // A script without a #! line, which execvp (and a shell) would run with /bin/sh and
    // posix_spawnp does not: the shell's exec runs it so, after its own PATH lookup.
    std::vector<char*> shell_argv{const_cast<char*>("sh"), const_cast<char*>("-c"),
                                  const_cast<char*>("exec \"$0\" \"$@\"")};
    shell_argv.insert(shell_argv.end(), argv.begin(), argv.end());
    spawn_error = posix_spawn(&pid, "/bin/sh", nullptr, nullptr, shell_argv.data(), envp.data());
  }
  if (spawn_error != 0) {
    throw CliError("cannot run '" + command[0] + "': " + strerror(spawn_error), 127);
  }
  if (started) started(static_cast<uint64_t>(pid));

  // Ctrl-C reaches the child from the terminal; memstage stays to write the report.
  struct sigaction ignore{}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  struct rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  ChildResult result;
  result.pid = static_cast<uint64_t>(pid);
  result.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux counts it in KiB
  result.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace memstage::harness
