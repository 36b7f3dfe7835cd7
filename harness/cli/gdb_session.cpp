#include "harness/cli/gdb_session.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "harness/cli/child_process.h"
#include "harness/cli/cli_error.h"

extern char** environ;

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// "$12 = (void *) 0x7f" -> "(void *) 0x7f"; nothing for other lines.
std::optional<std::string> call_value(const std::string& line) {
  if (line.size() < 4 || line[0] != '$') return std::nullopt;
  size_t i = 1;
  while (i < line.size() && isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 1 || line.compare(i, 3, " = ") != 0) return std::nullopt;
  return line.substr(i + 3);
}

}  // namespace

std::optional<std::string> find_gdb() { return find_on_path("gdb"); }

std::string gdb_string_literal(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

constexpr char kEveryThreadInAllocator[] = "memstage: every thread is inside the allocator";
// Selects the first thread (by number) that is not the tracer's own and has no frame of the
// allocator's (by the names of glibc's malloc family and its internals, and of the
// tracer's hooks of them). Where every such thread is inside it, the first is let run out
// of its outermost allocator frame (gdb's `finish`) and they are looked at again, a few
// times: a program in malloc most of its time (page faults in a heap that grows and is
// trimmed) would otherwise cost a whole gdb start a look. Then it says so and detaches, so
// that no call that follows runs. Not attached (no threads: ptrace refused), it does
// nothing, and the calls fail as they would.
constexpr char kSelectThreadOutsideAllocator[] = R"(import gdb
NAMES = ('malloc', 'free', 'calloc', 'realloc', 'memalign', 'valloc', 'brk', 'tcache', '_int_',
         'consolidate', 'systrim', 'mallinfo', 'mallopt', 'arena_get')
def outermost_allocator_frame(t):
  t.switch()
  outer = None
  try:
    f = gdb.newest_frame()
    while f is not None:
      if any(n in (f.name() or '') for n in NAMES): outer = f
      f = f.older()
  except gdb.error: pass
  return outer
for look in range(%d):
  threads = sorted(gdb.selected_inferior().threads(), key=lambda t: t.num)
  programs = [t for t in threads if not (t.name or '').startswith('memstage')]
  inside = [(t, outermost_allocator_frame(t)) for t in programs]
  safe = [t for t, frame in inside if frame is None]
  if safe or not inside or look + 1 == %d: break
  try:
    inside[0][0].switch()
    inside[0][1].select()
    gdb.execute('finish', to_string=True)
  except gdb.error: break
if safe: safe[0].switch()
elif threads: print('%s'); gdb.execute('detach'))";
// Looks before gdb gives up and is started again.
constexpr int kAllocatorLooks = 20;
// A gdb stopped at its timeout in the middle of a `finish` would leave that finish's
// breakpoint in the program: looks that finish are only made with this long left, far
// beyond any allocator call of a program that is not hung.
constexpr double kFinishMarginS = 30;

// `source` as one gdb command: gdb's -ex takes a line.
std::string python_command(const std::string& source) {
  std::string literal;
  for (const char c : source) {
    if (c == '\\' || c == '"') literal += '\\';
    literal += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return "python exec(\"" + literal + "\")";
}

}  // namespace

GdbResult gdb_batch_outside_allocator(const std::string& gdb, pid_t pid, const std::vector<std::string>& commands,
                                      double timeout_s) {
  const double deadline_s = now_s() + timeout_s;
  for (;;) {
    const int looks = deadline_s - now_s() >= kFinishMarginS ? kAllocatorLooks : 1;
    char select[sizeof(kSelectThreadOutsideAllocator) + sizeof(kEveryThreadInAllocator) + 16];
    snprintf(select, sizeof(select), kSelectThreadOutsideAllocator, looks, looks, kEveryThreadInAllocator);
    std::vector<std::string> selected = {"sharedlibrary libc\\.so", python_command(select)};
    selected.insert(selected.end(), commands.begin(), commands.end());
    GdbResult result = gdb_batch(gdb, pid, selected, deadline_s - now_s());
    if (result.output.find(kEveryThreadInAllocator) == std::string::npos || now_s() + 0.02 >= deadline_s) return result;
    usleep(20000);  // the program runs on, out of the allocator
  }
}

GdbResult gdb_batch(const std::string& gdb, pid_t pid, const std::vector<std::string>& commands, double timeout_s) {
  std::vector<std::string> args = {gdb, "-batch", "-nx", "-q", "-p", std::to_string(pid),
                                   // Nothing downloaded, no scripts of the target's run.
                                   "-iex", "set debuginfod enabled off", "-iex", "set auto-load no",
                                   "-iex", "set confirm off", "-iex", "set pagination off",
                                   "-iex", "set auto-solib-add off"};
  for (const std::string& command : commands) {
    args.push_back("-ex");
    args.push_back(command);
  }
  args.push_back("-ex");
  args.push_back("detach");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw CliError(std::string("attach: pipe: ") + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  const int spawned = posix_spawn(&child, gdb.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    throw CliError("attach: cannot start " + gdb + ": " + strerror(spawned));
  }

  GdbResult result;
  const double deadline = now_s() + timeout_s;
  char buffer[4096];
  for (;;) {
    const double left_s = deadline - now_s();
    if (left_s <= 0) {
      result.timed_out = true;
      kill(-child, SIGKILL);
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left_s * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(pipe_fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::stringstream lines(result.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto value = call_value(line)) result.values.push_back(*value);
  }
  return result;
}

}  // namespace memstage::harness
