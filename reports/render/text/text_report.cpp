#include "reports/render/text/text_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "reports/render/text/human_units.h"
#include "reports/render/text/terminal_text.h"

namespace memstage::reports {
namespace {

void append_stack(std::string& out, const Report& r, StackIndex index, size_t max_frames) {
  if (index >= r.stacks.size() || r.frames_of(r.stacks[index]).empty()) {
    out += "      (no stack)\n";
    return;
  }
  // Start where the program asked for memory, past the allocation plumbing.
  const StackFrames frames = program_frames(r, r.stacks[index]);
  const bool python = std::ranges::any_of(frames, [&](FrameIndex id) { return r.frame(id).kind == "python"; });
  if (!python) {
    size_t shown = 0, more = 0;
    for (FrameIndex id : frames) {
      if (shown < max_frames) {
        out += fmt::format("      {}\n", terminal_text(format_frame(r.frame(id))));
        ++shown;
      } else {
        ++more;
      }
    }
    if (more) out += fmt::format("      ... {} more frames\n", more);
    return;
  }
  // A Python program: the native frame that asked for memory, then the script's lines.
  auto it = frames.begin();
  out += fmt::format("      {}\n", terminal_text(format_frame(r.frame(*it))));
  size_t shown = 1, skipped_native = 0;
  for (++it; it != frames.end(); ++it) {
    const Frame& frame = r.frame(*it);
    if (frame.kind != "python") {
      ++skipped_native;
      continue;
    }
    if (shown == max_frames) {
      out += "      ... more Python frames\n";
      return;
    }
    if (skipped_native) out += fmt::format("      ... {} native frame{}\n", skipped_native, skipped_native == 1 ? "" : "s");
    skipped_native = 0;
    out += fmt::format("      {}\n", terminal_text(format_frame(frame)));
    ++shown;
  }
}

std::string process_label(const Report& r, size_t index) {
  if (index >= r.processes.size()) return "?";
  const ProcessReport& p = r.processes[index];
  std::string name = p.command.empty() ? std::string("?") : p.command.front();
  if (const size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  // Hosts only matter when the job ran on more than one.
  const bool hosts = std::any_of(r.processes.begin(), r.processes.end(),
                                 [&](const ProcessReport& q) { return q.host != r.processes.front().host; });
  const std::string where = hosts ? " on " + terminal_text(p.host) : "";
  name = terminal_text(name);
  if (p.rank) return fmt::format("rank {} (pid {} {}{})", *p.rank, p.pid, name, where);
  return fmt::format("pid {} ({}{})", p.pid, name, where);
}

// The whole job first: what the machine had to hold, all processes at one instant.
void append_job(std::string& out, const Report& r, const TextOptions& options) {
  const JobReport& job = r.job;
  out += fmt::format("  job of {} processes, summed at each instant (to {:.0f} ms):\n", r.processes.size(),
                     1000 * job.clock_resolution_s);
  out += fmt::format("    peak heap  {} at {:.3f} s\n", format_bytes(job.peak_heap_bytes), job.peak_heap_time_s);
  out += fmt::format("    peak RSS   {} at {:.3f} s (pages shared between processes count in each)\n",
                     format_bytes(job.peak_rss_bytes), job.peak_rss_time_s);
  if (job.peak_pss_bytes) {
    out += fmt::format("    peak PSS   {} at {:.3f} s (shared pages counted once); private pages {}\n",
                       format_bytes(*job.peak_pss_bytes), job.peak_pss_time_s, format_bytes(job.peak_uss_bytes.value_or(0)));
  }
  if (job.rss_overstates) {
    out += fmt::format("    summed RSS overstates what the job holds by {}: the processes share pages (copy-on-write\n"
                       "    after fork, libraries) and RSS counts a shared page in each; PSS counts it once\n",
                       format_bytes(job.peak_rss_bytes - *job.peak_pss_bytes));
  }
  // Each process's heap at the job's peak; with PSS samples, its PSS and private pages at
  // their highest (a forked worker that copies its parent's pages grows in private pages).
  constexpr size_t kMaxProcessLines = 16;
  size_t shown = 0;
  for (size_t i = 0; i < r.processes.size(); ++i) {
    const ProcessReport& p = r.processes[i];
    if (!p.heap_at_job_peak_bytes && !p.peak_pss_bytes) continue;
    if (++shown > kMaxProcessLines) continue;
    out += fmt::format("      {:>10} in {}{}\n", format_bytes(p.heap_at_job_peak_bytes), process_label(r, i),
                       p.peak_pss_bytes ? fmt::format("; PSS up to {}, private {}", format_bytes(*p.peak_pss_bytes),
                                                      format_bytes(p.peak_uss_bytes.value_or(0)))
                                        : "");
  }
  if (shown > kMaxProcessLines) out += fmt::format("      ... and {} more processes\n", shown - kMaxProcessLines);
  if (!job.top_stacks_at_peak.empty()) {
    out += fmt::format("    held at the job's peak:\n");
    for (size_t i = 0; i < std::min(options.stacks, job.top_stacks_at_peak.size()); ++i) {
      const JobStack& s = job.top_stacks_at_peak[i];
      out += fmt::format("    {} in {} blocks in {}\n", format_bytes(s.held.bytes), format_count(s.held.blocks),
                         process_label(r, s.process));
      append_stack(out, r, s.held.stack, std::min<size_t>(options.frames, 4));
    }
  }
  out += fmt::format("  the traced command, pid {}:\n", r.processes[0].pid);
}

bool is_unit_at(const std::string& text, size_t at) {
  for (const std::string unit : {"B", "KiB", "MiB", "GiB", "TiB"}) {
    const size_t after = at + unit.size();
    if (text.compare(at, unit.size(), unit) == 0 &&
        (after >= text.size() || !isalnum(static_cast<unsigned char>(text[after])))) {
      return true;
    }
  }
  return false;
}

// `text` after a label of `indent` columns, wrapped at word boundaries to lines of about
// 100 columns, the continuation lines indented under the first: a note of several
// sentences stays readable in a terminal.
std::string wrapped(const std::string& text, size_t indent) {
  constexpr size_t kWidth = 100;
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    while (end != std::string::npos && is_unit_at(text, end + 1)) end = text.find(' ', end + 1);  // "256 KiB" stays whole
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > kWidth) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line;
}

// " and what your 2 suppressions match", where the user gave some.
std::string suppressions_text(const Report& r) {
  if (!r.leak_suppressions) return "";
  return fmt::format(" and what your {} suppression{} match{}", r.leak_suppressions, r.leak_suppressions == 1 ? "" : "s",
                     r.leak_suppressions == 1 ? "es" : "");
}

// A list of leaks under its heading: the largest `options.stacks`, each with its stack.
void append_leaks(std::string& out, const Report& r, const std::string& heading, std::vector<Leak>::const_iterator first,
                  std::vector<Leak>::const_iterator last, const TextOptions& options) {
  if (first == last) return;
  out += "\n" + heading + "\n";
  const size_t count = static_cast<size_t>(last - first);
  for (size_t i = 0; i < std::min(options.stacks, count); ++i) {
    const Leak& l = first[static_cast<std::ptrdiff_t>(i)];
    out += fmt::format("  {} in {} blocks{}\n", format_bytes(l.bytes), format_count(l.blocks),
                       l.stage >= 0 ? " in stage " + terminal_text(r.stages[l.stage].path) : "");
    append_stack(out, r, l.stack, options.frames);
  }
  if (count > options.stacks) out += fmt::format("  ... {} more\n", count - options.stacks);
}

// The command, how it ran, and the run's figures: peaks, leaks, allocations.
void append_headline(std::string& out, const Report& r, const TextOptions& options) {
  const MemoryFigures& t = r.totals;
  std::string command;
  for (const auto& a : r.command) command += (command.empty() ? "" : " ") + terminal_text(a);
  out += fmt::format("memstage: {} ({} mode, {}), {:.2f} s, {}{}\n", command, r.mode, r.allocator, r.duration_s,
                     r.exit_code ? fmt::format("exit {}", *r.exit_code) : "exit code unknown",
                     r.signal ? fmt::format(" (signal {})", *r.signal) : "");
  if (r.python) {
    out += fmt::format("  Python {} with Python frames; {}\n", r.python->version.substr(0, r.python->version.find(' ')),
                       r.python->allocator == "malloc"
                           ? "PYTHONMALLOC=malloc: every object is in the heap figures"
                           : "pymalloc: objects up to 512 B are counted by their arenas, as mmap");
  }
  if (r.processes.size() > 1) append_job(out, r, options);
  out += fmt::format("  peak heap    {} at {:.3f} s\n", format_bytes(t.peak_heap_bytes), t.peak_heap_time_s);
  out += fmt::format("  peak RSS     {}{}\n", format_bytes(t.peak_rss_bytes),
                     t.tracer_peak_bytes ? fmt::format(" (the program's own {}; the tracer's own memory up to {}, apart)",
                                                       format_bytes(t.peak_program_rss_bytes),
                                                       format_bytes(t.tracer_peak_bytes))
                                         : "");
  if (r.attached) {
    // A mode that follows blocks knows only those allocated while attached; one that
    // counts starts its heap count from the allocator's, which knows them all; sample mode
    // does both.
    out += r.sampling ? "  attached     to the running process: blocks allocated before attaching have no stacks (their "
                        "frees are ignored); the heap counts start from the allocator's in-use bytes at attach; "
                        "\"leaked\" is what was allocated while attached and still held at detach\n"
           : r.leaks_measured
               ? "  attached     to the running process: memory allocated before attaching is unknown (its frees "
                 "are ignored); \"leaked\" is what was allocated while attached and still held at detach\n"
               : "  attached     to the running process: calls are counted from attach on; the heap counts start "
                 "from the allocator's in-use bytes at attach, memory allocated before attaching included\n";
  }
  if (r.leaks_measured) {
    out += fmt::format("  leaked       {} in {} blocks{}{}\n", format_bytes(t.leaked_bytes), format_count(t.leaked_blocks),
                       r.attached ? " (held at detach)" : "",
                       r.runtime_held.blocks ? fmt::format("; the runtime's own, held for the process's life{}: {} in {} "
                                                           "blocks, apart",
                                                           suppressions_text(r), format_bytes(r.runtime_held.bytes),
                                                           format_count(r.runtime_held.blocks))
                                             : "");
  } else {
    out += fmt::format("  leaked       not measured ({} mode counts allocations; it does not follow blocks)\n", r.mode);
  }
  out += fmt::format("  allocations  {} ({}), {} allocated in all\n", format_count(t.allocations),
                     r.temporaries_measured() ? format_count(t.temporary_allocations) + " temporary" : "temporaries not measured",
                     format_bytes(t.bytes_allocated));
  if (r.sampling) out += fmt::format("  estimates    {}\n", wrapped(terminal_text(r.sampling->note), 15));
}

// Fragmentation, headlined only where the allocator holds enough free to matter.
void append_fragmentation(std::string& out, const Report& r) {
  const MemoryFigures& t = r.totals;
  // Said with its moment: the allocator is sampled at heap highs, stage edges, start and exit.
  // With its bytes: a program with almost no heap has a few KiB of arena and nothing live,
  // "100%" of nearly nothing.
  const RssBreakdown& b = t.rss_breakdown;
  if (allocator_free_bytes(b) >= kFragmentationHeadlineFreeBytes) {
    out += fmt::format("  fragmentation {:.1f}% ({} free of {} the allocator holds) at {:.3f} s{}\n",
                       100 * t.fragmentation.ratio, format_bytes(allocator_free_bytes(b)),
                       format_bytes(b.allocator_resident_bytes), b.t_s, t.fragmentation.estimated ? " (estimated)" : "");
  } else {
    out += fmt::format("  fragmentation none to speak of: {} free of {} the allocator holds at {:.3f} s (said from {} free)\n",
                       format_bytes(allocator_free_bytes(b)), format_bytes(b.allocator_resident_bytes), b.t_s,
                       format_bytes(kFragmentationHeadlineFreeBytes));
  }
}

// Shared pages, the RAM limit, device memory, and what the report warns and notes.
void append_resources(std::string& out, const Report& r, const TextOptions& options) {
  const RssBreakdown& b = r.totals.rss_breakdown;
  // What a sum of RSS over processes counts again in each: pages another process holds too.
  if (b.shares) {
    out += fmt::format("  resident     {} shared with other processes, {} private (PSS {}) at {:.3f} s\n",
                       format_bytes(b.shares->shared_bytes), format_bytes(b.shares->private_bytes),
                       format_bytes(b.shares->pss_bytes), b.shares->t_s);
  }
  if (r.ram_limit) {
    const RamLimitReport& l = *r.ram_limit;
    out += fmt::format("  would not fit in {}: passed {}after {:.1f} s (the program's RSS {})\n", format_bytes(l.limit_bytes),
                       l.stage >= 0 ? "at stage " + terminal_text(r.stages[l.stage].path) + " " : "", l.t_s, format_bytes(l.rss_bytes));
    for (size_t i = 0; i < std::min(options.stacks, l.top_stacks.size()); ++i) {
      out += fmt::format("    {} in {} blocks held then:\n", format_bytes(l.top_stacks[i].bytes),
                         format_count(l.top_stacks[i].blocks));
      append_stack(out, r, l.top_stacks[i].stack, 4);
    }
  }
  if (r.device) {
    const DeviceFigures& d = r.device->totals;
    out += fmt::format("  device peak  {} at {:.3f} s; {} allocations, {} never freed\n", format_bytes(d.peak_bytes),
                       d.peak_time_s, format_count(d.allocations), format_bytes(d.leaked_bytes));
    if (d.cache) {
      out += fmt::format("  device cache (caching allocator, at the end) reserved {}, allocated {}, cached {}\n",
                         format_bytes(d.cache->reserved_bytes), format_bytes(d.cache->allocated_bytes),
                         format_bytes(d.cache->reserved_bytes - std::min(d.cache->reserved_bytes, d.cache->allocated_bytes)));
    }
  }
  for (const auto& w : r.warnings) out += fmt::format("  warning: {}\n", terminal_text(w));
  for (const auto& n : r.capture_notes) out += fmt::format("  note: {}\n", terminal_text(n));
}

// Every process of a job with its own peaks and how it ended.
void append_processes(std::string& out, const Report& r) {
  if (r.processes.size() > 1) {
    // Every process with its own peaks: the first one's figures above say nothing of the
    // compilers and tools it started.
    out += fmt::format("\nprocesses ({}; but for the job's, the figures above and below are pid {}'s)\n",
                       r.processes.size(), r.processes.front().pid);
    out += fmt::format("  {:>8} {:>10} {:>10}  {:<22} {}\n", "pid", "peak heap", "peak RSS", "ended", "command");
    for (const ProcessReport& p : r.processes) {
      // The program's name, not its folder, then its arguments.
      std::string command_line;
      for (const auto& a : p.command) {
        command_line += command_line.empty() ? a.substr(a.rfind('/') == std::string::npos ? 0 : a.rfind('/') + 1)
                                             : " " + a;
      }
      if (p.rank) command_line = fmt::format("rank {}: {}", *p.rank, command_line);
      command_line = terminal_text(command_line);
      if (command_line.size() > 60) command_line = command_line.substr(0, 59) + "~";
      std::string ended = p.ended;
      if (p.ended == "exec") {
        const auto slash = p.exec_path.rfind('/');
        ended = "exec'd " + terminal_text(slash == std::string::npos ? p.exec_path : p.exec_path.substr(slash + 1));
      } else if (p.ended == "signal" && p.signal) {
        ended = fmt::format("signal {}", *p.signal);
      } else if (p.ended == "exit" && p.exit_code) {
        ended = fmt::format("exit {}", *p.exit_code);
      } else if (p.ended == "unknown") {
        ended = "killed (no end record)";
      }
      if (ended.size() > 22) ended = ended.substr(0, 21) + "~";
      out += fmt::format("  {:>8} {:>10} {:>10}  {:<22} {}\n", p.pid, format_bytes(p.peak_heap_bytes),
                         format_bytes(p.peak_rss_bytes), ended, command_line);
    }
  }
}

// A row per stage: its peaks, counts and time.
void append_stage_table(std::string& out, const Report& r) {
  if (!r.stages.empty()) {
    out += "\nstages\n";
    out += fmt::format("  {:<28} {:>10} {:>10} {:>12} {:>10} {:>10} {:>9}\n", "stage", "peak heap", "peak RSS",
                       "allocations", "retained", "leaked", "seconds");
    for (const StageReport& s : r.stages) {
      const std::string times = s.instances > 1 ? " x" + format_count(s.instances) : "";
      std::string name = std::string(2 * s.depth, ' ') + terminal_text(s.name);
      if (name.size() + times.size() > 28) name = name.substr(0, 27 - std::min<size_t>(times.size(), 20)) + "~";
      name += times;
      const MemoryFigures& f = s.figures;
      out += fmt::format("  {:<28} {:>10} {:>10} {:>12} {:>10} {:>10} {:>9.3f}\n", name,
                         format_bytes(f.peak_heap_bytes), format_bytes(f.peak_rss_bytes), format_count(f.allocations),
                         r.leaks_measured ? format_bytes(s.retained_bytes) : "–",
                         r.leaks_measured ? format_bytes(f.leaked_bytes) : "–",
                         stage_open_s(s));
    }
    if (r.stage_grouping) out += fmt::format("  (x N: {})\n", terminal_text(r.stage_grouping->note));
  }
}

// Device memory per stage (CUDA).
void append_device_stage_table(std::string& out, const Report& r) {
  if (r.device && !r.stages.empty()) {
    out += "\ndevice memory by stage\n";
    out += fmt::format("  {:<28} {:>11} {:>12} {:>10} {:>10} {:>13} {:>14}\n", "stage", "device peak", "allocations",
                       "retained", "leaked", "cache reserved", "cache allocated");
    for (const StageReport& s : r.stages) {
      if (!s.device) continue;
      std::string name = std::string(2 * s.depth, ' ') + s.name;
      if (name.size() > 28) name = name.substr(0, 27) + "~";
      const DeviceFigures& d = *s.device;
      out += fmt::format("  {:<28} {:>11} {:>12} {:>10} {:>10} {:>13} {:>14}\n", name, format_bytes(d.peak_bytes),
                         format_count(d.allocations), format_bytes(d.retained_bytes), format_bytes(d.leaked_bytes),
                         d.cache ? format_bytes(d.cache->reserved_bytes) : "-",
                         d.cache ? format_bytes(d.cache->allocated_bytes) : "-");
    }
  }
}

// The stacks holding memory at the peak, then the program's leaks and the runtime's.
void append_held_and_leaked(std::string& out, const Report& r, const TextOptions& options) {
  const MemoryFigures& t = r.totals;
  if (!r.top_stacks_at_peak.empty()) {
    out += fmt::format("\nheld at the peak ({})\n", format_bytes(t.peak_heap_bytes));
    for (size_t i = 0; i < std::min(options.stacks, r.top_stacks_at_peak.size()); ++i) {
      const StackBytes& s = r.top_stacks_at_peak[i];
      out += fmt::format("  {} in {} blocks\n", format_bytes(s.bytes), format_count(s.blocks));
      append_stack(out, r, s.stack, options.frames);
    }
  }

  // The program's leaks, then what the runtime holds (Report::leaks lists them in that order).
  const auto first_runtime = std::find_if(r.leaks.begin(), r.leaks.end(), [](const Leak& l) { return l.runtime; });
  append_leaks(out, r, fmt::format("leaks ({} in {} blocks)", format_bytes(t.leaked_bytes), format_count(t.leaked_blocks)),
               r.leaks.begin(), first_runtime, options);
  append_leaks(out, r,
               fmt::format("held by the runtime for the process's life{} ({} in {} blocks: the C library, the loader, "
                           "library initializers, the interpreter; not in \"leaked\")",
                           suppressions_text(r), format_bytes(r.runtime_held.bytes), format_count(r.runtime_held.blocks)),
               first_runtime, r.leaks.end(), options);
}

// The stacks whose live bytes grow steadily.
void append_growth(std::string& out, const Report& r, const TextOptions& options) {
  if (r.growth && !r.growth->stacks.empty()) {
    out += fmt::format("\ngrowing over time (live bytes rising steadily; a least-squares fit over {} snapshots {:.2g} s apart)\n",
                       r.growth->snapshots, r.growth->interval_s);
    if (!r.growth->estimate_note.empty()) {
      out += fmt::format("  estimates    {}\n", wrapped(terminal_text(r.growth->estimate_note), 15));
    }
    for (size_t i = 0; i < std::min(options.stacks, r.growth->stacks.size()); ++i) {
      const GrowingStack& g = r.growth->stacks[i];
      const std::string error =
          g.relative_standard_error ? fmt::format(" ± {:.0f}%", 100 * *g.relative_standard_error) : "";
      out += fmt::format("  +{}/s{}, {} live at the end, since {:.2f} s (R² {:.2f})\n",
                         format_bytes(static_cast<uint64_t>(g.bytes_per_s)), error, format_bytes(g.live_bytes),
                         g.since_s, g.r_squared);
      append_stack(out, r, g.stack, options.frames);
    }
    if (r.growth->stacks.size() > options.stacks) out += fmt::format("  ... {} more\n", r.growth->stacks.size() - options.stacks);
  }
}

// The device's stacks at its peak and its leaks.
void append_device_stacks(std::string& out, const Report& r, const TextOptions& options) {
  if (r.device && !r.device->top_stacks_at_peak.empty()) {
    out += fmt::format("\ndevice memory held at the device peak ({})\n", format_bytes(r.device->totals.peak_bytes));
    for (size_t i = 0; i < std::min(options.stacks, r.device->top_stacks_at_peak.size()); ++i) {
      const StackBytes& s = r.device->top_stacks_at_peak[i];
      out += fmt::format("  {} in {} blocks\n", format_bytes(s.bytes), format_count(s.blocks));
      append_stack(out, r, s.stack, options.frames);
    }
  }
  if (r.device && !r.device->leaks.empty()) {
    out += fmt::format("\ndevice leaks ({} in {} blocks)\n", format_bytes(r.device->totals.leaked_bytes),
                       format_count(r.device->totals.leaked_blocks));
    for (size_t i = 0; i < std::min(options.stacks, r.device->leaks.size()); ++i) {
      const Leak& l = r.device->leaks[i];
      out += fmt::format("  {} in {} blocks{}\n", format_bytes(l.bytes), format_count(l.blocks),
                         l.stage >= 0 ? " in stage " + r.stages[l.stage].path : "");
      append_stack(out, r, l.stack, options.frames);
    }
  }
}

}  // namespace

std::string render_text(const Report& r, const TextOptions& options) {
  std::string out;
  append_headline(out, r, options);
  append_fragmentation(out, r);
  append_resources(out, r, options);
  append_processes(out, r);
  append_stage_table(out, r);
  append_device_stage_table(out, r);
  append_held_and_leaked(out, r, options);
  append_growth(out, r, options);
  append_device_stacks(out, r, options);
  return out;
}

}  // namespace memstage::reports
