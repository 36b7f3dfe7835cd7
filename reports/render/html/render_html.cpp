// Builds the HTML report: the page's data as one JSON block plus the embedded template,
// stylesheet and script. Everything the page draws is prepared here in sizes a browser
// handles quickly: the flame graph's call tree is pruned of frames too small to see, the
// timeline is thinned to a few thousand points, lists are cut to their largest entries,
// and stage rows are the analysis's (past a thousand instances, grouped by path: stage_rows.h).
#include "reports/render/html/render_html.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "profiler/trace/block_vector.h"
#include "reports/model/thin_series.h"
#include "reports/render/frame_label.h"
#include "reports/render/html/call_tree.h"
#include "reports/render/model_json.h"
#include "reports/render/html/column_table.h"
#include "reports/render/html/html_assets.h"

namespace memstage::reports {
namespace {

using nlohmann::json;
using namespace model_json;

// A frame narrower than this share of its view's total is merged into its caller
// (0.05 %: under a pixel on a 2000 px wide flame graph).
constexpr double kFlamePruneShare = 0.0005;
// More call-tree nodes than this make the page slow to lay out; the threshold then grows.
constexpr size_t kFlameMaxNodes = 40000;
// The timeline keeps at most this many points (thin_timeline: each span's highest heap and
// RSS). The analysis keeps fewer; a report made otherwise may hold more.
constexpr size_t kTimelineMaxPoints = 4000;
constexpr size_t kMaxLeakGroups = 200;
constexpr size_t kMaxTopSites = 50;
constexpr size_t kMaxStageTopStacks = 10;

// Frames shown on the page, each stored once: [label, function, file, line, module,
// module_offset, kind, inlined, allocator]. Stacks and call-tree nodes refer to them by
// index. Frames of the report that differ only in what the page does not show (address)
// are one row; each frame of the report is looked up once.
class FrameTable {
 public:
  explicit FrameTable(const Report& report) : report_(report), row_of_frame_(report.frames.size(), kNone) {}

  uint32_t intern(FrameIndex id) {
    uint32_t& row = row_of_frame_[id];
    if (row == kNone) row = add(report_.frame(id));
    return row;
  }
  json take() { return std::move(rows_); }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t add(const Frame& frame) {
    std::string key = frame.function + '\x1f' + frame.file + '\x1f' + std::to_string(frame.line) + '\x1f' +
                      frame.module + '\x1f' + std::to_string(frame.module_offset) + '\x1f' + frame.kind +
                      (frame.inlined ? "\x1fi" : "") + (frame.allocator ? "\x1f" "a" : "");
    auto [it, added] = ids_.try_emplace(std::move(key), static_cast<uint32_t>(rows_.size()));
    if (added) {
      rows_.push_back(json::array({frame_label(frame), frame.function, frame.file, frame.line, frame.module,
                                   hex_address(frame.module_offset), frame.kind, frame.inlined, frame.allocator}));
    }
    return it->second;
  }

