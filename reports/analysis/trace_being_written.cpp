// TraceBeingWritten (analyzer.h): the traces of a run followed while they are written,
// each by a thread of its own, and handed to the analysis or shown as they stand (so_far).
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "profiler/trace/trace_reader.h"
#include "reports/analysis/analyzer.h"
#include "reports/analysis/first_pass.h"
#include "reports/analysis/report_so_far.h"
#include "reports/analysis/stack_resolver.h"
#include "reports/symbolize/symbolizer.h"

namespace memstage::reports {
namespace {

// A file's identity: its device and inode.
using FileId = std::pair<uint64_t, uint64_t>;
std::optional<FileId> file_id(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}


}  // namespace

struct TraceBeingWritten::State {
  State(std::string folder, const AnalysisOptions& options, bool with_stacks)
      : dir(std::move(folder)),
        budget(options.max_kept_text_bytes),
        max_event_log_bytes(options.max_event_log_bytes),
        resolve_early(with_stacks),
        symbolize(options.symbolize) {
    if (!with_stacks || !options.symbolize) return;
    warmer = std::jthread([this] { warm_modules(); });
  }
  // The main process's stacks resolved by its reader as they are read, in a report of
  // their own until the analysis takes them (StackResolver::resolve_while_read).
  struct EarlyStacks {
    Report scratch;
    std::unique_ptr<StackResolver> resolver;
  };
  // One trace followed as it is written, by a thread of its own.
  struct Follower {
    size_t ordinal = 0;  // 0: the first trace followed, the program's own
    std::string path;
    std::unique_ptr<TraceFile> file;  // once read
    std::unique_ptr<EarlyStacks> early;  // the reader's until take()
    bool early_decided = false;
    // The pass being read, for so_far: its reader holds `pass_mutex` while it reads, and
    // lets go between chunks when a view waits for it, and while it waits for the writer.
    TraceFile* reading = nullptr;  // under pass_mutex
    std::mutex pass_mutex;
    std::atomic<int> views_waiting{0};
    std::exception_ptr failed;
    std::jthread reader;
  };
  // Traces followed at once at most: one whose process ended (or exec'd) makes room for
  // the next; those that found none are read after the run, several at once.
  static constexpr size_t kMaxFollowing = 16;

  std::string dir;
  KeptTextBudget budget;  // the analysis it is handed to goes on charging it
  size_t max_event_log_bytes;
  bool resolve_early;  // the traces have stacks: the main process's are resolved as read
  bool symbolize;
  std::atomic<uint64_t> first_pid{0};  // the first trace's process, once read (0: not yet)
  std::atomic<bool> resolving_early{false};  // a reader resolves stacks: the warmer stops
  std::map<const TraceFile*, std::unique_ptr<EarlyStacks>> early_by_file;  // taken with their files
  size_t stacks_resolved_early = 0;  // by the resolver the analysis took
  std::mutex mutex;
  std::condition_variable writer_ended;
  bool writing = true;  // under mutex
  Symbolizer symbolizer;  // the C library's modules opened while the program runs (warmer)
  std::mutex so_far_mutex;
  Symbolizer so_far_symbolizer;  // under so_far_mutex: the frames of so_far's stacks, kept from one to the next
  std::vector<std::unique_ptr<Follower>> followers;  // added to under mutex until the watcher returns
  std::atomic<size_t> following{0};  // followers still reading
  std::map<FileId, Follower*> follower_of_file;  // the followers by file, once the watcher returned
  std::jthread watcher;  // last two: the members above outlive them
  std::jthread warmer;

  bool still_writing() {
    std::lock_guard lock(mutex);
    return writing;
  }
  void end_writing() {
    {
      std::lock_guard lock(mutex);
      writing = false;
    }
    writer_ended.notify_all();
  }
  // Until more may have been written: a poll interval, or the writer's end at once (a short
  // program's report is not held up by a sleep).
  void wait(std::chrono::milliseconds interval = std::chrono::milliseconds(10)) {
    std::unique_lock lock(mutex);
    writer_ended.wait_for(lock, interval, [this] { return !writing; });
  }

