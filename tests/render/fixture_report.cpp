// Builds the renderers' fixture: a made-up run of a text classifier whose vectorize stage
// densifies a matrix (the story of docs/architecture.md), deterministic for a given seed.
#include "tests/render/fixture_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "reports/analysis/allocator_frames.h"
#include "reports/analysis/stage_rows.h"
#include "reports/model/frame_interner.h"
#include "reports/model/stack_interner.h"

namespace memstage::tests {
namespace {

using namespace memstage::reports;

constexpr uint64_t MiB = 1024 * 1024;

struct StageSpec {
  const char* name;
  int parent;
  double start_s, end_s;
  const char* function;  // the function a stack allocating in this stage passes through
};

// Sorted by start; parents before children.
const StageSpec kStages[] = {
    {"load", -1, 0.0, 1.5, "load_corpus"},
    {"tokenize", -1, 1.5, 3.0, "tokenize_lines"},
    {"vectorize", -1, 3.0, 7.5, "vectorize_corpus"},
    {"fit_transform", 2, 3.0, 5.0, "TfidfVectorizer::fit_transform"},
    {"toarray", 2, 5.0, 7.5, "csr_matrix::toarray"},
    {"train", -1, 7.5, 11.5, "train_model"},
    {"split", 5, 7.5, 8.5, "split_dataset"},
    {nullptr /* the hostile name */, 5, 8.5, 10.0, "augment_batch"},
    {"epoch", 7, 8.6, 9.8, "run_epoch"},
    {"evaluate", -1, 11.5, 12.5, "evaluate_model"},
};
constexpr int kStageCount = sizeof kStages / sizeof kStages[0];
constexpr double kDurationS = 12.5;

// Live heap over the run, in bytes: loads, tokenizes, densifies (the peak), trains.
double heap_shape(double t) {
  const double mb = static_cast<double>(MiB);
  if (t < 1.5) return (20 + 380 * t / 1.5) * mb;
  if (t < 3.0) return (400 + 500 * (t - 1.5) / 1.5) * mb;
  if (t < 5.0) return (900 + 500 * (t - 3.0) / 2.0) * mb;
  if (t < 6.8) return (1400 + 3300 * std::min(1.0, (t - 5.0) / 1.2)) * mb;
  if (t < 7.5) return (4700 - 2000 * (t - 6.8) / 0.7) * mb;
  if (t < 8.5) return (2700 + 700 * (t - 7.5)) * mb;
  if (t < 11.5) return (3000 + 250 * std::sin((t - 8.5) * 9.0)) * mb;
  return (1000 - 300 * (t - 11.5)) * mb;
}

Frame native(std::string function, std::string file, int line, std::string module, uint64_t base, uint64_t offset) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.module = std::move(module);
  f.module_offset = offset;
  f.address = base + offset;
  f.allocator = is_allocation_plumbing(f.function, f.module);  // as the analysis sets it
  return f;
}

Frame python(std::string function, std::string file, int line) {
  Frame f;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.module = f.file;
  f.kind = "python";
  return f;
}

const std::string kProgram = "/opt/textclf/bin/textclf";
const std::string kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const std::string kLibstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
const std::string kLibpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
const std::string kLibtext = "/opt/textclf/lib/libtextfeatures.so";
constexpr uint64_t kProgramBase = 0x555555554000, kLibcBase = 0x7ffff7c00000, kLibstdcxxBase = 0x7ffff7e00000,
                   kLibpythonBase = 0x7ffff6a00000, kLibtextBase = 0x7ffff5000000;

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {}
  uint64_t uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  // Innermost first: allocator (and for some, the C++ library), site, helpers, the stage's
  // function, the pipeline, main.
  // Frames go into the report's frame table through `frames`.
  std::vector<FrameIndex> stack(FrameInterner& frames, int stage, size_t index, size_t helper_pool) {
    std::vector<FrameIndex> s;
    struct {
      std::vector<FrameIndex>& s;
      FrameInterner& frames;
      void push_back(Frame frame) { s.push_back(frames.intern(std::move(frame))); }
    } f{s, frames};
    if (chance(0.5)) {
      f.push_back(native("operator new(unsigned long)", "", 0, kLibstdcxx, kLibstdcxxBase, 0xae1c0));
    } else {
      f.push_back(native("malloc", "malloc.c", 3287, kLibc, kLibcBase, 0x9a0b0));
    }
    // The C++ standard library between operator new and the program, as in real stacks:
    // never an allocation site. (Not in the first stacks, whose site the fixture renames.)
    if (index >= 8 && index % 3 == 1) {
      f.push_back(native("std::__new_allocator<double>::allocate(unsigned long, void const*)",
                         "/usr/include/c++/12/bits/new_allocator.h", 137, kLibtext, kLibtextBase, 0x7f00));
      f.push_back(native("void std::vector<double, std::allocator<double> >::_M_realloc_insert<double const&>("
                         "__gnu_cxx::__normal_iterator<double*, std::vector<double, std::allocator<double> > >, "
                         "double const&)",
                         "/usr/include/c++/12/bits/vector.tcc", 464, kLibtext, kLibtextBase, 0x7f40));
    } else if (index >= 8 && index % 3 == 2) {
      f.push_back(native("void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
                         "_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)",
                         "", 0, kLibstdcxx, kLibstdcxxBase, 0x14a5c0));
    }
    f.push_back(native("alloc_site_" + std::to_string(index % 97), "src/features/alloc.cpp", 100 + int(index % 97),
                       kLibtext, kLibtextBase, 0x1000 + 0x40 * (index % 97)));
    const int helpers = static_cast<int>(uniform(0, helper_pool > 200 ? 12 : 3));
    for (int h = 0; h < helpers; ++h) {
      const uint64_t id = uniform(0, helper_pool - 1);
      if (chance(0.08)) {
        // Stripped code: no symbol, shown as module+offset.
        f.push_back(native("", "", 0, kLibpython, kLibpythonBase, 0x20000 + 0x10 * id));
      } else if (chance(0.1)) {
        f.push_back(python("helper_" + std::to_string(id), "textclf/helpers.py", 10 + int(id)));
      } else {
        Frame inl = native("inline_helper_" + std::to_string(id), "src/features/util.h", 7, kLibtext, kLibtextBase,
                           0x8000 + 0x20 * id);
        inl.inlined = chance(0.2);
        f.push_back(std::move(inl));
      }
    }
    const StageSpec& spec = kStages[stage < 0 ? 0 : stage];
    f.push_back(native(spec.function, "src/pipeline.cpp", 40 + 10 * (stage + 1), kProgram, kProgramBase,
                       0x4000 + 0x100 * (stage + 1)));
    if (stage >= 5) f.push_back(native("train_pipeline", "src/pipeline.cpp", 300, kProgram, kProgramBase, 0x5000));
    f.push_back(native("run_pipeline(Options const&)", "src/pipeline.cpp", 20, kProgram, kProgramBase, 0x3000));
    f.push_back(native("main", "src/main.cpp", 12, kProgram, kProgramBase, 0x2000));
    f.push_back(native("__libc_start_main", "", 0, kLibc, kLibcBase, 0x271c0));
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

std::string stage_path(const std::vector<StageReport>& stages, int s) {
  std::string path = stages[s].name;
  for (int p = stages[s].parent; p >= 0; p = stages[p].parent) path = stages[p].name + "/" + path;
  return path;
}

}  // namespace

Report make_fixture_report(const FixtureOptions& options) {
  Generator gen(options.seed);
  Report r;
  r.command = {"/opt/textclf/bin/textclf", "train", "--data", "corpus-25k.txt", "--pipeline", "naive"};
  r.exit_code = 0;
  r.duration_s = kDurationS;
  r.allocator = "glibc";
  r.mode = "full";

  for (int s = 0; s < kStageCount; ++s) {
    StageReport st;
    st.name = kStages[s].name ? kStages[s].name : kHostileStageName;
    st.parent = kStages[s].parent;
    st.depth = st.parent < 0 ? 0 : r.stages[st.parent].depth + 1;
    st.start_s = kStages[s].start_s;
    st.end_s = kStages[s].end_s;
    st.closed = s != kStageCount - 1;  // "evaluate" never ended: the run's end closes it
    r.stages.push_back(std::move(st));
  }
  for (int s = 0; s < kStageCount; ++s) r.stages[s].path = stage_path(r.stages, s);

  // Timeline, and the peaks it shows.
  double rss = 30.0 * MiB;
  for (size_t i = 0; i < options.timeline_points; ++i) {
    const double t = kDurationS * static_cast<double>(i) / static_cast<double>(options.timeline_points - 1);
    const double heap = std::max(0.0, heap_shape(t) * (1.0 + 0.01 * std::sin(static_cast<double>(i) * 1.7)));
    // glibc keeps freed memory for a while: RSS follows the heap up at once, down slowly.
    rss = std::max(heap * 1.09 + 140.0 * MiB, rss * 0.97);
    TimelinePoint p;
    p.t_s = t;
    p.heap_bytes = static_cast<uint64_t>(heap);
    p.rss_bytes = static_cast<uint64_t>(rss);
    for (int s = 0; s < kStageCount; ++s) {
      if (t >= r.stages[s].start_s && t < r.stages[s].end_s) p.stage = s;  // innermost wins (later in order)
    }
    r.timeline.push_back(p);
  }
  auto peak_in = [&](double from, double to, uint64_t TimelinePoint::*field) {
    const TimelinePoint* best = nullptr;
    for (const auto& p : r.timeline) {
      if (p.t_s >= from && p.t_s <= to && (!best || p.*field > best->*field)) best = &p;
    }
    return best;
  };

  // Stacks and their figures.
  const size_t helper_pool = options.stack_count > 1000 ? 5000 : 40;
  r.stacks.reserve(options.stack_count);
  FrameInterner frames(r.frames);
  StackInterner stacks(r.stack_nodes);
  for (size_t i = 0; i < options.stack_count; ++i) {
    // Stage: spread over all, weighted to the busy ones; the first few stacks are special.
    const int stage = i < 8 ? static_cast<int>(std::vector<int>{4, 0, 1, 7, 3, 6, 8, 9}[i])
                            : static_cast<int>(gen.uniform(0, kStageCount - 1));
    r.stacks.push_back(stacks.stack(gen.stack(frames, stage, i, helper_pool)));
    StackStageFigures f;
    f.stack = static_cast<StackIndex>(i);
    f.stage = stage;
    f.allocations = gen.uniform(1, 4000);
    f.bytes_allocated = f.allocations * gen.uniform(16, 64 * 1024);
    f.temporary_allocations = gen.uniform(0, f.allocations / 2);
    // Live at the peak (6.8 s, inside toarray): what earlier stages kept plus toarray's own.
    if (stage <= 4 && gen.chance(0.6)) f.live_at_peak_bytes = gen.uniform(0, f.bytes_allocated / 4);
    r.stack_figures.push_back(f);
  }
  auto& figures = r.stack_figures;
  // Stacks share frames: changing one stack's frame is a new frame for that stack.
  auto rename_site = [&](size_t i, const std::string& function) {
    if (i >= r.stacks.size()) return;
    std::vector<FrameIndex> ids;
    for (FrameIndex id : r.frames_of(r.stacks[i])) ids.push_back(id);
    Frame site = r.frame(ids[1]);
    site.function = function;
    ids[1] = frames.intern(std::move(site));
    r.stacks[i] = stacks.stack(ids);
  };
  if (options.stack_count >= 8) {
    // The densified matrix: one huge block, live at the peak.
    rename_site(0, "numpy::PyArray_NewFromDescr");
    figures[0].allocations = 2;
    figures[0].bytes_allocated = 3200 * MiB;
    figures[0].live_at_peak_bytes = 3200 * MiB;
    figures[0].temporary_allocations = 0;
    // The corpus, held through the whole run.
    rename_site(1, "read_whole_file");
    figures[1].bytes_allocated = 380 * MiB;
    figures[1].live_at_peak_bytes = 380 * MiB;
    rename_site(2, "leak_a");
    figures[2].leaked_bytes = 48 * MiB;
    rename_site(3, "leak_b");
    figures[3].leaked_bytes = 6 * MiB;
    rename_site(4, kAwkwardFunctionName);
    figures[4].live_at_peak_bytes = 300 * MiB;
    figures[5].leaked_bytes = 512 * 1024;
    // A leak whose innermost frames have no symbols.
    rename_site(6, "");
    figures[6].leaked_bytes = 2 * MiB;
    for (size_t i : {2, 3, 5, 6}) figures[i].bytes_allocated = std::max(figures[i].bytes_allocated, figures[i].leaked_bytes);
  }

  // Leaks, largest first.
  for (const auto& f : figures) {
    if (f.leaked_bytes == 0) continue;
    Leak leak;
    leak.bytes = f.leaked_bytes;
    leak.blocks = std::max<uint64_t>(1, f.leaked_bytes / (64 * 1024));
    leak.stage = f.stage;
    leak.stack = f.stack;
    r.leaks.push_back(leak);
  }
  std::sort(r.leaks.begin(), r.leaks.end(), [](const Leak& a, const Leak& b) { return a.bytes > b.bytes; });

  // Per-stage figures.
  auto fill_breakdown = [](MemoryFigures& m, bool estimated) {
    auto& b = m.rss_breakdown;
    b.live_bytes = m.peak_heap_bytes;
    b.allocator_in_use_bytes = b.live_bytes + b.live_bytes / 32;
    b.allocator_resident_bytes = b.allocator_in_use_bytes + b.live_bytes / 9;
    b.tracer_bytes = 24 * MiB;
    b.rss_bytes = std::max(m.peak_rss_bytes, b.allocator_resident_bytes + b.tracer_bytes + 90 * MiB);
    b.estimated = estimated;
    m.fragmentation.ratio =
        b.allocator_resident_bytes ? 1.0 - double(b.live_bytes) / double(b.allocator_resident_bytes) : 0.0;
    m.fragmentation.estimated = estimated;
  };
  for (int s = 0; s < kStageCount; ++s) {
    auto& st = r.stages[s];
    auto& m = st.figures;
    if (const auto* p = peak_in(st.start_s, st.end_s, &TimelinePoint::heap_bytes)) {
      m.peak_heap_bytes = p->heap_bytes;
      m.peak_heap_time_s = p->t_s;
    }
    if (const auto* p = peak_in(st.start_s, st.end_s, &TimelinePoint::rss_bytes)) m.peak_rss_bytes = p->rss_bytes;
    std::vector<StackBytes> mine;
    for (const auto& f : figures) {
      if (f.stage != s) continue;
      m.allocations += f.allocations;
      m.bytes_allocated += f.bytes_allocated;
      m.temporary_allocations += f.temporary_allocations;
      m.leaked_bytes += f.leaked_bytes;
      mine.push_back({f.stack, f.bytes_allocated, f.allocations});
    }
    for (const auto& l : r.leaks) m.leaked_blocks += l.stage == s ? l.blocks : 0;
    m.frees = m.allocations - std::min(m.allocations, m.leaked_blocks);
    st.retained_bytes = m.leaked_bytes + (s == 0 ? 380 * MiB : s == 4 ? 1200 * MiB : m.bytes_allocated / 50);
    std::sort(mine.begin(), mine.end(), [](const StackBytes& a, const StackBytes& b) { return a.bytes > b.bytes; });
    mine.resize(std::min<size_t>(mine.size(), 5));
    st.top_stacks_at_peak = std::move(mine);
    fill_breakdown(m, /*estimated=*/s == kStageCount - 1);
  }

  // Totals.
  auto& t = r.totals;
  const auto* heap_peak = peak_in(0, kDurationS, &TimelinePoint::heap_bytes);
  t.peak_heap_bytes = heap_peak->heap_bytes;
  t.peak_heap_time_s = heap_peak->t_s;
  t.peak_rss_bytes = peak_in(0, kDurationS, &TimelinePoint::rss_bytes)->rss_bytes;
  for (const auto& f : figures) {
    t.allocations += f.allocations;
    t.bytes_allocated += f.bytes_allocated;
    t.temporary_allocations += f.temporary_allocations;
    t.leaked_bytes += f.leaked_bytes;
  }
  for (const auto& l : r.leaks) t.leaked_blocks += l.blocks;
  t.frees = t.allocations - t.leaked_blocks;
  t.mmap_peak_bytes = 64 * MiB;
  fill_breakdown(t, false);
  for (const auto& f : figures) {
    if (f.live_at_peak_bytes) r.top_stacks_at_peak.push_back({f.stack, f.live_at_peak_bytes, 1});
  }
  std::sort(r.top_stacks_at_peak.begin(), r.top_stacks_at_peak.end(),
            [](const StackBytes& a, const StackBytes& b) { return a.bytes > b.bytes; });
  if (r.top_stacks_at_peak.size() > 20) r.top_stacks_at_peak.resize(20);

  // Growth over time: leak_a and leak_b's stacks rise steadily from 0.5 s to the end, with
  // some churn around the line; snapshots every 0.1 s.
  GrowthReport growth;
  growth.interval_s = 0.1;
  std::mt19937 churn(options.seed);
  for (size_t k : {2, 3}) {
    GrowingStack g;
    g.stack = figures[k].stack;
    g.since_s = 0.5;
    g.bytes_per_s = static_cast<double>(figures[k].leaked_bytes) / (kDurationS - g.since_s);
    g.r_squared = 0.97;
    for (int i = 0; i <= 125; ++i) {
      const double t = 0.1 * i;
      const double line = t < g.since_s ? 0 : 1 + g.bytes_per_s * (t - g.since_s);
      const double noise = t < g.since_s ? 0 : std::uniform_real_distribution<double>(0, 0.04)(churn) * line;
      g.series.push_back(GrowthPoint{t, static_cast<uint64_t>(line + noise)});
    }
    g.live_bytes = g.series.back().live_bytes;
    growth.stacks.push_back(std::move(g));
  }
  growth.snapshots = growth.stacks.front().series.size();
  r.growth = std::move(growth);

  ProcessReport main_process;
  main_process.pid = 31337;
  main_process.parent_pid = 31000;
  main_process.command = r.command;
  main_process.peak_heap_bytes = t.peak_heap_bytes;
  main_process.peak_rss_bytes = t.peak_rss_bytes;
  ProcessReport child;
  child.pid = 31352;
  child.parent_pid = 31337;
  child.command = {"/usr/bin/gzip", "-dc", "corpus-25k.txt.gz"};
  child.peak_heap_bytes = 3 * MiB;
  child.peak_rss_bytes = 9 * MiB;
  r.processes = {main_process, child};
  r.warnings = {"stage 'evaluate' was never ended; it closes at the end of the run"};
  return r;
}

void add_loop_stages(Report& r, size_t batches) {
  // The instances as the analysis sees them, then grouped into rows as it groups them
  // (reports/analysis/stage_rows.h): the fixture's own stages first, each a row still.
  const double start_s = r.duration_s;
  std::vector<StageReport> instances = std::move(r.stages);
  std::vector<StageInstanceKey> keys;
  for (size_t i = 0; i < instances.size(); ++i) {
    // The fixture's paths are distinct from the loop's two (numbered 0 and 1).
    keys.push_back(StageInstanceKey{static_cast<uint32_t>(2 + i), instances[i].figures.peak_heap_bytes});
  }
  std::vector<Leak> leaks;
  std::vector<StackStageFigures> figures;
  for (size_t i = 0; i < batches; ++i) {
    const double t = start_s + 0.001 * static_cast<double>(i);
    for (int nested = 0; nested < 2; ++nested) {
      StageReport st;
      st.name = nested ? "forward" : "serve_batch";
      st.path = nested ? "serve_batch/forward" : "serve_batch";
      st.parent = nested ? static_cast<int>(instances.size()) - 1 : -1;
      st.depth = nested;
      st.start_s = t + 0.0001 * nested;
      st.end_s = t + 0.0009;
      st.figures.peak_heap_bytes = 200 * MiB + (i % 97) * 4096;
      st.figures.peak_heap_time_s = t + 0.0005;
      st.figures.peak_rss_bytes = 400 * MiB;
      st.figures.allocations = 10;
      st.figures.frees = 9;
      st.figures.bytes_allocated = 10 * 4096;
      st.figures.leaked_bytes = nested ? 4096 : 0;
      st.figures.leaked_blocks = nested ? 1 : 0;
      st.retained_bytes = st.figures.leaked_bytes;
      st.top_stacks_at_peak = {StackBytes{static_cast<StackIndex>(i % r.stacks.size()), 4096, 1}};
      const int index = static_cast<int>(instances.size());
      keys.push_back(StageInstanceKey{static_cast<uint32_t>(nested), st.figures.peak_heap_bytes});
      instances.push_back(std::move(st));
      StackStageFigures f;
      f.stack = static_cast<StackIndex>((i * 7 + nested) % r.stacks.size());
      f.stage = index;
      f.allocations = 10;
      f.bytes_allocated = 10 * 4096;
      f.leaked_bytes = nested ? 4096 : 0;
      figures.push_back(f);
      if (nested) leaks.push_back(Leak{4096, 1, index, f.stack});
      r.totals.allocations += 10;
      r.totals.bytes_allocated += 10 * 4096;
      r.totals.leaked_bytes += f.leaked_bytes;
      r.totals.leaked_blocks += nested;
    }
    TimelinePoint p;
    p.t_s = t + 0.0005;
    p.heap_bytes = 200 * MiB + (i % 97) * 4096;
    p.rss_bytes = 400 * MiB;
    p.stage = static_cast<int>(instances.size()) - 1;
    r.timeline.push_back(p);
  }
  StageRows rows(keys);
  for (size_t i = 0; i < instances.size(); ++i) rows.add(i, std::move(instances[i]));
  r.stages = rows.take_rows();
  r.stage_grouping = rows.grouping();
  // The fixture's own figures name its stages, rows of their own before the loop's.
  for (StackStageFigures& f : r.stack_figures) f.stage = rows.row_of(f.stage);
  for (Leak& l : r.leaks) l.stage = rows.row_of(l.stage);
  for (TimelinePoint& p : r.timeline) p.stage = rows.row_of(p.stage);
  for (StackStageFigures& f : figures) {
    f.stage = rows.row_of(f.stage);
    r.stack_figures.push_back(f);
  }
  for (Leak& l : leaks) {
    l.stage = rows.row_of(l.stage);
    r.leaks.push_back(l);
  }
  if (r.ram_limit) r.ram_limit->stage = rows.row_of(r.ram_limit->stage);
  r.duration_s = start_s + 0.001 * static_cast<double>(batches);
}

}  // namespace memstage::tests