  const Report& report_;
  std::vector<uint32_t> row_of_frame_;  // by the report's frame index
  std::unordered_map<std::string, uint32_t> ids_;
  json rows_ = json::array();
};

constexpr size_t kMetrics = 4;  // live at peak, leaked, bytes allocated, allocations
static_assert(kMetrics % 2 == 0, "prune_flame marks half the metrics on each of two threads");
std::array<uint64_t, kMetrics> metrics_of(const StackStageFigures& f) {
  return {f.live_at_peak_bytes, f.leaked_bytes, f.bytes_allocated, f.allocations};
}

// Stage rows of each row and its descendants, for the page's "filter by stage", which
// includes nested stages.
std::vector<std::vector<int>> stage_subtrees(const std::vector<StageReport>& stages) {
  std::vector<std::vector<int>> subtree(stages.size());
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    for (int a = s, guard = 0; a >= 0 && a < static_cast<int>(stages.size()) && guard < 1000;
         a = stages[a].parent, ++guard) {
      subtree[a].push_back(s);
    }
  }
  return subtree;
}

// Each stack figure's node in the call tree. The tree is `made_before` where it was made
// of every stack of this report and every stack has a figure (then it is the one made
// here); else it is made here, of the stacks with figures, into `own`.
struct FigureLeaves {
  const CallTree* tree = nullptr;
  std::vector<uint32_t> leaf;  // by stack figure; the root for a stack the report lacks
};
FigureLeaves figure_leaves(const Report& report, const StacksCallTree* made_before, StacksCallTree& own) {
  std::vector<uint8_t> has_figure(report.stacks.size(), 0);
  for (const StackStageFigures& f : report.stack_figures) {
    if (f.stack < report.stacks.size()) has_figure[f.stack] = 1;
  }
  const bool every_stack_has_one = std::find(has_figure.begin(), has_figure.end(), 0) == has_figure.end();
  const StacksCallTree* made = made_before;
  if (!made || !made->every_stack || made->leaf_of_stack.size() != report.stacks.size() || !every_stack_has_one) {
    own = make_call_tree(StackLists::of(report), &has_figure);
    made = &own;
  }
  FigureLeaves leaves{&made->tree, std::vector<uint32_t>(report.stack_figures.size(), 0)};
  for (size_t i = 0; i < report.stack_figures.size(); ++i) {
    const StackIndex s = report.stack_figures[i].stack;
    if (s < report.stacks.size()) leaves.leaf[i] = made->leaf_of_stack[s];
  }
  return leaves;
}

// Views the page can show, as lists of stack figures: all stages, each stage with its
// nested ones, and what was outside every stage.
std::vector<std::vector<size_t>> flame_views(const Report& report) {
  std::vector<std::vector<size_t>> views(1);
  for (size_t i = 0; i < report.stack_figures.size(); ++i) views[0].push_back(i);
  if (report.stages.empty()) return views;  // every figure is outside the stages: the first view
  std::unordered_map<int, std::vector<size_t>> by_stage;
  for (size_t i = 0; i < report.stack_figures.size(); ++i) by_stage[report.stack_figures[i].stage].push_back(i);
  for (const auto& subtree : stage_subtrees(report.stages)) {
    std::vector<size_t> view;
    for (int s : subtree) {
      if (auto it = by_stage.find(s); it != by_stage.end()) view.insert(view.end(), it->second.begin(), it->second.end());
    }
    if (!view.empty()) views.push_back(std::move(view));
  }
  // Where every figure is outside the stages, that is the first view again: it marks nothing more.
  if (auto outside = by_stage.find(-1); outside != by_stage.end() && outside->second != views[0]) {
    views.push_back(outside->second);
  }
  return views;
}

struct FlamePruning {
  std::vector<uint8_t> kept;  // by call-tree node
  double share = kFlamePruneShare;
  size_t kept_count = 0;
};

constexpr size_t kHalfMetrics = kMetrics / 2;
// Each node's sums of half the metrics, in blocks of 1 MiB: blocks the size of those the
// analysis let go are made in their pages, where one list of tens of MiB took fresh ones
// (on a VM, a fault to the hypervisor each). Made without zeroing: mark_kept zeroes them
// before each view on the thread that marks with them.
using HalfSums = trace::BlockVector<std::array<uint64_t, kHalfMetrics>>;
HalfSums half_sums(size_t nodes) {
  HalfSums sums;
  sums.grow_for_overwrite_to(nodes);
  return sums;
}

// Marks the nodes that hold at least `share` of one view's total for one of the metrics
// [first_metric, first_metric + kHalfMetrics); a node's value includes its descendants',
// so its parents are marked too. Children are numbered after their parent, so going down
// the numbers a node's sum is whole when it is reached: it is marked and passed on to its
// parent in one pass.
void mark_kept(const Report& report, const CallTree& tree, const std::vector<uint32_t>& figure_leaf,
               const std::vector<size_t>& view, double share, size_t first_metric, HalfSums& sums,
               std::vector<uint8_t>& kept) {
  const size_t node_count = tree.parent.size();
  for (size_t n = 0; n < sums.size(); ++n) sums[n] = {};
  std::array<uint64_t, kHalfMetrics> total{};  // the root's sum
  for (size_t i : view) {
    const auto m = metrics_of(report.stack_figures[i]);
    for (size_t k = 0; k < kHalfMetrics; ++k) {
      sums[figure_leaf[i]][k] += m[first_metric + k];
      total[k] += m[first_metric + k];
    }
  }
  std::array<double, kHalfMetrics> least{};
  for (size_t k = 0; k < kHalfMetrics; ++k) least[k] = share * static_cast<double>(total[k]);
  for (size_t n = node_count - 1; n > 0; --n) {
    for (size_t k = 0; k < kHalfMetrics; ++k) {
      if (sums[n][k] > 0 && static_cast<double>(sums[n][k]) >= least[k]) {
        kept[n] = 1;
        break;
      }
    }
    for (size_t k = 0; k < kHalfMetrics; ++k) sums[tree.parent[n]][k] += sums[n][k];
  }
}

// Keeps a node when, in some view and for some metric, it holds at least the share; the
// share doubles until the kept nodes are few enough for the page. Half the metrics are
// marked on a second thread, each half with its own sums (together the memory one
// thread's sums of every metric took) and marks, joined after: the same marks. Both
// halves' lists are made here, so that they come from this thread's allocator arena,
// which holds the pages the analysis let go.
FlamePruning prune_flame(const Report& report, const CallTree& tree, const std::vector<uint32_t>& figure_leaf) {
  const auto views = flame_views(report);
  const size_t node_count = tree.parent.size();
  const auto mark_views = [&](size_t first_metric, double share, HalfSums& sums, std::vector<uint8_t>& kept) {
    for (const auto& view : views) mark_kept(report, tree, figure_leaf, view, share, first_metric, sums, kept);
  };
  HalfSums first_sums = half_sums(node_count), second_sums = half_sums(node_count);
  FlamePruning p;
  std::vector<uint8_t> kept_by_second;
  for (int attempt = 0; attempt < 20; ++attempt, p.share *= 2) {
    p.kept.assign(node_count, 0);
    p.kept[0] = 1;
    kept_by_second.assign(node_count, 0);
    std::future<void> second = std::async(std::launch::async, mark_views, kHalfMetrics, p.share,
                                          std::ref(second_sums), std::ref(kept_by_second));
    mark_views(0, p.share, first_sums, p.kept);
    second.get();
    for (size_t n = 0; n < node_count; ++n) p.kept[n] |= kept_by_second[n];
    p.kept_count = static_cast<size_t>(std::count(p.kept.begin(), p.kept.end(), 1));
    if (p.kept_count <= kFlameMaxNodes) break;
  }
  return p;
}

// The kept nodes renumbered (order, and so parent < child, is preserved), and each
// node's deepest kept ancestor (itself when kept): pruned frames become their caller's.
struct KeptNodes {
  std::vector<uint32_t> new_id;         // by call-tree node; UINT32_MAX when pruned
  std::vector<uint32_t> kept_ancestor;  // by call-tree node
  uint32_t count = 0;
};

KeptNodes renumber_kept(const CallTree& tree, const std::vector<uint8_t>& kept) {
  const size_t node_count = tree.parent.size();
  KeptNodes k{std::vector<uint32_t>(node_count, UINT32_MAX), std::vector<uint32_t>(node_count, 0), 0};
  for (size_t n = 0; n < node_count; ++n) {
    if (kept[n]) k.new_id[n] = k.count++;
  }
  for (size_t n = 1; n < node_count; ++n) {
    k.kept_ancestor[n] = kept[n] ? static_cast<uint32_t>(n) : k.kept_ancestor[tree.parent[n]];
  }
  return k;
}

// How many pruned nodes each kept one absorbed, so the page can draw the merged share as
// one "smaller frames" block instead of blank space: [node, count] where not 0.
json absorbed_json(const CallTree& tree, const std::vector<uint8_t>& kept, const KeptNodes& k) {
  std::vector<uint64_t> absorbed(k.count, 0);  // by new id
  for (size_t n = 1; n < tree.parent.size(); ++n) {
    if (!kept[n]) ++absorbed[k.new_id[k.kept_ancestor[n]]];
  }
  json out = json::array();
  for (uint32_t node = 0; node < k.count; ++node) {
    if (absorbed[node] > 0) out.push_back(json::array({node, absorbed[node]}));
  }
  return out;
}

// Figures summed per (kept node, stage): hashed while summing (a figure per stack and
// stage, hundreds of thousands), ordered once at the end (as many as kept nodes, about).
json merged_figures_json(const Report& report, const std::vector<uint32_t>& figure_leaf, const KeptNodes& k) {
  using Key = std::pair<uint32_t, int>;
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<uint64_t>{}((static_cast<uint64_t>(key.first) << 32) | static_cast<uint32_t>(key.second));
    }
  };
  std::unordered_map<Key, std::array<uint64_t, kMetrics>, KeyHash> merged;
  for (size_t i = 0; i < report.stack_figures.size(); ++i) {
    const auto& f = report.stack_figures[i];
    auto& m = merged[{k.new_id[k.kept_ancestor[figure_leaf[i]]], f.stage}];
    const auto v = metrics_of(f);
    for (size_t j = 0; j < kMetrics; ++j) m[j] += v[j];
  }
  std::vector<std::pair<Key, std::array<uint64_t, kMetrics>>> rows(merged.begin(), merged.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json figures = json::array();
  for (const auto& [key, m] : rows) figures.push_back(json::array({key.first, key.second, m[0], m[1], m[2], m[3]}));
  return figures;
}

