// memstage attach PID [-o DIR] [--mode full|stats|aggregate|sample] [--sample-rate BYTES] [--duration SECONDS] [--max-depth N]
//                     [--serve ADDR [--serve-token FILE]]
// Loads the tracer into a running process through gdb (dlopen, then
// memstage_attach_start: profiler/preload/got_hooks.h), records until the duration ends,
// Ctrl-C, or the process ends, detaches (memstage_attach_stop) and writes the usual
// report into DIR. The process runs on as it would have.
#include <elf.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
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
#include "harness/cli/serve_flags.h"
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
  ServeFlags serve;  // --serve: the recording so far over HTTP (harness/serve)
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

// The wait status of a process that ended and that its parent has not reaped yet: field
// 52 of /proc/PID/stat (Linux 3.5 on). Nothing once it is reaped, or before it ends.
std::optional<int> zombie_wait_status(int pid) {
  std::ifstream stat("/proc/" + pid_text(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size() || line[close_paren + 2] != 'Z') {
    return std::nullopt;
  }
  std::istringstream fields(line.substr(close_paren + 2));  // from field 3, the state
  std::string field;
  for (int n = 3; fields >> field; ++n) {
    if (n == 52) return atoi(field.c_str());
  }
  return std::nullopt;
}

// A number of seconds above 0: CLI11's PositiveNumber lets nan through (it compares false
// with every bound), and 0 would be a recording that ends before it starts.
std::string check_duration(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = strtod(text.c_str(), &end);
  if (text.empty() || *end || errno == ERANGE || !std::isfinite(value) || value <= 0) {
    return "must be a number of seconds above 0 (leave it out to record until Ctrl-C), not '" + text + "'";
  }
  return {};
}

// The process ended while attached: says how, and gives memstage's exit status: 128 +
// the signal that killed it (as `memstage run` does), from its wait status while it is a
// zombie or else from its trace (the tracer's fatal-signal record); 0 when it exited; 1
// when nothing says (killed by SIGKILL once its parent had reaped it).
int report_end(int pid, const std::optional<int>& wait_status, const reports::Report* report) {
  std::optional<int> signal;
  if (wait_status && WIFSIGNALED(*wait_status)) signal = WTERMSIG(*wait_status);
  if (!wait_status && report && report->signal) signal = report->signal;
  // Without a wait status: the trace ended at an exit, or at an exec (the new program's end is not in it).
  const std::string trace_end = report && !report->processes.empty() ? report->processes[0].ended : "unknown";
  const bool exited = wait_status ? WIFEXITED(*wait_status) : trace_end == "exit" || trace_end == "exec";
  if (signal) {
    const char* name = sigabbrev_np(*signal);
    fprintf(stderr, "memstage: pid %d ended while attached: killed by SIG%s (signal %d), exit %d; reported up to its end\n",
            pid, name ? name : "?", *signal, 128 + *signal);
    return 128 + *signal;
  }
  if (exited) {
    if (wait_status) {
      fprintf(stderr, "memstage: pid %d ended while attached (exit code %d); reported up to its end\n", pid,
              WEXITSTATUS(*wait_status));
    } else {
      fprintf(stderr, "memstage: pid %d ended while attached; reported up to its end\n", pid);
    }
    return 0;
  }
  fprintf(stderr, "memstage: pid %d ended while attached, killed without a trace of how (SIGKILL, the OOM killer?); "
          "reported up to its last flush\n", pid);
  return 1;
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

// The process runs under `memstage run` (its tracer preloaded, LD_PRELOAD naming it).
// A tracer loaded by an earlier attach is not refused here: that attach may have failed
// before recording, and may be tried again; one that recorded is refused by the tracer.
void check_not_run_by_memstage(int pid) {
  std::ifstream environ_file("/proc/" + pid_text(pid) + "/environ", std::ios::binary);
  std::string entry;
  while (std::getline(environ_file, entry, '\0')) {
    if (entry.rfind("LD_PRELOAD=", 0) == 0 && entry.find("libmemstage_preload.so") != std::string::npos) {
      throw CliError("attach: pid " + pid_text(pid) +
                     " runs under memstage run: its tracer records it already");
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
    case kAttachAlreadyRecording: return "the tracer records in it already (another memstage attach, or memstage run)";
    case kAttachAttachedBefore: return "it was recorded by an attach before: a process can be recorded once";
    case kAttachCannotStart: return "the tracer could not start (its trace file or its thread)";
    default: return "the tracer's start failed";
  }
}

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// Refuses a process attach cannot record (or should not); the gdb to attach with.
std::string check_attachable(int pid) {
  if (pid <= 0 || !process_exists(pid)) throw CliError("attach: no process with pid " + pid_text(pid));
  if (pid == getpid()) throw CliError("attach: pid " + pid_text(pid) + " is memstage itself");
  const std::optional<std::string> gdb = find_gdb();
  if (!gdb) {
    throw CliError("attach: gdb is not installed (or not on PATH); attach loads the tracer through it "
                   "(apt-get install gdb)");
  }
  check_permission(pid);
  check_dynamically_linked(pid);
  check_not_run_by_memstage(pid);
  return *gdb;
}

// The run's folder, made ready for the process, which writes its trace there as its own user.
std::string attach_output_dir(const AttachFlags& flags, const std::string& program) {
  const int pid = flags.pid;
  const std::string dir = fs::absolute(flags.output_dir.empty() ? "memstage." + program + "." + pid_text(pid)
                                                                : flags.output_dir)
                              .lexically_normal()
                              .string();
  prepare_output_dir(dir);
  std::error_code ec;
  fs::remove(dir + "/run.json", ec);  // an earlier run's: this report has no command of its own
  const std::vector<long> uids = status_ids(pid, "Uid:"), gids = status_ids(pid, "Gid:");
  if (geteuid() == 0 && uids.size() > 1 && gids.size() > 1 && uids[1] != 0) {
    if (chown(dir.c_str(), static_cast<uid_t>(uids[1]), static_cast<gid_t>(gids[1])) != 0) {
      throw CliError("attach: cannot give " + dir + " to uid " + std::to_string(uids[1]) + ": " + strerror(errno));
    }
  }
  return dir;
}

// Loads the tracer into the process through gdb and starts its recording.
void start_tracer(const std::string& gdb, int pid, const std::string& preload, const std::string& options) {
  // dlopen is libc's (glibc 2.34 on); RTLD_NOW (2): every symbol bound before the first call.
  const GdbResult started = gdb_batch_outside_allocator(
      gdb, pid,
      {"call (void *) dlopen(" + gdb_string_literal(preload) + ", 2)", "call (char *) dlerror()",
       "sharedlibrary libmemstage_preload", "call (int) memstage_attach_start(" + gdb_string_literal(options) + ")"},
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
}

// How the recording ended: the process with it (and its wait status, where known), or not.
struct RecordingEnd {
  bool ended = false;
  std::optional<int> wait_status;
};

// Records until the duration ends, Ctrl-C or the process's end; then stops the tracer in a
// process still alive.
RecordingEnd record(const AttachFlags& flags, const std::string& gdb, double attached_at_s) {
  const int pid = flags.pid;
  RecordingEnd end;
  while (!g_stop_requested && (flags.duration_s <= 0 || now_s() - attached_at_s < flags.duration_s)) {
    if (!process_alive(pid)) {
      end.ended = true;
      end.wait_status = zombie_wait_status(pid);
      return end;
    }
    usleep(20000);
  }
  const GdbResult stopped = gdb_batch_outside_allocator(
      gdb, pid, {"sharedlibrary libmemstage_preload", "call (int) memstage_attach_stop()"}, kGdbTimeoutS);
  if (stopped.values.empty() || stopped.values[0] != "0") {
    if (!process_alive(pid)) {
      end.ended = true;
      end.wait_status = zombie_wait_status(pid);
    } else {
      fprintf(stderr, "memstage: detaching from pid %d failed (%s); the trace so far is reported\n", pid,
              reports::terminal_text(last_line(stopped.output)).c_str());
    }
  }
  return end;
}

int attach(const AttachFlags& flags) {
  const int pid = flags.pid;
  if (flags.mode != "full" && flags.mode != "stats" && flags.mode != "aggregate" && flags.mode != "sample") {
    throw CliError("attach: --mode must be full, stats, aggregate or sample, not '" + flags.mode + "'");
  }
  const uint64_t sample_rate_bytes = harness::sample_rate_bytes("attach", flags.mode, flags.sample_rate);
  const std::optional<ServeOptions> serve = check_serve_flags(flags.serve, "attach");
  const std::string gdb = check_attachable(pid);
  const std::string preload = find_preload_library();
  const std::string program = program_name(pid);
  // --serve: bound before anything is made or loaded (a port in use stops here, the process untouched).
  std::unique_ptr<ReportServer> server = bind_server(serve, "attach");
  const std::string dir = attach_output_dir(flags, program);

  struct sigaction action{};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const std::string options = "output=" + dir + "\nmode=" + flags.mode + "\nmax_depth=" +
                              std::to_string(flags.max_depth) +
                              "\nsample_interval_ms=" + std::to_string(flags.sample_interval_ms) +
                              "\nsample_rate_bytes=" + std::to_string(sample_rate_bytes);
  // The trace is read as the tracer writes it, as `memstage run` does; --serve reads it there.
  const std::unique_ptr<reports::TraceBeingWritten> read_ahead =
      read_traces_ahead(dir, flags.mode != "stats");
  start_serving(server.get(), dir, flags.quiet, read_ahead.get());
  start_tracer(gdb, pid, preload, options);
  const double attached_at_s = now_s();
  if (!flags.quiet) {
    char until[64] = "until Ctrl-C";
    if (flags.duration_s > 0) snprintf(until, sizeof(until), "for %g s", flags.duration_s);
    fprintf(stderr, "memstage: attached to pid %d (%s), %s mode; recording %s\n", pid,
            reports::terminal_text(program).c_str(), flags.mode.c_str(), until);
  }
  const RecordingEnd end = record(flags, gdb, attached_at_s);
  server.reset();  // live while recording; the report files follow
  // Detached or ended: the tracer has written its last chunk.
  if (read_ahead) read_ahead->writer_ended();
  reports::Report report;
  const bool written = write_reports(dir, std::nullopt, flags.quiet, read_ahead.get(), &report);
  const int end_status = end.ended ? report_end(pid, end.wait_status, written ? &report : nullptr) : 0;
  return end_status != 0 ? end_status : written ? 0 : 1;
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
      ->check(CLI::Validator(check_duration, "SECONDS"));
  cmd->add_option("--max-depth", flags->max_depth, "Frames kept per stack")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--sample-interval", flags->sample_interval_ms, "RSS sampling interval in milliseconds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", flags->quiet, "Print no summary");
  add_serve_options(*cmd, flags->serve);
  cmd->callback([flags, &action] { action = [flags] { return attach(*flags); }; });
}

}  // namespace memstage::harness
