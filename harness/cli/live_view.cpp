#include "harness/cli/live_view.h"

#include <curses.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "harness/cli/cli_error.h"
#include "reports/analysis/analyzer.h"
#include "reports/render/frame_label.h"
#include "reports/render/text/human_units.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::harness {

namespace {

using reports::format_bytes;
using reports::Report;

constexpr size_t kStacksShown = 8;
constexpr size_t kStagesShown = 10;
constexpr size_t kProcessesShown = 6;

volatile sig_atomic_t g_interrupted = 0;

void add_heading(const Report& report, std::vector<std::string>& lines) {
  const reports::TimelinePoint now = report.timeline.empty() ? reports::TimelinePoint{} : report.timeline.back();
  lines.push_back(fmt::format("heap  now {:>10}  peak {:>10}      RSS  now {:>10}  peak {:>10}", format_bytes(now.heap_bytes),
                              format_bytes(report.totals.peak_heap_bytes), format_bytes(now.rss_bytes),
                              format_bytes(report.totals.peak_rss_bytes)));
  std::string open = "none";
  for (const auto& s : report.stages) {
    if (!s.closed) open = s.path;  // the innermost open one comes last
  }
  lines.push_back(fmt::format("open stage: {}      tracer's own memory {} (peak {})      {:.1f} s in",
                              reports::terminal_text(open), format_bytes(now.tracer_bytes),
                              format_bytes(report.totals.tracer_peak_bytes), now.t_s));
}

void add_stages(const Report& report, const LiveChoices& choices, std::vector<std::string>& lines) {
  std::vector<const reports::StageReport*> stages;
  for (const auto& s : report.stages) stages.push_back(&s);
  if (choices.stages_by_peak) {
    std::stable_sort(stages.begin(), stages.end(), [](const auto* a, const auto* b) {
      return a->figures.peak_heap_bytes > b->figures.peak_heap_bytes;
    });
  }
  lines.push_back(fmt::format("stages ({}), peak so far:{:>22}{:>12}", choices.stages_by_peak ? "by peak heap" : "as begun",
                              "heap", "RSS"));
  if (stages.size() > kStagesShown) stages.erase(stages.begin(), stages.end() - kStagesShown);
  for (const auto* s : stages) {
    lines.push_back(fmt::format("  {:<34} {:>10}  {:>10}{}", reports::terminal_text(s->path),
                                format_bytes(s->figures.peak_heap_bytes), format_bytes(s->figures.peak_rss_bytes),
                                s->closed ? "" : "  (open)"));
  }
}

// Stacks named by their allocation site, those of one site as one line (two call paths to
// the same line read as one place to the user), largest first.
struct SiteLine {
  std::string site;
  double rate = 0;  // bytes per second, for the growing list
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

std::vector<SiteLine> by_site(std::vector<SiteLine> lines) {
  std::vector<SiteLine> merged;
  std::unordered_map<std::string, size_t> index_of_site;
  for (const SiteLine& line : lines) {
    const auto [it, fresh] = index_of_site.try_emplace(line.site, merged.size());
    if (fresh) {
      merged.push_back(line);
      continue;
    }
    SiteLine& m = merged[it->second];
    m.rate += line.rate;
    m.bytes += line.bytes;
    m.blocks += line.blocks;
  }
  std::stable_sort(merged.begin(), merged.end(), [](const SiteLine& a, const SiteLine& b) {
    return a.rate != b.rate ? a.rate > b.rate : a.bytes > b.bytes;
  });
  if (merged.size() > kStacksShown) merged.resize(kStacksShown);
  return merged;
}

void add_stacks(const Report& report, const LiveChoices& choices, std::vector<std::string>& lines) {
  std::vector<SiteLine> sites;
  if (choices.growing) {
    for (const auto& g : report.growth ? report.growth->stacks : std::vector<reports::GrowingStack>{}) {
      sites.push_back(SiteLine{reports::site_label(report, g.stack), g.bytes_per_s, g.live_bytes, 0});
    }
  } else {
    for (const auto& leak : report.leaks) {
      if (!leak.runtime) sites.push_back(SiteLine{reports::site_label(report, leak.stack), 0, leak.bytes, leak.blocks});
    }
  }
  lines.push_back(choices.growing ? "stacks growing fastest:" : "stacks holding most now (allocated and not freed so far):");
  if (report.mode == "stats") {
    lines.push_back("  (stats mode records no stacks)");
  } else if (sites.empty()) {
    lines.push_back(choices.growing ? "  (none growing yet)" : "  (none held)");
  }
  for (const SiteLine& s : by_site(std::move(sites))) {
    lines.push_back(choices.growing ? fmt::format("  {:>10}/s {:>10} now  {}", format_bytes(s.rate), format_bytes(s.bytes),
                                                  reports::terminal_text(s.site))
                                    : fmt::format("  {:>10} in {:>6} blocks  {}", format_bytes(s.bytes), s.blocks,
                                                  reports::terminal_text(s.site)));
  }
}

void add_processes(const Report& report, std::vector<std::string>& lines) {
  lines.push_back(fmt::format("processes ({}):{:>32}{:>12}", report.processes.size(), "peak heap", "peak RSS"));
  for (size_t i = 0; i < std::min(kProcessesShown, report.processes.size()); ++i) {
    const auto& p = report.processes[i];
    const std::string command = p.command.empty() ? "?" : p.command.front();
    lines.push_back(fmt::format("  {:>7} {:<26} {:>10}  {:>10}", p.pid, reports::terminal_text(command).substr(0, 26),
                                format_bytes(p.peak_heap_bytes), format_bytes(p.peak_rss_bytes)));
  }
}

// The run so far; nothing while no trace has begun.
std::optional<Report> so_far(reports::TraceBeingWritten& traces, std::string& error) {
  try {
    reports::AnalysisOptions options;
    options.top_stacks = kStacksShown;
    options.max_timeline_points = 2;  // the heading's "now"
    return traces.so_far(options);
  } catch (const std::exception& e) {
    error = e.what();
    return std::nullopt;
  }
}

void draw(const std::vector<std::string>& lines) {
  erase();
  for (size_t row = 0; row < lines.size() && row < static_cast<size_t>(LINES); ++row) {
    mvaddnstr(static_cast<int>(row), 0, lines[row].c_str(), COLS);
  }
  refresh();
}

// The screen's terminal, as found again at the end (also after an exception). newterm, not
// initscr: a terminal it cannot drive (TERM unset or unknown) is an error, not an exit.
struct Screen {
  SCREEN* screen = nullptr;
  Screen() {
    screen = newterm(nullptr, stdout, stdin);
    if (!screen) throw CliError("live: cannot drive this terminal (TERM='" + std::string(getenv("TERM") ?: "") + "')");
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
  }
  ~Screen() {
    endwin();
    delscreen(screen);
  }
};

}  // namespace

std::vector<std::string> live_lines(const Report& report, const LiveChoices& choices, size_t width) {
  std::vector<std::string> lines;
  add_heading(report, lines);
  lines.emplace_back();
  add_stages(report, choices, lines);
  lines.emplace_back();
  add_stacks(report, choices, lines);
  lines.emplace_back();
  add_processes(report, lines);
  for (auto& line : lines) {
    if (line.size() > width) line.resize(width);
  }
  return lines;
}

bool run_live_view(const std::string& dir, reports::TraceBeingWritten& traces, const std::function<bool()>& keep_going,
                   bool own_interrupt) {
  struct sigaction on_interrupt{}, old_interrupt{};
  on_interrupt.sa_handler = [](int) { g_interrupted = 1; };
  if (own_interrupt) sigaction(SIGINT, &on_interrupt, &old_interrupt);
  bool quit = false;
  {
    Screen screen;
    LiveChoices choices;
    while (!quit && !g_interrupted && keep_going()) {
      const auto start = std::chrono::steady_clock::now();
      std::string error;
      const std::optional<Report> report = so_far(traces, error);
      const double gather_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int wait_ms = std::max(1000, static_cast<int>(gather_s * 3000));
      const std::string heading = fmt::format(
          "memstage live  {}   every {:.1f} s ({:.0f} ms to gather)   q: leave (the run goes on)  v: held/growing  "
          "s: sort stages",
          reports::terminal_text(dir), wait_ms / 1000.0, gather_s * 1000);
      // Drawn again only when what it shows changes: a key, a resize, the next analysis.
      bool changed = true;
      for (int waited_ms = 0; waited_ms < wait_ms && !quit && !g_interrupted && keep_going(); waited_ms += 100) {
        if (changed) {
          std::vector<std::string> lines{heading, ""};
          const auto body = report ? live_lines(*report, choices, static_cast<size_t>(COLS))
                                   : std::vector<std::string>{error.empty() ? "waiting for the run's traces" : error};
          lines.insert(lines.end(), body.begin(), body.end());
          draw(lines);
        }
        timeout(100);
        const int key = getch();
        if (key == 'q' || key == 'Q') quit = true;
        if (key == 'v') choices.growing = !choices.growing;
        if (key == 's') choices.stages_by_peak = !choices.stages_by_peak;
        changed = key == 'v' || key == 's' || key == KEY_RESIZE;
      }
    }
  }
  if (own_interrupt) sigaction(SIGINT, &old_interrupt, nullptr);
  const bool interrupted = g_interrupted != 0;
  g_interrupted = 0;
  return quit || interrupted;
}

}  // namespace memstage::harness
