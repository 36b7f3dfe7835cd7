// memstage attach PID [-o DIR] [--mode full|stats|aggregate|sample] [--sample-rate BYTES] [--duration SECONDS] [--max-depth N]
// Loads the tracer into a running process through gdb (dlopen, then
// memstage_attach_start: profiler/preload/got_hooks.h), records until the duration ends,
// Ctrl-C, or the process ends, detaches (memstage_attach_stop) and writes the usual
// report into DIR. The process runs on as it would have.
#include <elf.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/gdb_session.h"
#include "harness/cli/preload_path.h"
#include "harness/cli/report_files.h"
#include "harness/cli/sample_rate.h"
#include "profiler/preload/got_hooks.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

struct AttachFlags {
  int pid = 0;
  std::string output_dir;
  std::string mode = "full";
  std::string sample_rate;  // --sample-rate: sample mode's mean bytes between samples
  double duration_s = 0;  // 0: until Ctrl-C or the process ends
  unsigned max_depth = 64;
  unsigned sample_interval_ms = 10;
  bool quiet = false;
};

// gdb stops every thread of the process for each of its two visits; loading the tracer's
// symbols is most of the time. Far more than that means gdb is stuck.
constexpr double kGdbTimeoutS = 120;

volatile sig_atomic_t g_stop_requested = 0;
void request_stop(int) { g_stop_requested = 1; }

std::string pid_text(int pid) { return std::to_string(pid); }