// The flame graph but for its frames' rows in the page's frame table: all that only reads
// the report, so that the page's other lists are made beside it (page_data).
struct FlameLayout {
  json parents = json::array();    // by kept node: its parent's kept id (-1: the root)
  std::vector<FrameIndex> frames;  // by kept node after the root: the report's frame
  json figures, absorbed;
  size_t node_count = 0, kept_count = 0;
  double prune_share = 0;
};

FlameLayout flame_layout(const Report& report, const StacksCallTree* made_before) {
  StacksCallTree own;
  const FigureLeaves leaves = figure_leaves(report, made_before, own);
  const CallTree& tree = *leaves.tree;
  const std::vector<uint32_t>& figure_leaf = leaves.leaf;
  FlameLayout layout;
  layout.node_count = tree.parent.size();
  const FlamePruning pruning = prune_flame(report, tree, figure_leaf);
  const KeptNodes k = renumber_kept(tree, pruning.kept);
  layout.frames.reserve(k.count);
  for (size_t n = 0; n < layout.node_count; ++n) {
    if (!pruning.kept[n]) continue;
    layout.parents.push_back(n == 0 ? -1 : static_cast<int64_t>(k.new_id[tree.parent[n]]));
    if (n != 0) layout.frames.push_back(tree.frame[n]);
  }
  layout.figures = merged_figures_json(report, figure_leaf, k);
  layout.absorbed = absorbed_json(tree, pruning.kept, k);
  layout.kept_count = pruning.kept_count;
  layout.prune_share = pruning.share;
  return layout;
}