  // Follows every trace that appears in the folder while the run goes on: the tracer
  // creates one as each process starts (and one more at each exec), so a job's workers,
  // ranks and the program a launcher runs are read as they run, not after.
  // The folder is listed again only when its modification time changed (a trace was
  // created): a stat every poll, not a listing of a build's thousand traces.
  void watch() {
    std::set<std::string> followed;
    struct stat last{};
    bool unlisted = false;  // traces left for want of room
    while (still_writing()) {
      struct stat now{};
      const bool changed = stat(dir.c_str(), &now) == 0 && (now.st_mtim.tv_sec != last.st_mtim.tv_sec ||
                                                             now.st_mtim.tv_nsec != last.st_mtim.tv_nsec);
      if (changed || (unlisted && following.load() < kMaxFollowing)) {
        last = now;
        unlisted = false;
        std::vector<std::string> paths;
        try {
          paths = find_traces(dir);
        } catch (const std::exception&) {
          last = {};  // the run's own folder: tried again next poll
        }
        for (const std::string& path : paths) {
          if (followed.contains(path)) continue;
          if (following.load() == kMaxFollowing) {
            unlisted = true;
            break;
          }
          followed.insert(path);
          following.fetch_add(1);
          auto follower = std::make_unique<Follower>();
          Follower& f = *follower;
          f.ordinal = followed.size() - 1;
          f.path = path;
          {
            std::lock_guard lock(mutex);
            followers.push_back(std::move(follower));
          }
          f.reader = std::jthread([this, &f] { follow(f); });
        }
      }
      wait();
    }
    // For take(): the same file under another spelling of its path is the same trace. A
    // stat a trace, not one per pair of traces (a job of a thousand processes).
    for (auto& f : followers) {
      if (const auto id = file_id(f->path)) follower_of_file.emplace(*id, f.get());
    }
  }

  // Until the run ends, or the trace's process does: its end record, or an exec, is the
  // last it writes (an exec that fails writes on: take() then finds the file longer than
  // what was read).
  void follow(Follower& f) {
    std::unique_ptr<TraceFile> file;  // outlives the lock: so_far never sees it go
    std::unique_lock pass_lock(f.pass_mutex);
    try {
      file = std::make_unique<TraceFile>(budget, max_event_log_bytes);
      f.reading = file.get();
      const trace::FollowWriter follow{
          [this, &file] { return still_writing() && !file->pass.ended && !file->pass.replaced_by_exec(); },
          [this, &pass_lock] {
            pass_lock.unlock();
            wait();
            pass_lock.lock();
          }};
      // After each chunk: its stacks resolved if they are the main process's, and a view
      // waiting for the pass gets it now (so_far).
      const auto let_views_in = [this, &f, &file, &pass_lock](uint64_t, uint64_t) {
        resolve_stacks_read(f, *file);
        if (!f.views_waiting.load()) return;
        pass_lock.unlock();
        while (f.views_waiting.load()) std::this_thread::yield();
        pass_lock.lock();
      };
      file->summary = trace::read_trace(f.path, file->pass, let_views_in, &follow);
      f.file = std::move(file);
    } catch (...) {
      if (!pass_lock.owns_lock()) pass_lock.lock();
      f.reading = nullptr;
      f.failed = std::current_exception();
    }
    pass_lock.unlock();
    following.fetch_sub(1);
  }

  // Whether a trace's stacks are resolved as it is read: those of the process the analysis
  // will report, the first one memstage started (or an image it exec'd, same pid). Their
  // resolution moves from after the program's end to the reader's core while it runs.
  bool is_main_candidate(const Follower& f, const FirstPass& pass) {
    if (f.ordinal == 0) {
      first_pid.store(pass.info.pid);
      return true;
    }
    return pass.info.pid == first_pid.load();
  }
  // A failure here costs the early start, never the report: pass two resolves them all.
  void resolve_stacks_read(Follower& f, TraceFile& file) noexcept {
    try {
      if (!f.early_decided) {
        if (!resolve_early || !file.pass.have_info) return;
        f.early_decided = true;
        if (!is_main_candidate(f, file.pass)) return;
        f.early = std::make_unique<EarlyStacks>();
        f.early->resolver = std::make_unique<StackResolver>(file.pass.stacks, file.pass.module_snapshots,
                                                            file.pass.python_codes, f.early->scratch, symbolize);
        f.early->resolver->resolve_while_read();
        resolving_early.store(true);
      }
      if (f.early) f.early->resolver->resolve_read();
    } catch (...) {
      f.early.reset();
    }
  }

  // The passes read so far, each paused between chunks until `done` returns: a view waits
  // for each reader at most a chunk's reading.
  template <typename Done>
  auto with_passes(Done done) {
    std::vector<Follower*> all;
    {
      std::lock_guard lock(mutex);
      for (const auto& f : followers) all.push_back(f.get());
    }
    std::vector<std::unique_lock<std::mutex>> paused;
    std::vector<const TraceFile*> files;
    for (Follower* f : all) {
      f->views_waiting.fetch_add(1);
      paused.emplace_back(f->pass_mutex);
      f->views_waiting.fetch_sub(1);
      if (f->reading && f->reading->pass.have_info) files.push_back(f->reading);
    }
    return done(files);
  }