// The program a process runs, for messages: its executable's name.
std::string program_name(int pid) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/" + pid_text(pid) + "/exe", ec);
  if (!ec) return exe.filename().string();
  std::ifstream comm("/proc/" + pid_text(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? "?" : name;
}

bool process_exists(int pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// Running, not a zombie waiting for its parent.
bool process_alive(int pid) {
  if (!process_exists(pid)) return false;
  std::ifstream stat("/proc/" + pid_text(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close_paren = line.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= line.size() || line[close_paren + 2] != 'Z';
}

// The real, effective, saved and filesystem ids of "Uid:" or "Gid:" in /proc/PID/status.
std::vector<long> status_ids(int pid, const std::string& key) {
  std::ifstream status("/proc/" + pid_text(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    std::vector<long> ids;
    long id;
    while (fields >> id) ids.push_back(id);
    return ids;
  }
  return {};
}

std::string ptrace_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  std::string value;
  in >> value;
  return value;
}

CliError no_permission(int pid, const std::string& why) {
  return CliError("attach: no permission to trace pid " + pid_text(pid) + ": " + why);
}

// What the kernel would refuse, said before gdb tries: another user's process without
// root, or ptrace switched off.
void check_permission(int pid) {
  const std::vector<long> uids = status_ids(pid, "Uid:");
  if (geteuid() != 0) {
    for (const long uid : uids) {
      if (uid != static_cast<long>(geteuid())) {
        throw no_permission(pid, "it runs as uid " + std::to_string(uid) + ", memstage as uid " +
                                     std::to_string(geteuid()) + " (attach as that user, or as root)");
      }
    }
  }
  if (ptrace_scope() == "3") {
    throw no_permission(pid, "ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3)");
  }
}

// A process without a dynamic loader (no PT_INTERP: static, or static-pie) has nothing
// that could load the tracer.
void check_dynamically_linked(int pid) {
  const std::string exe = "/proc/" + pid_text(pid) + "/exe";
  std::ifstream in(exe, std::ios::binary);
  if (!in) throw no_permission(pid, std::string("cannot read its executable (") + strerror(errno) + ")");
  Elf64_Ehdr header{};
  in.read(reinterpret_cast<char*>(&header), sizeof(header));
  if (!in || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    throw CliError("attach: pid " + pid_text(pid) + " (" + program_name(pid) +
                   ") does not run a 64-bit ELF program; attach supports those only");
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(header.e_phoff + static_cast<uint64_t>(i) * header.e_phentsize));
    in.read(reinterpret_cast<char*>(&ph), sizeof(ph));
    if (!in) break;
    if (ph.p_type == PT_INTERP) return;
  }
  throw CliError("attach: pid " + pid_text(pid) + " (" + program_name(pid) +
                 ") is statically linked: it has no dynamic loader to load the tracer into it");
}

// The tracer is in the process already: run under `memstage run`, or attached to before
// (its trace state is made once per process).
void check_not_traced(int pid) {
  std::ifstream maps("/proc/" + pid_text(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libmemstage_preload.so") != std::string::npos) {
      throw CliError("attach: pid " + pid_text(pid) +
                     " has the memstage tracer loaded already (it runs under memstage run, or was attached "
                     "to before: a process can be attached to once)");
    }
  }
}

std::string last_line(const std::string& text) {
  std::string last, line;
  std::istringstream lines(text);
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// gdb could not attach or call: the reason in one line.
[[noreturn]] void gdb_failed(int pid, const GdbResult& result, const char* doing) {
  const std::string& out = result.output;
  if (out.find("ptrace: Operation not permitted") != std::string::npos ||
      out.find("Could not attach to process") != std::string::npos) {
    const std::string scope = ptrace_scope();
    throw no_permission(pid, "ptrace was refused" +
                                 (scope.empty() || scope == "0"
                                      ? std::string(" (a container without CAP_SYS_PTRACE?)")
                                      : " (kernel.yama.ptrace_scope = " + scope +
                                            ": set it to 0, or attach as root)"));
  }
  if (out.find("No such process") != std::string::npos) {
    throw CliError("attach: no process with pid " + pid_text(pid) + " (it ended)");
  }
  if (result.timed_out) {
    throw CliError("attach: gdb did not finish " + std::string(doing) + " pid " + pid_text(pid) + " within " +
                   std::to_string(static_cast<int>(kGdbTimeoutS)) + " s");
  }
  throw CliError("attach: gdb could not finish " + std::string(doing) + " pid " + pid_text(pid) + ": " +
                 reports::terminal_text(last_line(out)));
}

const char* attach_error_text(const std::string& value) {
  using namespace preload;
  const int code = atoi(value.c_str());
  switch (code) {
    case kAttachBadOptions: return "it refused the options memstage gave it (a tracer of another version?)";
    case kAttachAlreadyRecording: return "the tracer records in it already";
    case kAttachAttachedBefore: return "it was attached to before: a process can be attached to once";
    case kAttachCannotStart: return "the tracer could not start (its trace file or its thread)";
    default: return "the tracer's start failed";
  }
}

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

int attach(const AttachFlags& flags) {
  const int pid = flags.pid;
  if (flags.mode != "full" && flags.mode != "stats" && flags.mode != "aggregate" && flags.mode != "sample") {
    throw CliError("attach: --mode must be full, stats, aggregate or sample, not '" + flags.mode + "'");
  }
  const uint64_t sample_rate_bytes = harness::sample_rate_bytes("attach", flags.mode, flags.sample_rate);
  if (pid <= 0 || !process_exists(pid)) throw CliError("attach: no process with pid " + pid_text(pid));
  if (pid == getpid()) throw CliError("attach: pid " + pid_text(pid) + " is memstage itself");
  const std::optional<std::string> gdb = find_gdb();
  if (!gdb) {
    throw CliError("attach: gdb is not installed (or not on PATH); attach loads the tracer through it "
                   "(apt-get install gdb)");
  }
  check_permission(pid);
  check_dynamically_linked(pid);
  check_not_traced(pid);

  const std::string preload = find_preload_library();
  const std::string program = program_name(pid);
  const std::string dir = fs::absolute(flags.output_dir.empty() ? "memstage." + program + "." + pid_text(pid)
                                                                : flags.output_dir)
                              .lexically_normal()
                              .string();
  prepare_output_dir(dir);
  std::error_code ec;
  fs::remove(dir + "/run.json", ec);  // an earlier run's: this report has no command of its own
  // The process writes its trace into the folder as its own user.
  const std::vector<long> uids = status_ids(pid, "Uid:"), gids = status_ids(pid, "Gid:");
  if (geteuid() == 0 && uids.size() > 1 && gids.size() > 1 && uids[1] != 0) {
    if (chown(dir.c_str(), static_cast<uid_t>(uids[1]), static_cast<gid_t>(gids[1])) != 0) {
      throw CliError("attach: cannot give " + dir + " to uid " + std::to_string(uids[1]) + ": " + strerror(errno));
    }
  }

  struct sigaction action{};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const std::string options = "output=" + dir + "\nmode=" + flags.mode + "\nmax_depth=" +
                              std::to_string(flags.max_depth) +
                              "\nsample_interval_ms=" + std::to_string(flags.sample_interval_ms) +
                              "\nsample_rate_bytes=" + std::to_string(sample_rate_bytes);
  // dlopen is libc's (glibc 2.34 on); RTLD_NOW (2): every symbol bound before the first call.
  const GdbResult started = gdb_batch(*gdb, pid,
                                      {"sharedlibrary libc\\.so", "call (void *) dlopen(" + gdb_string_literal(preload) + ", 2)",
                                       "call (char *) dlerror()", "sharedlibrary libmemstage_preload",
                                       "call (int) memstage_attach_start(" + gdb_string_literal(options) + ")"},
                                      kGdbTimeoutS);
  const std::vector<std::string>& values = started.values;
  if (values.empty()) gdb_failed(pid, started, "attaching to");
  if (values[0].ends_with(" 0x0")) {
    const std::string why = values.size() > 1 ? values[1] : "";
    throw CliError("attach: pid " + pid_text(pid) + " could not load " + preload +
                   (why.empty() ? "" : ": " + reports::terminal_text(why.substr(why.find(' ') + 1))));
  }
  if (values.size() < 3) gdb_failed(pid, started, "attaching to");
  if (values[2] != "0") {
    throw CliError("attach: pid " + pid_text(pid) + ": " + attach_error_text(values[2]));
  }
  const double attached_at_s = now_s();
  // The trace is read as the tracer writes it, as `memstage run` does.
  const std::unique_ptr<reports::TraceBeingWritten> read_ahead =
      read_traces_ahead(dir, flags.mode != "stats");
  if (!flags.quiet) {
    char until[64] = "until Ctrl-C";
    if (flags.duration_s > 0) snprintf(until, sizeof(until), "for %g s", flags.duration_s);
    fprintf(stderr, "memstage: attached to pid %d (%s), %s mode; recording %s\n", pid,
            reports::terminal_text(program).c_str(), flags.mode.c_str(), until);
  }

  bool ended = false;
  while (!g_stop_requested && (flags.duration_s <= 0 || now_s() - attached_at_s < flags.duration_s)) {
    if (!process_alive(pid)) {
      ended = true;
      break;
    }
    usleep(20000);
  }
  if (!ended) {
    const GdbResult stopped = gdb_batch(
        *gdb, pid, {"sharedlibrary libmemstage_preload", "call (int) memstage_attach_stop()"}, kGdbTimeoutS);
    if (stopped.values.empty() || stopped.values[0] != "0") {
      if (!process_alive(pid)) {
        ended = true;
      } else {
        fprintf(stderr, "memstage: detaching from pid %d failed (%s); the trace so far is reported\n", pid,
                reports::terminal_text(last_line(stopped.output)).c_str());
      }
    }
  }
  if (ended && !flags.quiet) {
    fprintf(stderr, "memstage: pid %d ended while attached; reporting up to its end\n", pid);
  }
  // Detached or ended: the tracer has written its last chunk.
  if (read_ahead) read_ahead->writer_ended();
  return write_reports(dir, std::nullopt, flags.quiet, read_ahead.get()) ? 0 : 1;
}

}  // namespace

void register_attach(CLI::App& app, CommandAction& action) {
  auto flags = std::make_shared<AttachFlags>();
  CLI::App* cmd = app.add_subcommand(
      "attach", "Load the tracer into a running process, record until the duration ends or Ctrl-C, and report");
  cmd->add_option("pid", flags->pid, "The process")->required();
  cmd->add_option("-o,--output", flags->output_dir, "Folder for the trace and reports (default memstage.PROG.PID)");
  cmd->add_option("--mode", flags->mode,
                  "full: every event with its stack; stats: counters only; aggregate: every allocation's stack, "
                  "folded in the process; sample: allocations sampled by bytes, the heap counted on every call")
      ->capture_default_str();
  add_sample_rate_option(*cmd, flags->sample_rate);
  cmd->add_option("--duration", flags->duration_s, "Seconds to record (default: until Ctrl-C or the process ends)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-depth", flags->max_depth, "Frames kept per stack")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--sample-interval", flags->sample_interval_ms, "RSS sampling interval in milliseconds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", flags->quiet, "Print no summary");
  cmd->callback([flags, &action] { action = [flags] { return attach(*flags); }; });
}

}  // namespace memstage::harness
