#include "harness/cli/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "harness/cli/cli_error.h"

namespace memstage::harness {

ChildResult run_child(const std::vector<std::string>& command,
                      const std::vector<std::pair<std::string, std::string>>& extra_env,
                      const std::function<void(uint64_t pid)>& started) {
  // The child reports a failed exec through this pipe; a successful exec closes it.
  int exec_errors[2];
  if (pipe2(exec_errors, O_CLOEXEC) != 0) throw CliError(std::string("pipe: ") + strerror(errno));

  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw CliError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(exec_errors[0]);
    for (const auto& [name, value] : extra_env) setenv(name.c_str(), value.c_str(), 1);
    execvp(argv[0], argv.data());
    const int error = errno;
    (void)!write(exec_errors[1], &error, sizeof(error));
    _exit(127);
  }
  close(exec_errors[1]);
  int exec_error = 0;
  const bool exec_failed = read(exec_errors[0], &exec_error, sizeof(exec_error)) == sizeof(exec_error);
  close(exec_errors[0]);
  if (!exec_failed && started) started(static_cast<uint64_t>(pid));

  // Ctrl-C reaches the child from the terminal; memstage stays to write the report.
  struct sigaction ignore{}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  if (exec_failed) {
    throw CliError("cannot run '" + command[0] + "': " + strerror(exec_error), 127);
  }
  ChildResult result;
  result.pid = static_cast<uint64_t>(pid);
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