json flame_json(FlameLayout layout, FrameTable& frames) {
  json node_frames = json::array();
  if (!layout.parents.empty()) node_frames.push_back(-1);  // the root
  // Only kept nodes enter the frame table, so pruned frames cost the page nothing.
  for (FrameIndex f : layout.frames) node_frames.push_back(static_cast<int64_t>(frames.intern(f)));
  return json{{"parent", std::move(layout.parents)},
              {"frame", std::move(node_frames)},
              // [node, stage, live_at_peak_bytes, leaked_bytes, bytes_allocated, allocations]
              {"figures", std::move(layout.figures)},
              // [node, pruned descendants merged into it]
              {"absorbed", std::move(layout.absorbed)},
              {"total_nodes", layout.node_count - 1},
              {"pruned_nodes", layout.node_count - layout.kept_count},
              {"prune_share", layout.prune_share}};
}

json timeline_json(const Report& report) {
  const std::vector<TimelinePoint> points = thin_timeline(report.timeline, kTimelineMaxPoints);
  json t = json::array(), heap = json::array(), rss = json::array(), tracer = json::array(), stage = json::array();
  for (const TimelinePoint& p : points) {
    t.push_back(p.t_s);
    heap.push_back(p.heap_bytes);
    rss.push_back(p.rss_bytes);
    tracer.push_back(p.tracer_bytes);
    stage.push_back(p.stage);
  }
  return json{{"t_s", std::move(t)},
              {"heap_bytes", std::move(heap)},
              {"rss_bytes", std::move(rss)},
              {"tracer_bytes", std::move(tracer)},
              {"stage", std::move(stage)},
              {"points_in_report", report.timeline.size()}};
}

json stack_figure_json(StackIndex stack, const std::array<uint64_t, 5>& f) {
  return json{{"stack", stack},
              {"allocations", f[0]},
              {"bytes_allocated", f[1]},
              {"temporary_allocations", f[2]},
              {"live_at_peak_bytes", f[3]},
              {"leaked_bytes", f[4]}};
}

// The page's frame row of a stack's allocation site (null without one).
json site_json(const Report& report, StackIndex stack, FrameTable& frames) {
  if (stack >= report.stacks.size()) return nullptr;
  const auto site = allocation_site(report, report.stacks[stack]);
  return site ? json(frames.intern(*site)) : json(nullptr);
}

using SiteFigures = std::array<uint64_t, 5>;  // as stack_figure_json's
void add_figures(SiteFigures& sum, const StackStageFigures& f) {
  sum[0] += f.allocations;
  sum[1] += f.bytes_allocated;
  sum[2] += f.temporary_allocations;
  sum[3] += f.live_at_peak_bytes;
  sum[4] += f.leaked_bytes;
}