  // While the program runs, at the lowest priority (a core the program leaves idle): the C
  // library's modules, then every module the traces list, as they list it (its symbol
  // cache's file read, or its symbol table and debug information), so that the stacks'
  // resolution after the program's end finds them open. A module begun when the program
  // ends is finished (take_symbolizer waits for it); the others are left to the resolution.
  void warm_modules() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
    symbolizer.warm_c_library();
    std::set<std::string> listed;
    std::map<const TraceFile*, size_t> lists_read;  // by trace: its module lists looked at
    // A reader resolving its stacks opens the modules they name itself, in its own
    // symbolizer: opened here too, they would be read twice.
    while (still_writing() && !resolving_early.load()) {
      const std::vector<std::string> fresh = with_passes([&](const std::vector<const TraceFile*>& files) {
        std::vector<std::string> paths;
        for (const TraceFile* file : files) {
          const auto& lists = file->pass.module_snapshots;
          for (size_t& read = lists_read[file]; read < lists.size(); ++read) {
            for (const trace::Module& m : lists[read]) {
              if (listed.insert(m.path).second) paths.push_back(m.path);
            }
          }
        }
        return paths;
      });
      for (size_t i = 0; i < fresh.size() && still_writing() && !resolving_early.load(); ++i) {
        symbolizer.warm(fresh[i]);
      }
      wait(std::chrono::milliseconds(100));
    }
  }

  // The symbolizer with the modules the warmer opened (once it is done with them).
  Symbolizer take_symbolizer() {
    if (warmer.joinable()) warmer.join();
    return std::move(symbolizer);
  }

  // The pass over `trace_path` if it was followed to the file's end (null otherwise): waits
  // for its reader to finish it; what it threw, this throws.
  std::unique_ptr<TraceFile> take(const std::string& trace_path) {
    end_writing();
    if (watcher.joinable()) watcher.join();
    const auto id = file_id(trace_path);
    const auto found = id ? follower_of_file.find(*id) : follower_of_file.end();
    if (found == follower_of_file.end()) return nullptr;
    Follower& f = *found->second;
    if (f.reader.joinable()) f.reader.join();
    if (f.failed) std::rethrow_exception(std::exchange(f.failed, nullptr));
    std::error_code ec;
    const uint64_t bytes = std::filesystem::file_size(f.path, ec);
    if (ec || !f.file || bytes != f.file->summary.file_bytes) return nullptr;  // written on after
    std::lock_guard pass_lock(f.pass_mutex);
    f.reading = nullptr;
    if (f.early) early_by_file.emplace(f.file.get(), std::move(f.early));
    return std::move(f.file);
  }

  // The stacks of `file` (taken) resolved while it was read, moved into `report`; null
  // when they were not (another process's, or another symbolization than the analysis's).
  std::unique_ptr<StackResolver> take_stacks(const TraceFile& file, Report& report, bool analysis_symbolizes) {
    std::unique_ptr<StackResolver> resolver;
    if (const auto found = early_by_file.find(&file); found != early_by_file.end()) {
      if (found->second->resolver->symbolizes() == analysis_symbolizes) {
        resolver = std::move(found->second->resolver);
        stacks_resolved_early = resolver->stacks_resolved_while_read();
        resolver->move_to_report(report);
      }
    }
    early_by_file.clear();
    return resolver;
  }
};

TraceBeingWritten::TraceBeingWritten(std::string dir, const AnalysisOptions& options, bool with_stacks)
    : state_(std::make_unique<State>(std::move(dir), options, with_stacks)) {
  state_->watcher = std::jthread([state = state_.get()] { state->watch(); });
}

// The watcher joins (State's last members), then the followers as `followers` goes.
TraceBeingWritten::~TraceBeingWritten() { writer_ended(); }

void TraceBeingWritten::writer_ended() { state_->end_writing(); }

KeptTextBudget& TraceBeingWritten::budget() { return state_->budget; }

std::unique_ptr<TraceFile> TraceBeingWritten::take(const std::string& trace_path) { return state_->take(trace_path); }

Symbolizer TraceBeingWritten::take_symbolizer() { return state_->take_symbolizer(); }

std::unique_ptr<StackResolver> TraceBeingWritten::take_stacks(const TraceFile& file, Report& report,
                                                              bool analysis_symbolizes) {
  return state_->take_stacks(file, report, analysis_symbolizes);
}

std::optional<Report> TraceBeingWritten::so_far(const AnalysisOptions& options, SoFarStacks which) {
  std::lock_guard lock(state_->so_far_mutex);
  return state_->with_passes([&](const std::vector<const TraceFile*>& files) -> std::optional<Report> {
    if (files.empty()) return std::nullopt;
    return report_so_far(files, options, state_->so_far_symbolizer, which);
  });
}

size_t TraceBeingWritten::stacks_resolved_early() const { return state_->stacks_resolved_early; }

size_t TraceBeingWritten::traces_followed() {
  state_->end_writing();
  if (state_->watcher.joinable()) state_->watcher.join();
  return state_->followers.size();
}

}  // namespace memstage::reports