struct Site {
  StackIndex example = 0;  // its largest stack by bytes allocated
  uint64_t example_bytes = 0;
  bool has_example = false;
  size_t stacks = 0;
  SiteFigures figures{};
};

// The stack figures summed by allocation site. Figures go straight to their stack's site;
// per stack only its site and its bytes allocated (over its stages, for the example) are
// kept. A stack index the report lacks (none should) is summed apart.
struct SiteSums {
  std::vector<Site> rows;
  std::vector<uint32_t> site_of_stack;  // by stack; kNoSite where it has no figures
  std::vector<uint64_t> stack_bytes;    // by stack
  std::map<StackIndex, SiteFigures> unknown_stacks;
  size_t distinct_stacks = 0;
};
constexpr uint32_t kNoSite = UINT32_MAX;

// What a site is on the page: function, source line and module (two calls on one line
// are one site); a frame without a function, by its address in the module. The key is
// made once per frame, not once per stack.
SiteSums sum_by_site(const Report& report) {
  SiteSums sums{{}, std::vector<uint32_t>(report.stacks.size(), kNoSite), std::vector<uint64_t>(report.stacks.size()), {}, 0};
  std::vector<uint32_t> site_of_frame(report.frames.size(), kNoSite);
  std::unordered_map<std::string, uint32_t> site_of_key;
  const auto site_row = [&](FrameIndex frame) {
    uint32_t& row = site_of_frame[frame];
    if (row == kNoSite) {
      const Frame& f = report.frame(frame);
      std::string key = f.function.empty()
                            ? f.module + '\x1f' + std::to_string(f.module_offset)
                            : f.function + '\x1f' + f.file + '\x1f' + std::to_string(f.line) + '\x1f' + f.module;
      const auto [it, added] = site_of_key.try_emplace(std::move(key), static_cast<uint32_t>(sums.rows.size()));
      if (added) sums.rows.emplace_back();
      row = it->second;
    }
    return row;
  };
  FrameRoles roles(report);
  for (const StackStageFigures& f : report.stack_figures) {
    if (f.stack >= report.stacks.size()) {
      add_figures(sums.unknown_stacks[f.stack], f);
      continue;
    }
    uint32_t& row = sums.site_of_stack[f.stack];
    if (row == kNoSite) {
      ++sums.distinct_stacks;
      const auto site = roles.allocation_site(report.stacks[f.stack]);
      if (site) {
        row = site_row(*site);
      } else {  // a stack without frames is a site of its own
        row = static_cast<uint32_t>(sums.rows.size());
        sums.rows.emplace_back();
      }
      ++sums.rows[row].stacks;
    }
    add_figures(sums.rows[row].figures, f);
    sums.stack_bytes[f.stack] += f.bytes_allocated;
  }
  return sums;
}

// A site's example: its stack with the most bytes allocated, the lowest index of equals.
// A stack the report lacks is a site of its own.
void choose_examples(SiteSums& sums) {
  for (StackIndex stack = 0; stack < sums.site_of_stack.size(); ++stack) {
    if (sums.site_of_stack[stack] == kNoSite) continue;
    Site& site = sums.rows[sums.site_of_stack[stack]];
    if (!site.has_example || sums.stack_bytes[stack] > site.example_bytes) {
      site.example = stack;
      site.example_bytes = sums.stack_bytes[stack];
      site.has_example = true;
    }
  }
  for (const auto& [stack, figures] : sums.unknown_stacks) {
    ++sums.distinct_stacks;
    sums.rows.push_back(Site{stack, figures[1], true, 1, figures});
  }
}

// The largest sites by figure k (of SiteFigures), with their example stack listed.
json top_sites_by(std::vector<Site>& rows, size_t k, const Report& report, FrameTable& frames,
                  std::vector<StackIndex>& used_stacks) {
  std::sort(rows.begin(), rows.end(), [k](const Site& a, const Site& b) {
    return a.figures[k] != b.figures[k] ? a.figures[k] > b.figures[k] : a.example < b.example;
  });
  json out = json::array();
  for (size_t i = 0; i < rows.size() && i < kMaxTopSites && rows[i].figures[k] > 0; ++i) {
    json row = stack_figure_json(rows[i].example, rows[i].figures);
    row["site"] = site_json(report, rows[i].example, frames);
    row["stacks"] = rows[i].stacks;
    out.push_back(std::move(row));
    used_stacks.push_back(rows[i].example);
  }
  return out;
}

// Top allocation sites: stacks summed over stages and merged by their allocation site
// (the first program frame, or the script's line: allocation_site()), so that one site
// reached through many callers is one row; largest first by three measures. A row shows
// its largest stack by bytes allocated.
json top_sites_json(const Report& report, FrameTable& frames, std::vector<StackIndex>& used_stacks) {
  SiteSums sums = sum_by_site(report);
  choose_examples(sums);
  json by_bytes = top_sites_by(sums.rows, 1, report, frames, used_stacks);
  json by_count = top_sites_by(sums.rows, 0, report, frames, used_stacks);
  json by_temporary = top_sites_by(sums.rows, 2, report, frames, used_stacks);
  return json{{"by_bytes", std::move(by_bytes)},
              {"by_count", std::move(by_count)},
              {"by_temporary", std::move(by_temporary)},
              {"distinct_stacks", sums.distinct_stacks},
              {"distinct_sites", sums.rows.size()}};
}

// Leaks grouped by stack (a stack may leak in several stages), largest first.
json leaks_json(const Report& report, FrameTable& frames, std::vector<StackIndex>& used_stacks) {
  struct Group {
    StackIndex stack = 0;
    uint64_t bytes = 0, blocks = 0;
    std::vector<int> stages;
    bool runtime = false;
  };
  std::unordered_map<StackIndex, Group> groups;
  for (const auto& leak : report.leaks) {
    auto& g = groups[leak.stack];
    g.stack = leak.stack;
    g.bytes += leak.bytes;
    g.blocks += leak.blocks;
    g.runtime = leak.runtime;
    const int stage = leak.stage;
    if (std::find(g.stages.begin(), g.stages.end(), stage) == g.stages.end()) g.stages.push_back(stage);
  }
  std::vector<Group> sorted;
  sorted.reserve(groups.size());
  for (auto& [_, g] : groups) sorted.push_back(std::move(g));
  // The program's first, then what the runtime holds for the process's life.
  std::sort(sorted.begin(), sorted.end(), [](const Group& a, const Group& b) {
    if (a.runtime != b.runtime) return b.runtime;
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
  });
  json out = json::array();
  for (size_t i = 0; i < sorted.size() && i < kMaxLeakGroups; ++i) {
    out.push_back({{"stack", sorted[i].stack},
                   {"site", site_json(report, sorted[i].stack, frames)},
                   {"bytes", sorted[i].bytes},
                   {"blocks", sorted[i].blocks},
                   {"stages", sorted[i].stages},
                   {"runtime", sorted[i].runtime}});
    used_stacks.push_back(sorted[i].stack);
  }
  return json{{"groups", std::move(out)}, {"total_groups", sorted.size()}};
}

// Growth over time: the growing stacks with their series (at most 256 points each, the
// analysis's bound) for a small chart apiece. Null when the capture has no snapshots.
json growth_json(const Report& report, FrameTable& frames, std::vector<StackIndex>& used_stacks) {
  if (!report.growth) return nullptr;
  json stacks = json::array();
  for (const GrowingStack& g : report.growth->stacks) {
    json entry{{"stack", g.stack}, {"site", site_json(report, g.stack, frames)}};
    put_growth_fit(entry, g);
    put_growth_series(entry, g);
    stacks.push_back(std::move(entry));
    used_stacks.push_back(g.stack);
  }
  return json{{"interval_s", report.growth->interval_s},
              {"snapshots", report.growth->snapshots},
              {"estimate_note", report.growth->estimate_note},
              {"stacks", std::move(stacks)}};
}

json stack_bytes_json(const std::vector<StackBytes>& stacks, std::vector<StackIndex>& used_stacks) {
  json out = json::array();
  for (size_t i = 0; i < stacks.size() && i < kMaxStageTopStacks; ++i) {
    out.push_back({{"stack", stacks[i].stack}, {"bytes", stacks[i].bytes}, {"blocks", stacks[i].blocks}});
    used_stacks.push_back(stacks[i].stack);
  }
  return out;
}

// The job (several processes on one clock): its peaks, its timeline as columns with one
// column of heap per process (for the stacked chart), the stacks held at its peak.
json job_json(const Report& report, std::vector<StackIndex>& used_stacks) {
  const JobReport& job = report.job;
  json t = json::array(), heap = json::array(), rss = json::array(), pss = json::array();
  json per_process = json::array();
  for (size_t i = 0; i < report.processes.size(); ++i) per_process.push_back(json::array());
  bool any_pss = false;
  for (const JobTimelinePoint& p : job.timeline) {
    t.push_back(p.t_s);
    heap.push_back(p.heap_bytes);
    rss.push_back(p.rss_bytes);
    pss.push_back(optional_json<json>(p.pss_bytes));
    any_pss = any_pss || p.pss_bytes.has_value();
    for (size_t i = 0; i < per_process.size(); ++i) {
      per_process[i].push_back(i < p.process_heap_bytes.size() ? p.process_heap_bytes[i] : 0);
    }
  }
  json tops = json::array();
  for (size_t i = 0; i < job.top_stacks_at_peak.size() && i < kMaxStageTopStacks; ++i) {
    const JobStack& s = job.top_stacks_at_peak[i];
    tops.push_back({{"process", s.process}, {"stack", s.held.stack}, {"bytes", s.held.bytes}, {"blocks", s.held.blocks}});
    used_stacks.push_back(s.held.stack);
  }
  json out{{"timeline",
            {{"t_s", std::move(t)},
             {"heap_bytes", std::move(heap)},
             {"rss_bytes", std::move(rss)},
             {"pss_bytes", any_pss ? std::move(pss) : json(nullptr)},
             {"process_heap_bytes", std::move(per_process)}}},
           {"top_stacks_at_peak", std::move(tops)}};
  put_job_peaks(out, job);
  return out;
}

int worst_stage(const std::vector<StageReport>& stages) {
  int worst = -1;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    // A stage's peak is the process's while it was open, so a parent ties with the child
    // where the peak happened; the child says more.
    const auto peak = stages[s].figures.peak_heap_bytes;
    if (worst < 0 || peak > stages[worst].figures.peak_heap_bytes ||
        (peak == stages[worst].figures.peak_heap_bytes && stages[s].depth > stages[worst].depth)) {
      worst = s;
    }
  }
  return worst;
}

// How the run went and how it was recorded, and the run's figures.
void add_run(json& data, const Report& report) {
  data["format"] = "memstage.html-data/2";  // 2: stage rows as a column table
  data["command"] = report.command;
  data["exit_code"] = optional_json<json>(report.exit_code);
  data["leaks_measured"] = report.leaks_measured;
  data["runtime_held"] = {{"bytes", report.runtime_held.bytes}, {"blocks", report.runtime_held.blocks}};
  data["fragmentation_headline_free_bytes"] = kFragmentationHeadlineFreeBytes;
  data["attached"] = report.attached;
  data["signal"] = optional_json<json>(report.signal);
  data["duration_s"] = report.duration_s;
  data["allocator"] = report.allocator;
  data["mode"] = report.mode;
  data["sampling"] = sampling_json<json>(report.sampling);
  data["python"] = python_json<json>(report.python);
  data["totals"] = memory_figures_json<json>(report.totals);
  data["warnings"] = report.warnings;
  if (!report.capture_notes.empty()) data["capture_notes"] = report.capture_notes;
}

// The stage rows, the worst of them, and how instances were grouped into rows (past a
// thousand, by path: reports/analysis/stage_rows.h). A row's stacks at its peak are not
// shown on the page, and were a seventh of a long run's page: they stay in report.json.
void add_stages(json& data, const Report& report, std::vector<StackIndex>& used_stacks) {
  data["worst_stage"] = worst_stage(report.stages);
  data["stage_instances"] = report.stage_grouping ? report.stage_grouping->instances : report.stages.size();
  data["stage_grouping"] = report.stage_grouping ? json(report.stage_grouping->note) : json(nullptr);
  json stages = json::array();
  for (const StageReport& s : report.stages) {
    stages.push_back({{"name", s.name},
                      {"instances", s.instances},
                      {"open_s", stage_open_s(s)},
                      {"path", s.path},
                      {"parent", s.parent},
                      {"depth", s.depth},
                      {"start_s", s.start_s},
                      {"end_s", s.end_s},
                      {"closed", s.closed},
                      {"retained_bytes", s.retained_bytes},
                      {"figures", memory_figures_json<json>(s.figures)},
                      {"device", s.device ? device_figures_json<json>(*s.device) : json(nullptr)}});
  }
  // As one table (column_table.h): a long run's thousands of rows repeat the same keys.
  data["stages"] = column_table(stages);
  data["top_stacks_at_peak"] = stack_bytes_json(report.top_stacks_at_peak, used_stacks);
}

// Device memory (CUDA) over time, a step line beside the heap: every change is a point
// (the analysis already thinned a long series).
json device_json(const Report& report) {
  if (!report.device) return nullptr;
  json t = json::array(), bytes = json::array();
  for (const auto& p : report.device->timeline) {
    t.push_back(p.t_s);
    bytes.push_back(p.bytes);
  }
  json device = device_figures_json<json>(report.device->totals);
  device["timeline"] = {{"t_s", std::move(t)}, {"bytes", std::move(bytes)}};
  return device;
}

// Full stacks only for what the page lists (leaks, growth, top sites, stacks at peaks).
json listed_stacks_json(const Report& report, std::vector<StackIndex>& used_stacks, FrameTable& frames) {
  std::sort(used_stacks.begin(), used_stacks.end());
  used_stacks.erase(std::unique(used_stacks.begin(), used_stacks.end()), used_stacks.end());
  json stacks = json::object();
  for (StackIndex s : used_stacks) {
    if (s >= report.stacks.size()) continue;
    json ids = json::array();
    for (FrameIndex f : report.frames_of(report.stacks[s])) ids.push_back(frames.intern(f));
    stacks[std::to_string(s)] = std::move(ids);
  }
  return stacks;
}

json page_data(const Report& report, const StacksCallTree* call_tree) {
  FrameTable frames(report);
  std::vector<StackIndex> used_stacks;
  json data;
  add_run(data, report);
  add_stages(data, report, used_stacks);
  data["timeline"] = timeline_json(report);
  data["device"] = device_json(report);
  json processes = json::array();
  for (const auto& p : report.processes) processes.push_back(process_json<json>(p));
  data["processes"] = std::move(processes);
  data["job"] = report.processes.size() > 1 ? job_json(report, used_stacks) : json(nullptr);
  // Frames enter the table in this order: leaks, growth, top sites, flame graph, stacks.
  // The three lists on a second thread while this one lays out the flame graph, most of
  // the page's making on a large report (its large lists from this thread's allocator
  // arena, which holds the pages the analysis let go); the report is only read.
  json leaks, growth, top_sites;
  std::future<void> lists = std::async(std::launch::async, [&] {
    leaks = leaks_json(report, frames, used_stacks);
    growth = growth_json(report, frames, used_stacks);
    top_sites = top_sites_json(report, frames, used_stacks);
  });
  FlameLayout flame = flame_layout(report, call_tree);
  lists.get();
  data["leaks"] = std::move(leaks);
  data["growth"] = std::move(growth);
  data["top_sites"] = std::move(top_sites);
  data["flame"] = flame_json(std::move(flame), frames);
  data["stacks"] = listed_stacks_json(report, used_stacks, frames);
  data["stack_count"] = report.stacks.size();
  // [label, function, file, line, module, module_offset, kind, inlined, allocator]
  data["frames"] = frames.take();
  return data;
}

// JSON that is safe inside <script>: '<', '>' and '&' (so no "</script" or "<!--" can
// appear) and U+2028/U+2029 (line terminators in older JS) become \u escapes. They can
// only occur inside JSON strings, where the escapes mean the same characters.
std::string script_safe_json(const json& data) {
  const std::string raw = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 16);
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < raw.size() && raw[i + 1] == '\x80' && (raw[i + 2] == '\xA8' || raw[i + 2] == '\xA9')) {
      out += raw[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_html(const Report& report, const StacksCallTree* call_tree) {
  const std::string data = script_safe_json(page_data(report, call_tree));
  // The template is ours and fixed; each placeholder is replaced once, in order, so text
  // inside the data can never be taken for a placeholder.
  const std::string_view page = html_assets::report_template_html;
  const std::pair<std::string_view, std::string_view> parts[] = {
      {"{{STYLE}}", html_assets::report_css},
      {"{{DATA}}", data},
      {"{{SCRIPT}}", html_assets::report_js},
  };
  std::string out;
  out.reserve(page.size() + data.size() + html_assets::report_css.size() + html_assets::report_js.size());
  size_t at = 0;
  for (const auto& [placeholder, content] : parts) {
    const size_t found = page.find(placeholder, at);
    if (found == std::string_view::npos) continue;  // a template without it; nothing to insert
    out.append(page.substr(at, found - at));
    out.append(content);
    at = found + placeholder.size();
  }
  out.append(page.substr(at));
  return out;
}

}  // namespace memstage::reports
