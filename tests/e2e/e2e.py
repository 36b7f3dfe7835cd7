#!/usr/bin/env python3
"""End-to-end tests of memstage: real programs under `memstage run`, their reports checked
against what the programs know about themselves.

usage: e2e.py SCENARIO --memstage PATH --programs DIR --work DIR [--validator PATH]
       e2e.py --list

One scenario per CTest test, e2e.NAME for each function scenario_NAME under @scenario (what
they share is tests/lib/memstage_scenarios.py). A new scenario is that one function, its
docstring what it checks: @scenario(timeout_s=240) where it needs longer than 120 s,
@scenario(may_skip=True) where it may `raise SystemExit(SKIP)`. The programs live in
tests/e2e/programs; each writes its own truth (sizes, counts, peaks, source lines, pids)
to the JSON file named by its first argument. Every report.json a scenario produces is
validated against reports/schema/report.schema.json with tests/render/validate_report.py.
Python 3 standard library only. Exit status 0 when every check passed, 1 otherwise.
"""
import glob
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import read_report, resolve_stacks  # noqa: E402
from memstage_scenarios import (MIB, SKIP, Scenarios, base_name, chain, file_base, format_stack,  # noqa: E402
                                has_function, real_module, user_frames)

SCENARIOS = Scenarios()
# Each scenario is one function, scenario_NAME under @scenario: test e2e.NAME (tests/e2e/CMakeLists.txt asks
# `e2e.py --list` at configure time).
scenario = SCENARIOS.register


# ======================================================================================
# Scenarios
# ======================================================================================

@scenario
def scenario_leaks(s):
    """1000 x 1000 bytes from leak_a, 10 x 1 MiB from leak_b, among heavy traffic that frees all."""
    out, report = s.traced("run", [s.program("leaks"), s.truth_file("leaks")])
    t = s.read_truth("leaks")
    totals = report["totals"]
    s.check(totals["allocations"] > 400000, "heavy traffic: expected > 400000 allocations, got %d" % totals["allocations"])
    s.counts_consistent(report, "leaks")
    leaks = report["leaks"]

    groups = {}
    for function, line_key, blocks_key, size_key in (("leak_a", "leak_a_line", "blocks_a", "size_a"),
                                                      ("leak_b", "leak_b_line", "blocks_b", "size_b")):
        mine = [g for g in leaks if has_function(g["stack"], function)]
        groups[function] = mine
        s.eq(sum(g["blocks"] for g in mine), t[blocks_key], "blocks leaked from %s" % function)
        s.eq(sum(g["bytes"] for g in mine), t[blocks_key] * t[size_key], "bytes leaked from %s" % function)
        for g in mine:
            top = user_frames(g["stack"])
            if not s.check(top, "%s: a leak stack with only allocator frames" % function):
                continue
            top = top[0]
            s.eq(base_name(top["function"]), function, "%s: top frame's function" % function)
            s.eq(file_base(top), t["source"], "%s: top frame's file" % function)
            s.eq(top["line"], t[line_key], "%s: top frame's line" % function)
            s.eq(g["stage"], None, "%s: stage of the leak" % function)

    # The program's own leaks are exactly those: no group whose stack passes through its
    # source file comes from anywhere else (the program never touches stdout, so libc's
    # blocks have no frame in it).
    ours = [g for g in leaks if any(file_base(f) == t["source"] for f in g["stack"])]
    expected_groups = groups["leak_a"] + groups["leak_b"]
    stray = [g for g in ours if not any(g is e for e in expected_groups)]
    if not s.check(not stray, "%d leak groups from %s other than leak_a/leak_b" % (len(stray), t["source"])):
        for g in stray[:5]:
            print("  %d bytes in %d blocks\n%s" % (g["bytes"], g["blocks"], format_stack(g["stack"])))
    # What libc and libstdc++ hold themselves (libstdc++'s emergency pool) is the runtime's:
    # listed apart, and not in the program's leaked figures.
    others = [g for g in leaks if not any(g is o for o in ours)]
    s.check(all(g["runtime"] for g in others), "the leaks of libc/libstdc++ are marked runtime: %s"
            % [(g["bytes"], g["runtime"]) for g in others])
    s.check(not any(g["runtime"] for g in ours), "the program's own leaks are not marked runtime")
    s.eq(totals["leaked_bytes"], t["blocks_a"] * t["size_a"] + t["blocks_b"] * t["size_b"],
         "totals.leaked_bytes: the program's own leaks, exactly")
    s.eq(totals["leaked_blocks"], t["blocks_a"] + t["blocks_b"], "totals.leaked_blocks: the program's own")
    s.eq(totals["runtime_held_bytes"], sum(g["bytes"] for g in others), "totals.runtime_held_bytes")
    print("held by libc/libstdc++ themselves: %d bytes in %d groups" % (sum(g["bytes"] for g in others), len(others)))

    # A suppression file holds leak_b apart with the runtime's; a line not of its format is exit 2.
    suppressions = os.path.join(s.work, "suppressions.txt")
    with open(suppressions, "w") as f:
        f.write("# leak_b's cache is kept on purpose\nleak:leak_b\n")
    proc = s.run([s.memstage, "report", out, "--format", "json", "--suppressions", suppressions])
    if s.check(proc.returncode == 0, "report --suppressions: %s" % proc.stderr):
        held = resolve_stacks(json.loads(proc.stdout))
        s.eq(held["leak_suppressions"], 1, "one suppression applied")
        s.eq(held["totals"]["leaked_bytes"], t["blocks_a"] * t["size_a"], "leaked: leak_a's only")
        s.eq(held["totals"]["runtime_held_bytes"], totals["runtime_held_bytes"] + t["blocks_b"] * t["size_b"],
             "leak_b held apart with the runtime's")
    with open(suppressions, "w") as f:
        f.write("called_from_lib:libfoo.so\n")
    proc = s.run([s.memstage, "report", out, "--suppressions", suppressions])
    s.check(proc.returncode == 2, "a suppression file with another kind of line: exit 2 (%d)" % proc.returncode)
    s.one_line_error(proc, "bad suppression file", "expected 'leak:PATTERN'")


def top_is_helper(stack_entry, source):
    """Allocated by one of the program's own allocation helpers in `source`. Not by main:
    libc's blocks that main's printf made are listed at main's line, the program frame
    that asked for them, but they belong to the baseline."""
    top = user_frames(stack_entry["stack"])
    return bool(top) and file_base(top[0]) == source and base_name(top[0].get("function")) != "main"


def stage_by_path(report, path):
    found = [st for st in report["stages"] if st["path"] == path]
    return found[0] if len(found) == 1 else None


@scenario
def scenario_peak(s):
    """Exact peak heap against the program's own count (realloc chains, calloc, aligned, new[])."""
    _, report = s.traced("full", [s.program("peak"), s.truth_file("full")])
    t = s.read_truth("full")
    s.eq(t["held_peak_bytes"], t["peak_bytes"], "program: the held point is its peak")
    s.eq(t["live_at_end_bytes"], 0, "program: frees all it allocates")
    totals = report["totals"]
    s.counts_consistent(report, "peak")
    baseline, measure, after = (stage_by_path(report, p) for p in ("baseline", "measure", "after"))
    if not s.check(baseline and measure and after, "stages baseline, measure and after in the report"):
        return
    # libc's own blocks, live while the program measures (see programs/peak.cpp).
    base = baseline["peak_heap_bytes"]
    print("baseline (libc/libstdc++ blocks): %d bytes; program peak %d bytes" % (base, t["peak_bytes"]))
    s.eq(after["peak_heap_bytes"], base, "live heap after the measured part == before it")
    s.eq(baseline["allocations"] + after["allocations"], 0, "nothing allocated in the empty stages")
    s.eq(totals["peak_heap_bytes"], base + t["peak_bytes"], "totals.peak_heap_bytes == baseline + program's peak")
    s.eq(measure["peak_heap_bytes"], base + t["peak_bytes"], "stage measure: peak_heap_bytes")
    s.eq(measure["allocations"], t["allocations"], "stage measure: allocations (realloc counts as one)")
    s.check(totals["allocations"] >= t["allocations"],
            "totals.allocations %d >= the program's %d" % (totals["allocations"], t["allocations"]))
    s.check(totals["frees"] >= t["frees"], "totals.frees %d >= the program's %d" % (totals["frees"], t["frees"]))
    # Who held the peak: the program's own sites add up to its peak exactly.
    top = totals["top_stacks_at_peak"]
    ours = sum(e["bytes"] for e in top if top_is_helper(e, t["source"]))
    s.eq(ours, t["peak_bytes"], "top_stacks_at_peak from peak.cpp: bytes")
    if len(top) < 20:  # the list is complete: everything live at the peak is in it
        s.eq(sum(e["bytes"] for e in top), totals["peak_heap_bytes"], "sum of top_stacks_at_peak == peak")

    # Stats mode: the heap counted on every call in usable sizes (e2e.figures_modes checks
    # them exactly): at least full mode's peak, at most the rounding of the blocks live then.
    _, stats = s.traced("stats", [s.program("peak"), s.truth_file("stats")], mode="stats")
    ts = s.read_truth("stats")
    s.eq(stats["mode"], "stats", "stats run: mode")
    expected = totals["peak_heap_bytes"]
    got = stats["totals"]["peak_heap_bytes"]
    allowance = rounding_allowance(report, totals)
    limit = allowance if allowance is not None else max(64 * 1024, expected // 100)
    s.check(expected <= got <= expected + limit,
            "stats mode: peak_heap_bytes %d in usable sizes, full mode's %d to %d more" % (got, expected, limit))
    s.check(stats["totals"]["allocations"] >= ts["allocations"],
            "stats mode: allocations %d >= the program's %d" % (stats["totals"]["allocations"], ts["allocations"]))
    s.check(stats["totals"]["frees"] >= ts["frees"],
            "stats mode: frees %d >= the program's %d" % (stats["totals"]["frees"], ts["frees"]))
    stats_measure = stage_by_path(stats, "measure")
    if s.check(stats_measure is not None, "stats mode: stage measure in the report"):
        # Counted at malloc, new and new[] included (they reach malloc): each exactly once.
        s.eq(stats_measure["allocations"], ts["allocations"], "stats mode: stage measure: allocations")


@scenario
def scenario_stages(s, mode=None):
    """Nested stages: paths, order, per-stage peak, retained, leaked, allocations."""
    _, report = s.traced("run", [s.program("stages"), s.truth_file("stages")], mode=mode)
    t = s.read_truth("stages")
    s.counts_consistent(report, "stages")
    got = report["stages"]
    expected = t["stages"]
    s.eq([st["path"] for st in got], [st["path"] for st in expected], "stage paths in order of start")
    if len(got) != len(expected):
        return
    starts = [st["start_s"] for st in got]
    s.check(starts == sorted(starts), "stages sorted by start_s: %r" % starts)
    base = got[0]["peak_heap_bytes"]  # the empty stage "baseline": libc's blocks
    print("baseline (libc/libstdc++ blocks): %d bytes" % base)
    by_path = {}
    for g, e in zip(got, expected):
        where = "stage %s" % e["path"]
        s.eq(g["name"], e["name"], where + ": name")
        s.eq(g["depth"], e["depth"], where + ": depth")
        s.eq(g["closed"], True, where + ": closed")
        s.check(g["end_s"] >= g["start_s"], where + ": end_s >= start_s")
        parent = e["path"].rpartition("/")[0] or None
        s.eq(g["parent"], parent, where + ": parent")
        s.eq(g["peak_heap_bytes"], base + e["peak_heap_bytes"], where + ": peak_heap_bytes (baseline + program)")
        for key in ("retained_bytes", "leaked_bytes", "leaked_blocks", "allocations", "bytes_allocated"):
            s.eq(g[key], e[key], "%s: %s" % (where, key))
        by_path.setdefault(e["path"], [0, 0])
        by_path[e["path"]][0] += e["leaked_bytes"]
        by_path[e["path"]][1] += e["leaked_blocks"]
    # Leak groups carry the stage path.
    for path, (leaked_bytes, leaked_blocks) in by_path.items():
        groups = [g for g in report["leaks"] if g["stage"] == path]
        s.eq(sum(g["bytes"] for g in groups), leaked_bytes, "leak groups of stage %s: bytes" % path)
        s.eq(sum(g["blocks"] for g in groups), leaked_blocks, "leak groups of stage %s: blocks" % path)
    s.eq(report["totals"]["peak_heap_bytes"], base + max(e["peak_heap_bytes"] for e in expected),
         "totals.peak_heap_bytes")


@scenario
def scenario_stage_limits(s):
    """Past the tracer's stage limits, begins and their ends are dropped together and said."""
    # Not s.traced: 65,791 stages make a report too large to validate against the schema
    # in a lean test; its stages are checked here.
    out = os.path.join(s.work, "run")
    proc = s.run([s.memstage, "run", "-q", "-o", out, "--", s.program("stage_limits"), s.truth_file("stage_limits")])
    if not s.eq(proc.returncode, 0, "exit code of memstage run"):
        print(proc.stderr.decode(errors="replace"))
        return
    report = read_report(os.path.join(out, "report.json"))
    t = s.read_truth("stage_limits")
    stages = report["stages"]
    s.eq(len(stages), t["recorded_stages"], "stages recorded")
    outer = [st for st in stages if st["path"] == "outer"]
    if not s.eq(len(outer), 1, "one stage outer"):
        return
    outer = outer[0]
    s.eq(outer["closed"], True, "outer: closed")
    s.eq(sum(1 for st in stages if st["depth"] == 0), 1, "every other stage is inside outer")
    s.eq(outer["allocations"], t["outer_allocations"], "outer: allocations (its own and the dropped stages')")
    s.eq(sum(st["allocations"] for st in stages if st["depth"] == 1), 10, "stages kept inside outer: allocations")
    s.eq(outer["bytes_allocated"], t["outer_bytes_allocated"], "outer: bytes_allocated")
    s.eq(outer["leaked_bytes"], t["outer_leaked_bytes"], "outer: leaked_bytes")
    s.eq(max(st["depth"] for st in stages), t["max_stage_depth"] - 1, "deepest stage kept")
    deepest = [st for st in stages if st["depth"] == t["max_stage_depth"] - 1]
    s.check(len(deepest) == 1 and deepest[0]["bytes_allocated"] == 4096,
            "the deepest stage kept has the innermost allocation: %r" % [st["bytes_allocated"] for st in deepest])
    warnings = " | ".join(report["warnings"])
    s.check("more distinct stage names than %d: %d stage begins" % (t["max_stage_names"], t["dropped_for_names"])
            in warnings, "warning names the distinct-name limit and its count: %s" % warnings)
    s.check("stages nested deeper than %d: %d stage begins" % (t["max_stage_depth"], t["dropped_for_depth"])
            in warnings, "warning names the depth limit and its count: %s" % warnings)


@scenario
def scenario_stage_heavy(s):
    """A loop marking 50,000 batches as stages: report.json and the analysis stay bounded,
    instances sharing a path grouped with exact sums and the highest peak's own row."""
    start_rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out, report = s.traced("run", [s.program("stage_heavy"), s.truth_file("stage_heavy")])
    # The largest process this scenario waited for: memstage run (analysis and renderers)
    # or the traced program (its 64 MiB buffer). Keeping each instance's stacks took
    # ~8 GB for 80,000 instances; grouped, ~200 MB.
    max_rss_mib = max(start_rss_kib, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    report_mib = os.path.getsize(os.path.join(out, "report.json")) / 2**20
    print("report.json %.1f MiB, largest process %.0f MiB" % (report_mib, max_rss_mib))
    s.check(report_mib <= 8, "report.json is at most 8 MiB: %.1f MiB" % report_mib)
    s.check(max_rss_mib <= 512, "memstage run peaks under 512 MiB: %.0f MiB" % max_rss_mib)
    t = s.read_truth("stage_heavy")
    grouping = report.get("stage_grouping") or {}
    s.eq(grouping.get("instances"), 2 * t["batches"], "stage_grouping: instances")
    stages = report["stages"]
    s.eq(grouping.get("rows"), len(stages), "stage_grouping: rows")
    s.check(len(stages) <= grouping.get("first_kept", 0) + 4,
            "the first instances, each path's highest peak and one group per path: %d rows" % len(stages))
    by_path = {}
    for st in stages:
        by_path.setdefault(st["path"], []).append(st)
    if not s.eq(sorted(by_path), ["batch", "batch/forward"], "stage paths"):
        return
    for path, key in (("batch", "batch"), ("batch/forward", "forward")):
        rows = by_path[path]
        s.eq(sum(st["instances"] for st in rows), t["batches"], "%s: instances over its rows" % path)
        s.eq(sum(st["allocations"] for st in rows), t[key + "_allocations"], "%s: allocations" % path)
        s.eq(sum(st["bytes_allocated"] for st in rows), t[key + "_bytes"], "%s: bytes_allocated" % path)
        groups = [st for st in rows if st["instances"] > 1]
        s.check(len(groups) == 1 and groups[0]["open_s"] < groups[0]["end_s"] - groups[0]["start_s"],
                "%s: one group, open for less than its span: %r" % (path, [(g["open_s"], g["start_s"], g["end_s"]) for g in groups]))
    s.eq(sum(st["leaked_bytes"] for st in by_path["batch/forward"]), t["leaked_bytes"], "forward: leaked_bytes")
    # The highest peak (the run's) is held by an instance listed on its own, with its stacks.
    totals = report["totals"]
    s.check(0 <= totals["peak_heap_bytes"] - t["peak_own_bytes"] <= 65536,
            "run peak is the program's plus libc's blocks: %d vs %d" % (totals["peak_heap_bytes"], t["peak_own_bytes"]))
    worst = max(by_path["batch/forward"], key=lambda st: st["peak_heap_bytes"])
    s.eq(worst["peak_heap_bytes"], totals["peak_heap_bytes"], "forward: highest peak")
    s.eq(worst["instances"], 1, "the highest peak's instance is a row of its own")
    top = worst["top_stacks_at_peak"]
    s.check(top and top[0]["bytes"] == 64 << 20 and any((f.get("function") or "").endswith("forward") for f in top[0]["stack"]),
            "its top stack is forward's 64 MiB: %s" % (format_stack(top[0]["stack"]) if top else "none"))
    with open(out + ".stderr", "rb") as f:
        summary = f.read().decode(errors="replace")
    s.check("%d stage instances" % (2 * t["batches"]) in summary and " x%s" % format(groups[0]["instances"], ",") in summary,
            "the text summary says instances were grouped")
    damaged_middle_chunk(s, out, report)


def damaged_middle_chunk(s, out, full):
    """The trace in OUT with a byte flipped in its middle chunk: `memstage report` skips that
    chunk with a warning naming its bytes and reads on, so the later stages are reported."""
    trace = [n for n in os.listdir(out) if n.startswith("trace.")][0]
    with open(os.path.join(out, trace), "rb") as f:
        data = bytearray(f.read())
    chunks = chunk_offsets(data)
    if not s.check(len(chunks) >= 3, "the trace has %d chunks (need 3 or more)" % len(chunks)):
        return
    offset, compressed = chunks[len(chunks) // 2]
    data[offset + 12 + compressed // 2] ^= 0x01
    os.makedirs(os.path.join(s.work, "damaged"))
    damaged = os.path.join(s.work, "damaged", trace)
    with open(damaged, "wb") as f:
        f.write(data)
    print("flipped a byte of chunk %d of %d: %d bytes at byte %d" % (len(chunks) // 2, len(chunks), 12 + compressed, offset))
    proc = s.run([s.memstage, "report", damaged, "--format", "json"])
    s.eq(proc.returncode, 0, "report on a damaged trace: exit code")
    lost = "%d bytes at byte %d" % (12 + compressed, offset)
    s.check(b"is damaged" in proc.stderr and lost.encode() in proc.stderr,
            "report on a damaged trace: stderr names the bytes lost (%s): %r" % (lost, proc.stderr))
    try:
        report = resolve_stacks(json.loads(proc.stdout))
    except ValueError:
        s.fail("report on a damaged trace: stdout is not JSON")
        return
    s.check(any("is damaged" in w and lost in w for w in report["warnings"]),
            "damaged report: a warning names the bytes lost: %r" % report["warnings"])
    s.check(not any("truncated" in w for w in report["warnings"]), "damaged report: not called truncated")
    a, b = report["totals"]["allocations"], full["totals"]["allocations"]
    s.check(b / 2 < a < b, "damaged report: fewer allocations than the whole run's, not half (%d, %d)" % (a, b))
    batches = [[st for st in r["stages"] if st["path"] == "batch"] for r in (report, full)]
    instances = [sum(st["instances"] for st in rows) for rows in batches]
    s.check(instances[1] / 2 < instances[0] < instances[1],
            "damaged report: the batches before and after the lost chunk (%d of %d)" % tuple(instances))
    # The last batch's end: the latest end of the rows (grouped, the highest peak's instance
    # has a row of its own, wherever it fell: in the lost chunk it is another one's).
    s.eq(max(st["end_s"] for st in batches[0]), max(st["end_s"] for st in batches[1]),
         "damaged report: the last batch ends as in the whole trace")


@scenario
def scenario_threads(s):
    """4 threads x 1M allocations, cross-thread frees: counts add up, leaks exact."""
    check_threads(s, 4, 1000000)


@scenario
def scenario_threads_many(s):
    """32 threads on however few cores: most of them sleep on full rings and are woken as
    the writer makes room; nothing is lost, counts add up, leaks exact."""
    check_threads(s, 32, 150000)


def check_threads(s, threads, allocations_per_thread):
    start = time.monotonic()
    _, report = s.traced("run", [s.program("threads"), s.truth_file("threads"), str(threads),
                                 str(allocations_per_thread)])
    print("traced run and report: %.1f s" % (time.monotonic() - start))
    t = s.read_truth("threads")
    totals = report["totals"]
    s.counts_consistent(report, "threads")
    s.check(t["allocations"] <= totals["allocations"] <= t["allocations"] + 10000,
            "allocations: the program made %d, the report counts %d (libc adds a few, not more)"
            % (t["allocations"], totals["allocations"]))
    s.check(t["frees"] <= totals["frees"] <= t["frees"] + 10000,
            "frees: the program made %d, the report counts %d" % (t["frees"], totals["frees"]))
    s.check(t["cross_thread_frees"] > 1000, "program: %d cross-thread frees" % t["cross_thread_frees"])
    mine = [g for g in report["leaks"] if has_function(g["stack"], t["leak_function"])]
    s.eq(sum(g["blocks"] for g in mine), t["leaked_blocks"], "blocks leaked from leak_from_worker")
    s.eq(sum(g["bytes"] for g in mine), t["leaked_bytes"], "bytes leaked from leak_from_worker")
    for g in mine:
        s.eq(chain(g["stack"], 2), ["leak_from_worker", "worker"], "leak_from_worker's stack")
    s.check(not any("lost" in w for w in report["warnings"]), "no events lost: %r" % report["warnings"])


@scenario
def scenario_fork(s):
    """Parent and forked child: two traces, two processes, the child's own report."""
    out, report = s.traced("run", [s.program("forker"), s.truth_file("forker")])
    t = s.read_truth("forker")
    parent, child = t["parent_pid"], t["child_pid"]
    traces = sorted(n for n in os.listdir(out) if n.startswith("trace."))
    s.eq(traces, sorted(["trace.%d.mst" % parent, "trace.%d.mst" % child]), "trace files")
    procs = report["processes"]
    s.eq(len(procs), 2, "processes")
    if procs:
        s.eq(procs[0]["pid"], parent, "processes[0] is the traced program")
    kids = [p for p in procs if p["pid"] == child]
    if s.eq(len(kids), 1, "the child in processes"):
        s.eq(kids[0]["parent_pid"], parent, "the child's parent_pid")
        s.check(kids[0]["peak_heap_bytes"] >= 123458, "the child's peak_heap_bytes %d >= 123458"
                % kids[0]["peak_heap_bytes"])
        s.eq(kids[0]["complete"], True, "the child's trace is complete")
    s.expect_chain(report, 123460, ["parent_alloc", "main"], "parent")
    s.counts_consistent(report, "parent")
    s.same_as_report_afterwards(out, "fork")
    child_report = s.report_json(os.path.join(out, "trace.%d.mst" % child), "child_report")
    s.expect_chain(child_report, 123458, ["child_alloc", "fork_and_alloc", "main"], "child")
    if child_report["processes"]:
        s.eq(child_report["processes"][0]["pid"], child, "child report: pid")
        s.eq(child_report["processes"][0]["parent_pid"], parent, "child report: parent_pid")


@scenario
def scenario_cxx_local(s):
    """operator new from a C++ module that a C program loaded RTLD_LOCAL (Python's way)."""
    module = os.path.join(s.programs, "e2e_cxx_module.so")
    _, report = s.traced("run", [s.program("c_dlopener"), module])
    s.expect_chain(report, 234567, ["cxx_module_new", "call_module", "main"], "new[] in the module")
    s.eq(report["totals"]["leaked_bytes"] >= 234567, True, "the kept array is leaked")
    s.counts_consistent(report, "cxx_local")


@scenario
def scenario_dlopen(s):
    """A leak inside a dlopen'ed (and later dlclose'd) module: function, file, line, module."""
    plugin = os.path.join(s.programs, "e2e_plugin.so")
    _, report = s.traced("run", [s.program("dlopener"), s.truth_file("dlopener"), plugin])
    t = s.read_truth("dlopener")
    s.eq(t["dlclosed"], 1, "program: dlclose succeeded")
    group = s.expect_chain(report, 123457, ["plugin_alloc", "call_plugin", "main"], "dlopen")
    if group:
        top = user_frames(group["stack"])[0]
        s.eq(file_base(top), t["plugin_source"], "plugin frame: file")
        s.eq(top["line"], t["plugin_line"], "plugin frame: line")
        s.eq(real_module(top), os.path.realpath(plugin), "plugin frame: module")
        caller = user_frames(group["stack"])[1]
        s.eq(real_module(caller), os.path.realpath(s.program("dlopener")), "call_plugin frame: module")


@scenario
def scenario_stacks(s):
    """Exact chains through catch, unwinding destructors, longjmp, recursion, threads, dlopen, fork."""
    plugin = os.path.join(s.programs, "e2e_plugin.so")
    out, report = s.traced("run", [s.program("stacks"), s.truth_file("stacks"), plugin])
    t = s.read_truth("stacks")
    s.expect_chain(report, 123456, ["alloc_in_catch", "thrower_caller", "main"], "catch handler")
    s.expect_chain(report, 123461, ["alloc_in_cleanup", "Guard::~Guard", "throw_with_cleanup", "cleanup_caller",
                                    "main"], "destructor during unwinding")
    s.expect_chain(report, 123459, ["alloc_after_longjmp", "longjmp_target", "main"], "after longjmp")
    s.expect_chain(report, 123462, ["alloc_deep"] + ["recurse"] * (t["recursion_depth"] + 1) + ["main"],
                   "deep recursion")
    s.expect_chain(report, 123463, ["alloc_in_thread", "thread_main"], "std::thread")
    s.expect_chain(report, 123457, ["plugin_alloc", "call_plugin", "main"], "dlopen'ed module")
    child_report = s.report_json(os.path.join(out, "trace.%d.mst" % t["child_pid"]), "child_report")
    s.expect_chain(child_report, 123458, ["child_alloc", "fork_and_alloc", "main"], "forked child")


@scenario
def scenario_abort(s):
    """abort() half-way: exit 134, signal 6, what was allocated before is in the report; the same with
    the tracer's writer and compressor threads running (a second thread churned first)."""
    for name, extra in (("run", []), ("threaded", ["threaded"])):
        _, report = s.traced(name, [s.program("abort_mid"), s.truth_file("abort")] + extra, expect_exit=134)
        t = s.read_truth("abort")
        s.eq(report["exit_code"], 134, "%s: report exit_code" % name)
        s.eq(report["signal"], 6, "%s: report signal" % name)
        groups = [g for g in report["leaks"] if has_function(g["stack"], "leak_before_abort")]
        s.eq(sum(g["blocks"] for g in groups), t["blocks"], "%s: blocks from leak_before_abort" % name)
        s.eq(sum(g["bytes"] for g in groups), t["blocks"] * t["size"], "%s: bytes from leak_before_abort" % name)
        for g in groups:
            s.eq(chain(g["stack"], 2), ["leak_before_abort", "main"], "%s: leak_before_abort's stack" % name)
        s.check(not any(has_function(g["stack"], "leak_after_abort") for g in report["leaks"]),
                "%s: nothing from after abort()" % name)
        s.counts_consistent(report, "abort (%s)" % name)


@scenario
def scenario__exit(s):
    """_exit(3): exit 3, the blocks allocated before it are in the report, the trace is complete."""
    _, report = s.traced("run", [s.program("exit_early"), s.truth_file("exit")], expect_exit=3)
    t = s.read_truth("exit")
    s.eq(report["exit_code"], 3, "report exit_code")
    s.eq(report["signal"], None, "report signal")
    groups = [g for g in report["leaks"] if has_function(g["stack"], "leak_before_exit")]
    s.eq(sum(g["blocks"] for g in groups), t["blocks"], "blocks from leak_before_exit")
    s.eq(sum(g["bytes"] for g in groups), t["blocks"] * t["size"], "bytes from leak_before_exit")
    for g in groups:
        s.eq(chain(g["stack"], 2), ["leak_before_exit", "main"], "leak_before_exit's stack")
    if report["processes"]:
        s.eq(report["processes"][0]["complete"], True, "the trace is complete (the tracer sees _exit)")
    s.check(not any("no end record" in w or "truncated" in w for w in report["warnings"]),
            "no warning about an incomplete trace: %r" % report["warnings"])
    s.counts_consistent(report, "_exit")


@scenario
def scenario_sigkill(s, mode=None, run_flags=(), program_args=()):
    """SIGKILL after 1 s: exit 137, the 50 MiB flushed before are in the report, a warning says so."""
    out, report = s.traced("run", [s.program("sigkill"), s.truth_file("sigkill")] + list(program_args),
                           expect_exit=137, mode=mode, run_flags=run_flags)
    s.same_as_report_afterwards(out, "killed program")
    t = s.read_truth("sigkill")
    s.eq(report["exit_code"], 137, "report exit_code")
    s.eq(report["signal"], 9, "report signal")
    held = t["blocks"] * t["size"]
    s.check(held >= 50 * MIB, "program: holds %d bytes" % held)
    s.check(report["totals"]["peak_heap_bytes"] >= held,
            "peak_heap_bytes %d >= the %d bytes held" % (report["totals"]["peak_heap_bytes"], held))
    groups = [g for g in report["leaks"] if has_function(g["stack"], "hold_block")]
    s.eq(sum(g["blocks"] for g in groups), t["blocks"], "blocks from hold_block")
    s.eq(sum(g["bytes"] for g in groups), held, "bytes from hold_block")
    s.check(any("no end record" in w for w in report["warnings"]),
            "a warning that the trace has no end record: %r" % report["warnings"])
    if report["processes"]:
        s.eq(report["processes"][0]["complete"], False, "processes[0].complete")
    return report


@scenario
def scenario_output(s):
    """The traced program's stdout and exit code are those of the untraced program."""
    program = s.program("output")
    plain = s.run([program])
    s.eq(plain.returncode, 7, "untraced exit code")
    s.check(len(plain.stdout) > 200000, "untraced output is large: %d bytes" % len(plain.stdout))
    # Full mode also with the trace read only after the program ends: the same report.
    for mode, flags in (("full", []), ("stats", []), ("full-read-after-exit", ["--read-after-exit"])):
        out = os.path.join(s.work, mode)
        traced = s.run([s.memstage, "run", "-o", out, "--mode", mode.split("-")[0]] + flags + ["--", program])
        s.eq(traced.returncode, plain.returncode, "%s mode: exit code traced vs untraced" % mode)
        if not s.check(traced.stdout == plain.stdout, "%s mode: stdout traced (%d bytes) == untraced (%d bytes)"
                       % (mode, len(traced.stdout), len(plain.stdout))):
            a, b = plain.stdout.splitlines(), traced.stdout.splitlines()
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    print("first difference at line %d:\n  untraced: %r\n  traced:   %r" % (i + 1, x, y))
                    break
        path = os.path.join(out, "report.json")
        if s.check(os.path.exists(path), "%s mode: report.json written" % mode):
            s.reports.append(path)
            with open(path) as f:
                s.eq(json.load(f)["exit_code"], 7, "%s mode: report exit_code" % mode)
            s.same_as_report_afterwards(out, "%s mode" % mode)


def chunk_offsets(data):
    """(offset, compressed_bytes) of each chunk of a trace (profiler/trace/trace_format.h)."""
    chunks = []
    offset = 16
    while offset + 12 <= len(data):
        magic, compressed, _raw = struct.unpack_from("<III", data, offset)
        if magic != 0x4B43534D:
            break
        chunks.append((offset, compressed))
        offset += 12 + compressed
    return chunks


@scenario
def scenario_bad_input(s):
    """Errors: one line, the right exit code; a truncated trace still gives a report."""
    # Not a trace at all.
    rng = random.Random(20261202)
    junk = os.path.join(s.work, "random.mst")
    with open(junk, "wb") as f:
        f.write(bytes(rng.getrandbits(8) for _ in range(65536)))
    proc = s.run([s.memstage, "report", junk, "--format", "json"])
    s.eq(proc.returncode, 2, "report on a random file: exit code")
    s.one_line_error(proc, "report on a random file", "is not a memstage trace")
    s.eq(proc.stdout, b"", "report on a random file: nothing on stdout")
    empty = os.path.join(s.work, "empty.mst")
    open(empty, "wb").close()
    proc = s.run([s.memstage, "report", empty])
    s.eq(proc.returncode, 2, "report on an empty file: exit code")
    s.one_line_error(proc, "report on an empty file", "is empty: nothing was written to it")

    # A real trace cut in the middle of a chunk.
    out, full = s.traced("source", [s.program("threads"), s.truth_file("source"), "2", "300000"])
    trace = [n for n in os.listdir(out) if n.startswith("trace.")][0]
    with open(os.path.join(out, trace), "rb") as f:
        data = f.read()
    chunks = chunk_offsets(data)
    if s.check(len(chunks) >= 3, "the source trace has %d chunks (need 3 or more)" % len(chunks)):
        offset, compressed = chunks[len(chunks) // 2]
        cut = offset + 12 + compressed // 2
        os.makedirs(os.path.join(s.work, "truncated"))
        truncated = os.path.join(s.work, "truncated", trace)
        with open(truncated, "wb") as f:
            f.write(data[:cut])
        print("cut %s at byte %d of %d, inside chunk %d of %d" % (trace, cut, len(data), len(chunks) // 2,
                                                                  len(chunks)))
        proc = s.run([s.memstage, "report", truncated, "--format", "json"])
        s.eq(proc.returncode, 0, "report on a truncated trace: exit code")
        s.check(b"truncated" in proc.stderr, "report on a truncated trace: stderr mentions it: %r" % proc.stderr)
        try:
            cut_report = resolve_stacks(json.loads(proc.stdout))
        except ValueError:
            s.fail("report on a truncated trace: stdout is not JSON")
        else:
            path = os.path.join(s.work, "truncated.json")
            with open(path, "wb") as f:
                f.write(proc.stdout)
            s.reports.append(path)
            s.check(any("truncated" in w for w in cut_report["warnings"]),
                    "truncated report: a warning mentions 'truncated': %r" % cut_report["warnings"])
            a, b = cut_report["totals"]["allocations"], full["totals"]["allocations"]
            s.check(0 < a < b, "truncated report: some allocations, fewer than the whole run's (%d, %d)" % (a, b))

    # Command-line errors: one line on stderr, non-zero exit.
    for what, argv in (("run without a command", ["run"]),
                       ("run with nothing after --", ["run", "-o", os.path.join(s.work, "none"), "--"]),
                       ("run into an unwritable folder", ["run", "-o", "/proc/forbidden", "--", "true"]),
                       ("run with an unknown flag", ["run", "--no-such-flag", "--", "true"]),
                       ("report with an unknown flag", ["report", "--no-such-flag", junk]),
                       ("unknown flag", ["--no-such-flag"]),
                       ("report on a missing file", ["report", os.path.join(s.work, "missing.mst")])):
        proc = s.run([s.memstage] + argv)
        s.check(proc.returncode != 0, "%s: exit code must be non-zero, got 0" % what)
        s.one_line_error(proc, what)
    # A command that does not exist: the shell's 127.
    proc = s.run([s.memstage, "run", "-o", os.path.join(s.work, "nonexistent"), "--", "/nonexistent/e2e-program"])
    s.eq(proc.returncode, 127, "run of a missing program: exit code")
    s.one_line_error(proc, "run of a missing program", "/nonexistent/e2e-program")
    # A file that is executable but no program, nor a script with a #! line: run with /bin/sh, as a
    # shell (and execvp) would; a file that is not executable is refused.
    script = os.path.join(s.work, "no_shebang")
    with open(script, "w") as f:
        f.write("echo no shebang here\nexit 7\n")
    os.chmod(script, 0o755)
    proc = s.run([s.memstage, "run", "-q", "-o", os.path.join(s.work, "no_shebang.out"), "--", script])
    s.eq(proc.returncode, 7, "run of a script without #!: its exit code")
    s.check(b"no shebang here" in proc.stdout, "run of a script without #!: its output, got %r" % proc.stdout)
    os.chmod(script, 0o644)
    proc = s.run([s.memstage, "run", "-o", os.path.join(s.work, "not_executable.out"), "--", script])
    s.eq(proc.returncode, 127, "run of a file that is not executable: exit code")
    s.one_line_error(proc, "run of a file that is not executable", "Permission denied")


SOURCE_PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
# Debian's python (tests/CMakeLists.txt, MEMSTAGE_SYSTEM_PYTHON3): the tracer's Python frames.
SYSTEM_PYTHON = "/usr/bin/python3"


def no_killed_warning(s, report, what):
    s.check(not any("no end record" in w or "truncated" in w or "killed" in w for w in report["warnings"]),
            "%s: no warning of a killed or cut trace: %r" % (what, report["warnings"]))
    if report["processes"]:
        s.eq(report["processes"][0]["complete"], True, "%s: processes[0].complete" % what)


@scenario
def scenario_vfork(s):
    """vfork + closefrom + exec (subprocess's way) in C and Python: the parent's trace goes on."""
    out, report, t = s.traced_as_untraced("c", [s.program("vfork_exec"), "truth.json"])
    if t:
        s.eq(t["missing_status"], 127, "the vfork child of a missing program _exits 127")
        got = report["totals"]["peak_heap_bytes"]
        s.check(t["peak_bytes"] <= got <= t["peak_bytes"] + MIB,
                "C: peak_heap_bytes %d is the program's %d (+ libc's blocks, < 1 MiB)" % (got, t["peak_bytes"]))
        no_killed_warning(s, report, "C")
        traces = sorted(n for n in os.listdir(out) if n.startswith("trace."))
        s.check("trace.%d.mst" % t["true_pid"] in traces, "C: /bin/true, exec'd in the vfork child, has its trace: %r"
                % traces)
        s.counts_consistent(report, "C")
    script = os.path.join(SOURCE_PROGRAMS, "vfork_subprocess.py")
    _, report, t = s.traced_as_untraced("python", [SYSTEM_PYTHON, script, "truth.json"], validate=False)
    if t:
        got = report["totals"]["peak_heap_bytes"]
        s.check(got >= t["peak_bytes"], "python: peak_heap_bytes %d >= the %d bytes the script held" % (got, t["peak_bytes"]))
        no_killed_warning(s, report, "python")


@scenario
def scenario_raw_clone(s):
    """Children made with the raw clone system call (Chromium's zygote): none blocks, the parent's trace goes on."""
    start = time.monotonic()
    _, report, t = s.traced_as_untraced("run", [s.program("raw_clone"), "truth.json"], timeout=60)
    print("untraced and traced runs: %.1f s" % (time.monotonic() - start))
    if t:
        # The parent's 1 MiB, allocated after the children ended, is its peak.
        top = report["totals"]["top_stacks_at_peak"]
        s.check(any(e["bytes"] == MIB and has_function(e["stack"], "parent_alloc") for e in top),
                "parent_alloc's 1 MiB among the stacks at the peak: %r" % [(e["bytes"], chain(e["stack"], 2)) for e in top])
        mine = [g for g in report["leaks"] if has_function(g["stack"], "child_work")]
        s.eq(mine, [], "no block of the children is the parent's")
        no_killed_warning(s, report, "raw_clone")
        procs = report["processes"]
        if procs:
            s.eq(procs[0]["pid"], t["parent_pid"], "processes[0] is the parent")
        s.counts_consistent(report, "raw_clone")


@scenario
def scenario_single_thread(s):
    """A program with one thread keeps one under the tracer (start, allocations, a stage, a forked child); the
    report's peak RSS is at least the kernel's high-water mark, a spike no sample saw included."""
    out, report, t = s.traced_as_untraced("run", [s.program("single_thread"), "truth.json"])
    if t:
        peak = report["totals"]["peak_rss_bytes"]
        s.check(peak >= t["high_water_bytes"] >= t["spike_bytes"],
                "peak_rss_bytes %d >= VmHWM %d >= the %d-byte spike" % (peak, t["high_water_bytes"], t["spike_bytes"]))
        no_killed_warning(s, report, "single_thread")
        s.eq(len(report["processes"]), 2, "the parent and its forked child are traced")
        s.counts_consistent(report, "single_thread")


@scenario
def scenario_signal_mask(s):
    """Signals sent to the process go to the program's threads as untraced: a program whose only thread blocks
    SIGUSR1 and SIGTERM reads both from a signalfd, after the tracer's threads started (none of them takes
    one), in every mode; what it allocated between the two is in the report. The tracer's threads are named
    as its own (memstage-write, and memstage-zstd beside it where chunks are compressed apart)."""
    for mode in ("full", "stats", "aggregate", "sample"):
        _, report, t = s.traced_as_untraced(mode, [s.program("signal_mask"), "truth.json"], run_flags=["--mode", mode])
        if not t:
            continue
        no_killed_warning(s, report, "signal_mask (%s)" % mode)
        names = sorted(t["thread_names"])
        s.eq(names, ["memstage-write", "memstage-zstd", "signal_mask"], "%s: the threads' names" % mode)
        if mode in ("full", "aggregate"):
            groups = [g for g in report["leaks"] if has_function(g["stack"], "leak_between_signals")]
            s.eq(sum(g["bytes"] for g in groups), t["leak_bytes"], "%s: bytes from leak_between_signals" % mode)


CHROMIUM = "/usr/bin/chromium"


# Skips where Chromium is not installed.
@scenario(may_skip=True)
def scenario_chromium(s):
    """chromium --headless --dump-dom (its zygote forks by raw clone and requires one thread): same DOM and exit."""
    if not os.path.exists(CHROMIUM):
        print("SKIP: %s not installed" % CHROMIUM)
        raise SystemExit(SKIP)
    page = os.path.join(s.work, "page.html")
    with open(page, "w") as f:
        f.write("<!DOCTYPE html><html><head><title>memstage</title></head><body><p id=\"x\">before</p>"
                "<script>document.getElementById('x').textContent = 'after ' + [1, 2, 3].map(n => n * n).join(',');"
                "</script></body></html>\n")
    runs = {}
    for kind in ("untraced", "traced"):
        # A profile of its own per run: nothing is shared or left in the user's.
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + os.path.join(
            s.work, "profile." + kind), "--dump-dom", "file://" + page]
        if kind == "traced":
            argv = [s.memstage, "run", "-q", "-o", os.path.join(s.work, "trace")] + ["--"] + argv
        try:
            runs[kind] = s.run(argv, timeout=60)
        except subprocess.TimeoutExpired:
            s.fail("chromium %s still running after 60 s" % kind)
            raise SystemExit(s.finish())
        print(runs[kind].stderr.decode(errors="replace")[-2000:])
    plain, traced = runs["untraced"], runs["traced"]
    s.eq(plain.returncode, 0, "exit status untraced")
    s.eq(traced.returncode, plain.returncode, "exit status traced == untraced")
    s.check(b"after 1,4,9" in plain.stdout, "the untraced DOM has the script's text: %r" % plain.stdout[:400])
    s.eq(traced.stdout, plain.stdout, "the DOM traced == untraced")
    s.check(b"zygote" not in traced.stderr, "no zygote error traced: %r" % traced.stderr[-1000:])
    s.check(os.path.exists(os.path.join(s.work, "trace", "report.json")), "report.json written")


@scenario
def scenario_closed_fds(s):
    """closefrom(3), then the program's own file and pipe: the tracer closes, reads and writes none of them."""
    _, report, t = s.traced_as_untraced("run", [s.program("closed_fds"), "truth.json"])
    if t:
        work = stage_by_path(report, "work")
        if s.check(work is not None, "stage work in the report"):
            for key in ("allocations", "bytes_allocated", "leaked_bytes", "leaked_blocks"):
                s.eq(work[key], t[key], "stage work: " + key)
        no_killed_warning(s, report, "closed_fds")
        # Trace chunks written into a descriptor that became another file's read as such.
        s.check(not any("corrupt" in w for w in report["warnings"]), "no corrupt trace: %r" % report["warnings"])
        s.counts_consistent(report, "closed_fds")


@scenario
def scenario_free_stack(s):
    """free() of a stack address: glibc's own abort and message, not a fault inside the tracer."""
    _, report, t = s.traced_as_untraced("run", [s.program("free_stack"), "truth.json"], expect_exit=134)
    s.eq(report["exit_code"], 134, "report exit_code")
    s.eq(report["signal"], 6, "report signal (SIGABRT, from glibc's free)")
    if t:
        s.expect_chain(report, t["held_bytes"], ["hold_before_fault", "main"], "the block held before the fault")


@scenario
def scenario_long_output_path(s):
    """memstage run -o a folder whose path is 600 bytes: traced as usual; one over the limit: a one-line refusal."""
    folder = s.work
    while len(folder) < 600:
        folder = os.path.join(folder, "d" * 120)
    proc = s.run([s.memstage, "run", "-q", "-o", folder, "--", s.program("exit_early"), s.truth_file("exit")])
    s.eq(proc.returncode, 3, "exit code through a %d-byte output path" % len(folder))
    path = os.path.join(folder, "report.json")
    if s.check(os.path.exists(path), "report.json in the %d-byte folder" % len(folder)):
        s.reports.append(path)
        report = read_report(path)
        t = s.read_truth("exit")
        groups = [g for g in report["leaks"] if has_function(g["stack"], "leak_before_exit")]
        s.eq(sum(g["bytes"] for g in groups), t["blocks"] * t["size"], "bytes from leak_before_exit")
    too_long = folder
    while len(too_long) <= 4096:
        too_long = os.path.join(too_long, "e" * 200)
    proc = s.run([s.memstage, "run", "-o", too_long, "--", "true"])
    s.eq(proc.returncode, 2, "run into a %d-byte output path: exit code" % len(too_long))
    s.one_line_error(proc, "run into a %d-byte output path" % len(too_long), "at most")


@scenario
def scenario_deep_bind(s):
    """A plugin loaded RTLD_DEEPBIND: its allocations and frees are seen, the report says the flag went."""
    plugin = os.path.join(s.programs, "e2e_deep_plugin.so")
    _, report, t = s.traced_as_untraced("run", [s.program("deep_bind"), "truth.json", plugin])
    if t:
        s.check(not any(g["bytes"] == 5000000 for g in report["leaks"]),
                "no false leak of the 5 MB block the plugin freed")
        s.expect_chain(report, t["leaked_bytes"], ["plugin_leak", "plugin_exchange", "main"], "the plugin's leak")
        got = report["totals"]["peak_heap_bytes"]
        s.check(t["peak_bytes"] <= got <= t["peak_bytes"] + MIB,
                "peak_heap_bytes %d is the %d held at once (+ libc's blocks)" % (got, t["peak_bytes"]))
        s.check(any("RTLD_DEEPBIND" in w and "e2e_deep_plugin.so" in w for w in report["warnings"]),
                "a warning names the module and RTLD_DEEPBIND: %r" % report["warnings"])
        s.counts_consistent(report, "deep_bind")


@scenario
def scenario_early_alloc(s):
    """A library's constructor allocates before the preload's runs: its leak and its freed block are seen."""
    _, report, t = s.traced_as_untraced("run", [s.program("early_alloc"), "truth.json"])
    if t:
        # The constructor itself calls early_table_init as a tail call: no frame of its own.
        s.expect_chain(report, t["table_bytes"], ["early_table_init"], "the constructor's table")
        s.check(not any(g["bytes"] == t["scratch_bytes"] for g in report["leaks"]),
                "the %d-byte block main freed is no leak" % t["scratch_bytes"])
        s.check(report["totals"]["peak_heap_bytes"] >= t["table_bytes"] + t["scratch_bytes"],
                "peak_heap_bytes %d >= the constructor's two blocks" % report["totals"]["peak_heap_bytes"])
        s.counts_consistent(report, "early_alloc")


@scenario
def scenario_python_code(s):
    """Generated code compiled, run and dropped: the tracer keeps no code object alive; the bootstrap's work is not the program's."""
    script = os.path.join(SOURCE_PROGRAMS, "generated_code.py")
    _, report, t = s.traced_as_untraced("run", [SYSTEM_PYTHON, script, "truth.json"])
    if t:
        s.eq(t["alive"], 0, "code objects the traced script found alive")
        blocks = {g["bytes"]: g for g in report["leaks"] if g["blocks"] == 1}
        for size, file in zip(t["block_bytes"], t["files"]):
            g = blocks.get(size)
            if not s.check(g is not None, "the %d-byte block of %s is live at the end" % (size, file)):
                continue
            frames = [(f["file"], f["function"], f["line"]) for f in g["stack"] if f.get("kind") == "python"]
            s.eq(frames[:2], [(file, "make", t["make_line"]), (file, "<module>", t["make_line"] + 1)],
                 "the Python frames of the %d-byte block" % size)
        # Native frames only, the tracer holds no Python object: the peak to match. Held code
        # objects would hold every module's constant on top.
        _, native, _ = s.traced_as_untraced("native", [SYSTEM_PYTHON, script, "truth.json"],
                                            run_flags=("--no-python-frames",), validate=False)
        got, expected = report["totals"]["peak_heap_bytes"], native["totals"]["peak_heap_bytes"]
        s.check(abs(got - expected) < 2 * t["constant_bytes"],
                "peak_heap_bytes with Python frames %d within 2 constants (%d) of the native-only run's %d"
                % (got, t["constant_bytes"], expected))
    counts = {}
    for flags in ((), ("--no-python-frames",)):
        name = "print" + "".join(f.replace("-", "_") for f in flags)
        _, report, _ = s.traced_as_untraced(name, [SYSTEM_PYTHON, "-c", "print(1)"], run_flags=flags, validate=False)
        counts[flags] = report["totals"]["allocations"]
    with_bootstrap, without = counts[()], counts[("--no-python-frames",)]
    print("python3 -c 'print(1)': %d allocations with the bootstrap, %d without" % (with_bootstrap, without))
    s.check(with_bootstrap <= without * 1.05, "the bootstrap adds at most 5%% to the allocations: %d with, %d without"
            % (with_bootstrap, without))


# Thousands of threads, each paying libunwind's per-thread start-up: minutes on a busy machine.
@scenario(timeout_s=240)
def scenario_thread_churn(s):
    """4,200 short-lived threads one after the other: tracer memory follows the threads alive, no event lost."""
    threads = 4200  # past the 4,096 thread states the tracer can hold at once
    start = time.monotonic()
    _, report, t = s.traced_as_untraced("run", [s.program("thread_churn"), "truth.json", str(threads)], timeout=200)
    print("untraced and traced runs: %.1f s" % (time.monotonic() - start))
    if not t:
        return
    s.eq(t["leaked_blocks"], threads, "program: one block left by each thread")
    mine = [g for g in report["leaks"] if has_function(g["stack"], "leak_in_thread")]
    s.eq(sum(g["blocks"] for g in mine), threads, "blocks leaked from leak_in_thread, past 4,096 threads")
    s.eq(sum(g["bytes"] for g in mine), threads * t["leak_size"], "bytes leaked from leak_in_thread")
    totals = report["totals"]
    s.check(t["allocations"] <= totals["allocations"] <= t["allocations"] + 10000,
            "allocations: the threads made %d, the report counts %d (libc adds a few per thread at most)"
            % (t["allocations"], totals["allocations"]))
    s.check(not any("lost" in w for w in report["warnings"]), "no events lost: %r" % report["warnings"])
    # Each thread's state holds a 1 MiB ring: one per thread ever run would be gigabytes.
    tracer_bytes = totals["rss_breakdown"]["tracer_bytes"]
    s.check(tracer_bytes < 32 * MIB, "tracer memory %.1f MiB < 32 MiB after %d threads" % (tracer_bytes / MIB, threads))
    s.counts_consistent(report, "thread_churn")


@scenario
def scenario_fork_threads(s):
    """Forks while four other threads allocate: every child ends within 10 s and both sides write complete traces."""
    forks = 16
    out, report, t = s.traced_as_untraced("run", [s.program("fork_threads"), "truth.json", str(forks)], timeout=120)
    if not t:
        return
    children = t["child_pids"]
    s.eq(len(children), forks, "program: children forked")
    traces = sorted(n for n in os.listdir(out) if n.startswith("trace."))
    expected = sorted(["trace.%d.mst" % t["parent_pid"]] + ["trace.%d.mst" % pid for pid in children])
    s.eq(traces, expected, "one trace per process")
    by_pid = {p["pid"]: p for p in report["processes"]}
    for pid in [t["parent_pid"]] + children:
        p = by_pid.get(pid)
        if not s.check(p is not None, "process %d in the report" % pid):
            continue
        s.eq(p["complete"], True, "process %d: its trace is complete" % pid)
        if pid != t["parent_pid"]:
            s.check(p["peak_heap_bytes"] >= t["child_bytes"], "child %d: peak heap %d >= %d"
                    % (pid, p["peak_heap_bytes"], t["child_bytes"]))
    child_report = s.report_json(os.path.join(out, "trace.%d.mst" % children[-1]), "child_report")
    s.expect_chain(child_report, t["child_bytes"], ["child_alloc", "main"], "the last child")
    s.check(report["totals"]["allocations"] >= t["worker_allocations"],
            "parent: %d allocations counted >= the workers' %d" % (report["totals"]["allocations"], t["worker_allocations"]))
    s.check(not any("lost" in w for w in report["warnings"]), "no events lost: %r" % report["warnings"])
    s.counts_consistent(report, "fork_threads")


def attach_refused_by_ptrace_scope(s, pid):
    """Yama's ptrace_scope, as memstage attach reads it, on a kernel that may have no Yama: as root, in a mount
    namespace of its own, a tmpfs over /proc/sys/kernel holds the value; gdb's ptrace is refused by a seccomp
    filter (refuse_syscall), as Yama or a container would refuse it."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        print("NOTE: not root with unshare: the ptrace_scope refusals are unchecked here")
        return
    setup = ("mount -t tmpfs memstage-test /proc/sys/kernel && mkdir /proc/sys/kernel/yama && "
             "echo \"$1\" > /proc/sys/kernel/yama/ptrace_scope && shift && exec \"$@\"")
    refuse_ptrace = [s.program("refuse_syscall"), "ptrace"]
    cases = [("3", [], "ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3)"),
             ("2", refuse_ptrace, "ptrace was refused (kernel.yama.ptrace_scope = 2: set it to 0, or attach as root)"),
             ("1", refuse_ptrace, "ptrace was refused (kernel.yama.ptrace_scope = 1: set it to 0, or attach as root)")]
    probe = s.run([unshare, "--mount", "--propagation", "private", "sh", "-c", setup, "sh", "0", "true"])
    if probe.returncode != 0:
        print("NOTE: cannot mount over /proc/sys/kernel here (%s): the ptrace_scope refusals are unchecked"
              % probe.stderr.decode(errors="replace").strip())
        return
    for scope, prefix, message in cases:
        proc = s.run([unshare, "--mount", "--propagation", "private", "sh", "-c", setup, "sh", scope] + prefix +
                     [s.memstage, "attach", str(pid)])
        s.eq(proc.returncode, 2, "attach with ptrace_scope %s: exit code" % scope)
        s.one_line_error(proc, "attach with ptrace_scope %s" % scope, "no permission to trace pid %d: %s" % (pid, message))
    # No Yama at all, ptrace refused (a container's seccomp profile, or no CAP_SYS_PTRACE).
    proc = s.run(refuse_ptrace + [s.memstage, "attach", str(pid)])
    s.eq(proc.returncode, 2, "attach with ptrace refused, no Yama: exit code")
    s.one_line_error(proc, "attach with ptrace refused, no Yama",
                     "ptrace was refused (a container without CAP_SYS_PTRACE?)" if not os.path.exists(
                         "/proc/sys/kernel/yama/ptrace_scope") else "ptrace was refused")


@scenario
def scenario_handoff(s):
    """Eight threads pass blocks of one size round a ring: every free precedes the reuse of its address,
    whether allocations read their event number (the writer fences with membarrier) or, where a seccomp
    filter refuses membarrier, take one as frees do."""
    handoff = [s.program("handoff"), "truth.json", "20000"]
    for name, command in (("run", handoff), ("no_membarrier", [s.program("refuse_syscall"), "membarrier"] + handoff)):
        _, report, t = s.traced_as_untraced(name, command, timeout=120)
        if not t:
            return
        handed = [g for g in report["leaks"] if has_function(g["stack"], "hand_over")]
        s.eq(sum(g["blocks"] for g in handed), 0,
             "%s: blocks from hand_over() read as leaked (a reuse ordered before the free of its address)" % name)
        kept = [g for g in report["leaks"] if has_function(g["stack"], "keep_some")]
        s.eq(sum(g["blocks"] for g in kept), t["kept_blocks"], "%s: blocks kept by keep_some()" % name)
        s.eq(sum(g["bytes"] for g in kept), t["kept_blocks"] * t["kept_size"], "%s: bytes kept by keep_some()" % name)
        s.check(report["totals"]["allocations"] >= t["handed"],
                "%s: allocations %d >= blocks handed %d" % (name, report["totals"]["allocations"], t["handed"]))
        s.check(not any("lost" in w or "unknown" in w for w in report["warnings"]),
                "%s: no events lost, no unknown frees: %r" % (name, report["warnings"]))
        s.counts_consistent(report, "handoff (%s)" % name)


@scenario
def scenario_address_space(s):
    """Under a 1 GB address-space limit, the program gets (almost) as many 10 MB blocks traced as untraced."""
    _, report, t = s.traced_as_untraced("run", [s.program("address_space"), "truth.json"], timeout=60)
    if not t:
        return
    with open(os.path.join(s.work, "run.untraced", "truth.json")) as f:
        untraced = json.load(f)["blocks"]
    # The tracer's own mappings (writer buffers, its thread's stack, rings, tables) share
    # the limit: at most two blocks' worth, 20 MB.
    s.check(untraced - 2 <= t["blocks"] <= untraced,
            "10 MB blocks before malloc failed: %d traced, %d untraced (the tracer may take at most 20 MB)"
            % (t["blocks"], untraced))
    s.check(report["totals"]["allocations"] >= t["blocks"], "the traced blocks are in the report")
@scenario
def scenario_reserved(s):
    """Reserved address space (PROT_NONE, MAP_NORESERVE) is not memory; what mprotect opens is."""
    _, report = s.traced("run", [s.program("figures"), s.truth_file("figures"), "reserve"])
    t = s.read_truth("figures")
    s.eq(report["totals"]["mmap_peak_bytes"], t["accessible_bytes"],
         "mmap_peak_bytes: the 1 MiB made writable, not the %d bytes reserved" % t["reserved_bytes"])


@scenario
def scenario_heap_peak_sample(s):
    """A program without stages: fragmentation and the RSS breakdown describe the heap's peak, not its start or exit."""
    _, report = s.traced("run", [s.program("figures"), s.truth_file("figures"), "heap_peak"])
    t = s.read_truth("figures")
    totals = report["totals"]
    breakdown = totals["rss_breakdown"]
    s.check(totals["peak_heap_bytes"] >= t["peak_heap_bytes"], "peak_heap_bytes %d >= %d"
            % (totals["peak_heap_bytes"], t["peak_heap_bytes"]))
    s.eq(breakdown["estimated"], False, "the breakdown comes from the allocator's own figures")
    # Sampled at each new heap high, 1 MiB apart at this size: the last is within 1 MiB of the peak.
    s.check(breakdown["live_bytes"] >= t["peak_heap_bytes"] - 2 * MIB,
            "the breakdown's live bytes %d are the peak's (%d)" % (breakdown["live_bytes"], t["peak_heap_bytes"]))
    s.check(abs(breakdown["t_s"] - totals["peak_heap_time_s"]) < 0.5,
            "the breakdown's moment %.3f s is the peak's %.3f s" % (breakdown["t_s"], totals["peak_heap_time_s"]))
    # 1024 blocks of 64 KiB, nothing freed before the peak: the allocator holds little more than them.
    s.check(totals["fragmentation"]["ratio"] < 0.1,
            "fragmentation at the peak %.3f < 0.1 (not the start's or exit's)" % totals["fragmentation"]["ratio"])
    s.check(not any("went through malloc" in w for w in report["warnings"]),
            "no own-allocator warning for a program that uses malloc: %r" % report["warnings"])


@scenario
def scenario_own_allocator(s):
    """Memory from the program's own mmap'd arena: the near-zero heap comes with a warning, not in silence."""
    _, report = s.traced("run", [s.program("figures"), s.truth_file("figures"), "own_allocator"])
    t = s.read_truth("figures")
    s.check(report["totals"]["mmap_peak_bytes"] >= t["arena_bytes"], "mmap_peak_bytes %d >= the arena's %d"
            % (report["totals"]["mmap_peak_bytes"], t["arena_bytes"]))
    s.check(any("went through malloc" in w and "allocator of its own" in w for w in report["warnings"]),
            "a warning that the memory does not go through malloc: %r" % report["warnings"])


@scenario
def scenario_first_report(s):
    """The first report of a C, a C++ and a Python hello world: no leak and no fragmentation headline; what
    the runtime holds for the process's life listed apart, every byte of it."""
    script = os.path.join(s.work, "hello.py")
    with open(script, "w") as f:
        f.write("import json\nprint('hello, world', json.dumps({'a': [1, 2]}))\n")
    for name, command in (("c", [s.program("hello_c")]), ("cxx", [s.program("hello_cxx")]),
                          ("python", [SYSTEM_PYTHON, script])):
        out, report = s.traced(name, command)
        totals = report["totals"]
        s.eq(totals["leaked_bytes"], 0, "%s: nothing leaked" % name)
        s.check(totals["runtime_held_bytes"] > 0, "%s: the runtime's bytes are counted apart: %d"
                % (name, totals["runtime_held_bytes"]))
        s.check(all(g["runtime"] for g in report["leaks"]), "%s: every block never freed is the runtime's" % name)
        s.counts_consistent(report, name)
        summary = open(out + ".stderr", errors="replace").read()
        s.check("leaked       0 B" in summary and "held for the process's life" in summary,
                "%s: the summary says no leak, the runtime's apart:\n%s" % (name, summary))
        s.check("fragmentation none to speak of" in summary, "%s: no fragmentation headline:\n%s" % (name, summary))


@scenario
def scenario_exec_untraced(s):
    """A program that re-execs itself without LD_PRELOAD: its second image has no trace, and the report says so."""
    script = os.path.join(s.work, "reexec.py")
    with open(script, "w") as f:
        f.write("import os, sys\n"
                "env = dict(os.environ)\n"
                "env.pop('LD_PRELOAD', None)\n"
                "os.execve('/bin/echo', ['/bin/echo', 'second image'], env)\n")
    _, report = s.traced("run", [SYSTEM_PYTHON, script])
    s.check(any("exec'd /bin/echo, which left no trace" in w and "LD_PRELOAD" in w for w in report["warnings"]),
            "the untraced second image is said: %r" % report["warnings"])


@scenario
def scenario_exec(s):
    """fork + exec: the pre-exec segment was exec'd (not killed); the summary lists every process; a child's report
    and a run without run.json do not claim an exit code."""
    program = s.program("figures")
    out, report = s.traced("run", [program, s.truth_file("parent"), "fork_exec", s.truth_file("figures")])
    t = s.read_truth("parent")
    child = t["child_pid"]
    s.check(not any("killed" in w for w in report["warnings"]), "no 'killed' warning: %r" % report["warnings"])
    s.check(not any("left no trace" in w for w in report["warnings"]), "no untraced exec: %r" % report["warnings"])
    procs = {(p["pid"], p["ended"]): p for p in report["processes"]}
    s.eq(len(report["processes"]), 3, "processes: the parent, the child before and after exec")
    pre = procs.get((child, "exec"))
    if s.check(pre is not None, "the child's pre-exec segment ended by exec: %r" % report["processes"]):
        s.eq(pre["exec_path"], program, "the program it exec'd")
    s.eq(report["processes"][0]["exit_code"], 0, "the traced process's exit code")
    summary = open(out + ".stderr", errors="replace").read()
    s.check("processes (3" in summary, "the text summary lists the processes:\n" + summary)
    for p in report["processes"]:
        s.check(" %d " % p["pid"] in summary, "the summary names pid %d" % p["pid"])
    s.check("exec'd figures" in summary, "the summary says the child exec'd:\n" + summary)
    s.same_as_report_afterwards(out, "fork + exec")

    # The exec'd child's own report: its command, no exit code memstage never saw.
    child_trace = os.path.join(out, "trace.%d.1.mst" % child)
    child_report = s.report_json(child_trace, "child_report")
    s.eq(child_report["command"], [program, s.truth_file("figures"), "heap_peak"], "the child report's command")
    s.eq(child_report["exit_code"], None, "the child report's exit code (unknown)")

    # memstage itself killed before writing run.json: the exit code is unknown, not 0.
    os.remove(os.path.join(out, "run.json"))
    again = s.report_json(out, "no_run_json")
    s.eq(again["exit_code"], None, "exit code without run.json")
    proc = s.run([s.memstage, "report", out, "--format", "text"])
    s.check("exit code unknown" in proc.stdout.decode(errors="replace"), "the text report says the exit code is unknown")


@scenario
def scenario_attach(s):
    """memstage attach on running programs (full and stats mode): the growing site is named, the report says memory
    from before attach is unknown, the program ends as it would have; no process, no gdb, a static program, another
    user's process: one-line errors."""
    program = s.program("attach_target")
    rounds = "600"  # 20 ms each: long enough for gdb's two visits on a busy machine
    targets = {}
    # Side by side: one left alone, one attached in each mode.
    for kind in ("plain", "full", "stats", "aggregate", "sample"):
        cwd = os.path.join(s.work, kind + ".cwd")
        os.makedirs(cwd)
        ready = os.path.join(cwd, "ready")
        proc = subprocess.Popen([program, os.path.join(cwd, "truth.json"), ready, rounds], cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        targets[kind] = (proc, cwd, ready)
    for kind, (proc, _, ready) in targets.items():
        deadline = time.monotonic() + 20
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not s.check(os.path.exists(ready), "%s: the target started its loop" % kind):
            for p, _, _ in targets.values():
                p.kill()
            raise SystemExit(s.finish())

    plain = targets["plain"][0]
    # The refusals, on a live process.
    gone = subprocess.Popen(["true"])
    gone.wait()
    proc = s.run([s.memstage, "attach", str(gone.pid)])
    s.eq(proc.returncode, 2, "attach to a pid that ended: exit code")
    s.one_line_error(proc, "attach to a pid that ended", "no process with pid %d" % gone.pid)
    proc = s.run([s.memstage, "attach", str(plain.pid)], env=dict(os.environ, PATH="/nonexistent"))
    s.eq(proc.returncode, 2, "attach without gdb on PATH: exit code")
    s.one_line_error(proc, "attach without gdb on PATH", "gdb is not installed")
    static = s.program("static_sleeper")
    if os.path.exists(static):
        sleeper = subprocess.Popen([static])
        try:
            proc = s.run([s.memstage, "attach", str(sleeper.pid)])
        finally:
            sleeper.kill()
            sleeper.wait()
        s.eq(proc.returncode, 2, "attach to a static program: exit code")
        s.one_line_error(proc, "attach to a static program", "is statically linked")
    else:
        print("NOTE: no static_sleeper (the C library's static archive is missing): the static refusal is unchecked")
    # Another user's process: memstage as nobody against ours (root), or as us against pid 1 when that is another's.
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv:
        proc = s.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", s.memstage, "attach", str(plain.pid)])
        s.eq(proc.returncode, 2, "attach as nobody to root's process: exit code")
        s.one_line_error(proc, "attach as nobody to root's process", "no permission to trace pid %d" % plain.pid)
    elif os.geteuid() != 0 and os.stat("/proc/1").st_uid != os.geteuid():
        proc = s.run([s.memstage, "attach", "1"])
        s.eq(proc.returncode, 2, "attach to pid 1 (another user's): exit code")
        s.one_line_error(proc, "attach to pid 1 (another user's)", "no permission to trace pid 1")
    else:
        print("NOTE: neither root with setpriv nor another user's pid 1: the permission refusal is unchecked here")
    attach_refused_by_ptrace_scope(s, plain.pid)

    # Attached for about 1 s each, all at once: full and aggregate mode for --duration 1, stats mode until a
    # SIGINT (Ctrl-C) 1 s after its trace appeared.
    attaches = {}
    for mode in ("full", "stats", "aggregate", "sample"):
        out = os.path.join(s.work, mode)
        argv = [s.memstage, "attach", str(targets[mode][0].pid), "-o", out, "--mode", mode]
        if mode != "stats":
            argv += ["--duration", "1"]
        if mode == "sample":
            argv += ["--sample-rate", "16KiB"]  # grow()'s 64 KiB blocks are each sampled, at their size
        print("$ " + " ".join(argv), flush=True)
        attaches[mode] = (subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE), out)
    trace = os.path.join(attaches["stats"][1], "trace.%d.mst" % targets["stats"][0].pid)
    deadline = time.monotonic() + 120
    while not os.path.exists(trace) and attaches["stats"][0].poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1)
    attaches["stats"][0].send_signal(signal.SIGINT)
    for mode, (proc, out) in attaches.items():
        stdout, stderr = proc.communicate(timeout=300)
        text = stderr.decode(errors="replace")
        with open(out + ".stderr", "w") as f:
            f.write(text)
        s.eq(proc.returncode, 0, "%s: exit code of memstage attach" % mode)
        s.check("ended while attached" not in text, "%s: the target outlived the attach:\n%s" % (mode, text))
    results = {}
    for kind, (proc, cwd, _) in targets.items():
        stdout, stderr = proc.communicate(timeout=120)
        results[kind] = (proc.returncode, stdout, stderr)
    for mode in ("full", "stats", "aggregate", "sample"):
        s.eq(results[mode][0], 7, "%s: exit status of the attached program" % mode)
        s.eq(results[mode][0], results["plain"][0], "%s: exit status attached == untouched" % mode)
        s.eq(results[mode][1], results["plain"][1], "%s: stdout attached == untouched" % mode)
        s.eq(results[mode][2], results["plain"][2], "%s: stderr attached == untouched" % mode)
    s.check(results["plain"][1].endswith(b"done, 600 blocks freed\n"), "the program printed to its end")

    truth_path = os.path.join(targets["full"][1], "truth.json")
    with open(truth_path) as f:
        truth = json.load(f)
    reports = {}
    for mode in ("full", "stats", "aggregate", "sample"):
        path = os.path.join(attaches[mode][1], "report.json")
        if not s.check(os.path.exists(path), "%s: report.json written" % mode):
            continue
        s.reports.append(path)
        reports[mode] = read_report(path)
        s.eq(reports[mode].get("attached"), True, "%s: the report says it was attached" % mode)
        s.same_as_report_afterwards(attaches[mode][1], "attach --mode %s" % mode)
        s.check(reports[mode]["totals"]["allocations"] > 0, "%s: allocations were counted while attached" % mode)
    for mode in ("full", "aggregate", "sample"):
        report = reports.get(mode)
        if not report:
            continue
        # The growing site: first in what was held at the peak and in what was still held at detach (leak groups
        # are per stage: summed by site).
        for key, groups in (("top_stacks_at_peak", report["totals"].get("top_stacks_at_peak") or []),
                            ("leaks", report.get("leaks") or [])):
            if not s.check(groups, "%s: %s is not empty" % (mode, key)):
                continue
            by_site = {}
            for group in groups:
                frames = user_frames(group["stack"])
                site = (base_name(frames[0].get("function")), frames[0].get("line")) if frames else None
                by_site[site] = by_site.get(site, 0) + group["bytes"]
            site, held = max(by_site.items(), key=lambda item: item[1])
            s.eq(site, ("grow", truth["grow_line"]), "%s: the site holding most in %s" % (mode, key))
            s.eq(held % truth["grow_bytes"], 0, "%s: %s: grow() holds whole 64 KiB blocks" % (mode, key))
            s.check(held >= 10 * truth["grow_bytes"], "%s: %s: grow() holds %d bytes: 10 or more rounds' blocks"
                    % (mode, key, held))
        # Blocks allocated before attach are unknown; their frees (in the middle of the run) are ignored.
        for group in report["leaks"]:
            s.check(not has_function(group["stack"], "before_attach"), "%s: no block from before attach is held"
                    % mode)
    full = reports.get("full")
    if full:
        # Growth over time names the growing site first.
        growth = full.get("growth") or []
        if s.check(growth, "full: the report lists stacks growing over time"):
            frames = user_frames(growth[0]["stack"])
            s.eq(base_name(frames[0].get("function")) if frames else None, "grow", "full: growth[0] is grow()'s")
            s.check(growth[0]["bytes_per_s"] > 0, "full: grow() grows at %.0f bytes/s" % growth[0]["bytes_per_s"])
        s.counts_consistent(full, "full")
        # The stage markers' weak references reach the tracer once attached.
        stages = [st for st in full["stages"] if st["name"] == "ten rounds"]
        s.check(len(stages) >= 2, "full: the stage markers were recorded while attached (%d stages)" % len(stages))
        text = s.run([s.memstage, "report", attaches["full"][1], "--format", "text"]).stdout.decode(errors="replace")
        s.check("memory allocated before attaching is unknown" in text, "full: the text summary says memory from "
                "before attach is unknown")
        html = open(os.path.join(attaches["full"][1], "report.html"), encoding="utf-8").read()
        s.check('"attached":true' in html.replace(" ", ""), "full: the page's data says it was attached")
def start_services(s, kinds, rounds, extra=()):
    """attach_service.py under /usr/bin/python3, one per kind, each in a folder of its own, once its loop runs:
    {kind: (Popen, cwd)}."""
    script = os.path.join(SOURCE_PROGRAMS, "attach_service.py")
    services = {}
    for kind in kinds:
        cwd = os.path.join(s.work, kind + ".cwd")
        os.makedirs(cwd)
        proc = subprocess.Popen([SYSTEM_PYTHON, script, "truth.json", "ready", str(rounds)] + list(extra), cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        services[kind] = (proc, cwd)
    for kind, (proc, cwd) in services.items():
        deadline = time.monotonic() + 30
        while not os.path.exists(os.path.join(cwd, "ready")) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not s.check(os.path.exists(os.path.join(cwd, "ready")), "%s: the service started its loop" % kind):
            for p, _ in services.values():
                p.kill()
            raise SystemExit(s.finish())
    return services


def python_frames_of(stack):
    return [(f.get("function"), f.get("line")) for f in stack if f.get("kind") == "python"]


def attach_python_refusals(s, pid):
    """--duration that is no length of time: one line, exit 2, before anything touches the process."""
    for value in ("nan", "0", "-1", "inf"):
        proc = s.run([s.memstage, "attach", str(pid), "--duration", value, "-o", os.path.join(s.work, "refused")])
        s.eq(proc.returncode, 2, "attach --duration %s: exit code" % value)
        s.one_line_error(proc, "attach --duration %s" % value, "must be a number of seconds above 0")
    s.check(not os.path.exists(os.path.join(s.work, "refused")), "a refused --duration made no output folder")


def attach_python_dies(s):
    """The service dies of SIGSEGV while attached: memstage says so and exits 139, whether memstage finds it a
    zombie (its parent has not waited yet) or its parent reaped it at once (then the trace says how it died)."""
    for kind in ("zombie", "reaped"):
        proc, cwd = start_services(s, ["dies_" + kind], 40, ["segv"])["dies_" + kind]
        if kind == "reaped":
            threading.Thread(target=proc.wait, daemon=True).start()
        out = os.path.join(s.work, "dies_" + kind)
        attach = s.run([s.memstage, "attach", str(proc.pid), "-o", out, "--mode", "stats"], timeout=120)
        text = attach.stderr.decode(errors="replace")
        s.eq(attach.returncode, 139, "%s: memstage's exit code when the service died of SIGSEGV" % kind)
        s.check("killed by SIGSEGV (signal 11), exit 139" in text, "%s: memstage says how the service ended:\n%s"
                % (kind, text))
        proc.wait(timeout=60)
        s.eq(proc.returncode, -signal.SIGSEGV, "%s: the service died of SIGSEGV, as it does alone" % kind)


@scenario
def scenario_attach_in_allocator(s):
    """memstage attach, in full and stats mode, to a program inside glibc's malloc and free much of the time:
    gdb's calls (dlopen, the tracer's start and stop, which ask the allocator) wait for a moment when no thread
    is inside it. Made on a thread stopped inside it, they corrupted the heap (glibc's assertion in sysmalloc) or
    waited for its lock for ever. The program lives on through every attach, and each attach reports."""
    for i, mode in enumerate(("full", "stats", "full", "stats")):
        cwd = os.path.join(s.work, "busy%d" % i)
        os.makedirs(cwd)
        ready = os.path.join(cwd, "ready")
        proc = subprocess.Popen([s.program("malloc_busy"), ready], cwd=cwd)
        deadline = time.monotonic() + 20
        while not os.path.exists(ready) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        out = os.path.join(cwd, "out")
        attach = s.run([s.memstage, "attach", str(proc.pid), "-o", out, "--mode", mode, "--duration", "0.5"])
        s.eq(proc.poll(), None, "attach %d (%s mode): the program is alive after it (stderr: %s)"
             % (i, mode, attach.stderr.decode(errors="replace")[-300:]))
        proc.kill()
        proc.wait()
        s.eq(attach.returncode, 0, "attach %d (%s mode): exit code" % (i, mode))
        s.check(os.path.exists(os.path.join(out, "report.json")), "attach %d (%s mode): report.json written" % (i, mode))


def attach_python_retry(s):
    """An attach that failed before recording (the tracer could not make its trace file: the folder is out of
    the process's reach) leaves the process to a later attach; one that recorded is the process's one."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        print("NOTE: not root with setpriv: the retry after a failed attach is unchecked here")
        return
    closed = os.path.join(s.work, "closed")
    os.makedirs(closed, mode=0o700)
    target = subprocess.Popen([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "120"])
    try:
        time.sleep(0.3)
        proc = s.run([s.memstage, "attach", str(target.pid), "-o", os.path.join(closed, "out"), "--duration", "0.5"])
        s.eq(proc.returncode, 2, "attach into a folder nobody cannot reach: exit code")
        s.one_line_error(proc, "attach into a folder nobody cannot reach", "the tracer could not start")
        again = os.path.join(s.work, "retry")
        proc = s.run([s.memstage, "attach", str(target.pid), "-o", again, "--duration", "0.5", "-q"])
        s.eq(proc.returncode, 0, "attach again after the failed one: exit code (stderr %r)" % proc.stderr)
        s.check(os.path.exists(os.path.join(again, "report.json")), "attach again after the failed one: a report")
        proc = s.run([s.memstage, "attach", str(target.pid), "-o", os.path.join(s.work, "third"), "--duration", "0.5"])
        s.eq(proc.returncode, 2, "a third attach, after one that recorded: exit code")
        s.one_line_error(proc, "a third attach, after one that recorded", "was recorded by an attach before")
    finally:
        target.kill()
        target.wait()


# Four attaches at once, then three more one after the other: gdb's visits on a busy machine.
@scenario(timeout_s=240)
def scenario_attach_python(s):
    """memstage attach on Debian's /usr/bin/python3 (not PIE: its malloc and free are PLT stubs) in every mode: the
    service's output and exit status unchanged, its allocations counted, its leaking Python function named; the
    service's death by a signal is memstage's exit status; --duration refusals; a failed attach can be retried."""
    modes = ("full", "stats", "aggregate", "sample")
    services = start_services(s, ("plain",) + modes, 400)  # 20 ms rounds: time for gdb's two visits on a busy machine
    attach_python_refusals(s, services["plain"][0].pid)
    attaches = {}
    for mode in modes:
        out = os.path.join(s.work, mode)
        argv = [s.memstage, "attach", str(services[mode][0].pid), "-o", out, "--mode", mode, "--duration", "1"]
        if mode == "sample":
            argv += ["--sample-rate", "16KiB"]  # leak_block's 64 KiB blocks are each sampled, at their size
        print("$ " + " ".join(argv), flush=True)
        attaches[mode] = (subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE), out)
    for mode, (proc, out) in attaches.items():
        _, stderr = proc.communicate(timeout=300)
        text = stderr.decode(errors="replace")
        with open(out + ".stderr", "w") as f:
            f.write(text)
        s.eq(proc.returncode, 0, "%s: exit code of memstage attach (stderr in %s.stderr)" % (mode, out))
        s.check("ended while attached" not in text, "%s: the service outlived the attach:\n%s" % (mode, text))
    results = {}
    for kind, (proc, _) in services.items():
        stdout, stderr = proc.communicate(timeout=120)
        results[kind] = (proc.returncode, stdout, stderr)
    s.check(results["plain"][1].endswith(b"done, 400 blocks kept\n"), "the service printed to its end")
    for mode in modes:
        s.eq(results[mode][0], 7, "%s: exit status of the attached service" % mode)
        s.eq(results[mode][1], results["plain"][1], "%s: stdout attached == untouched" % mode)
        s.eq(results[mode][2], results["plain"][2], "%s: stderr attached == untouched" % mode)
    with open(os.path.join(services["full"][1], "truth.json")) as f:
        truth = json.load(f)
    for mode in modes:
        path = os.path.join(attaches[mode][1], "report.json")
        if not s.check(os.path.exists(path), "%s: report.json written" % mode):
            continue
        s.reports.append(path)
        report = read_report(path)
        s.eq(report.get("attached"), True, "%s: the report says it was attached" % mode)
        # 20 churned blocks of 2 KiB and one kept block of 64 KiB a round: far more than 100 in a second.
        s.check(report["totals"]["allocations"] > 100, "%s: the service's allocations were counted (%d)"
                % (mode, report["totals"]["allocations"]))
        if mode == "stats":
            continue
        by_function = {}
        for group in report.get("leaks") or []:
            frames = python_frames_of(group["stack"])
            key = frames[0] if frames else None
            by_function[key] = by_function.get(key, 0) + group["bytes"]
        if not s.check(by_function, "%s: the report lists what was held at detach" % mode):
            continue
        site, held = max(by_function.items(), key=lambda item: item[1])
        s.eq(site, (truth["leak_function"], truth["leak_line"]), "%s: the innermost Python frame holding most" % mode)
        s.check(held >= 10 * truth["leak_bytes"], "%s: leak_block holds %d bytes: 10 or more rounds' blocks"
                % (mode, held))
    attach_python_dies(s)
    attach_python_retry(s)


def rounding_allowance(full_report, figures):
    """What counting usable sizes can add to a peak of requested sizes: glibc rounds a block
    up to 16 bytes with an 8-byte header (at most 24 bytes more for tiny ones), and a block it
    maps on its own (128 KiB and up by default) up to a page. Per block live at the peak, from
    the full run's stacks at that peak (the whole list when it has fewer than 20 entries)."""
    top = figures["top_stacks_at_peak"]
    if len(top) >= 20:
        return None
    allowance = 0
    for e in top:
        average = e["bytes"] / max(e["blocks"], 1)
        allowance += e["blocks"] * (4096 + 16 if average >= 128 * 1024 else 24)
    return allowance


@scenario
def scenario_sample_mode(s):
    """--mode sample: exact peaks (to allocator rounding) on the exact programs, a leak found by its stack."""
    for program, stages in (("peak", ("measure",)), ("stages", None)):
        _, full = s.traced(program + "_full", [s.program(program), s.truth_file(program + "_full")])
        _, sample = s.traced(program + "_sample", [s.program(program), s.truth_file(program + "_sample")],
                             mode="sample")
        s.eq(sample["mode"], "sample", "%s: mode" % program)
        sampling = sample.get("sampling") or {}
        s.eq(sampling.get("rate_bytes"), 256 * 1024, "%s: the default rate in the report" % program)
        s.check("are estimates" in sampling.get("note", ""), "%s: the report says what is estimated" % program)
        pairs = [("run", full["totals"], sample["totals"])]
        full_stages = {st["path"]: st for st in full["stages"]}
        sample_stages = {st["path"]: st for st in sample["stages"]}
        s.eq(sorted(sample_stages), sorted(full_stages), "%s: the same stages" % program)
        for path in stages or sorted(full_stages):
            if path in full_stages and path in sample_stages:
                pairs.append(("stage " + path, full_stages[path], sample_stages[path]))
        run_allowance = rounding_allowance(full, full["totals"])
        for where, f, m in pairs:
            # A stage's peak holds the blocks live then (its stacks), and those of the stages
            # around it (in the run's peak for these programs, which free nothing earlier).
            stage_allowance = rounding_allowance(full, f)
            allowance = None if run_allowance is None or stage_allowance is None else max(run_allowance, stage_allowance)
            got, exact = m["peak_heap_bytes"], f["peak_heap_bytes"]
            print("%s %s: full %d, sample %d (usable sizes), allowance %s" % (program, where, exact, got, allowance))
            s.check(got >= exact, "%s %s: sample mode's peak %d counts usable sizes, at least full mode's %d"
                    % (program, where, got, exact))
            limit = allowance if allowance is not None else max(64 * 1024, exact // 100)
            s.check(got - exact <= limit, "%s %s: sample mode's peak %d within allocator rounding (%d) of full "
                    "mode's %d" % (program, where, got, limit, exact))
            s.eq(m["allocations"], f["allocations"], "%s %s: allocations, counted on every call" % (program, where))

    # The leaks program: 10 x 1 MiB from leak_b, found by its stack.
    _, report = s.traced("leaks_sample", [s.program("leaks"), s.truth_file("leaks_sample")], mode="sample")
    t = s.read_truth("leaks_sample")
    mine = [g for g in report["leaks"] if has_function(g["stack"], "leak_b")]
    truth_bytes = t["blocks_b"] * t["size_b"]
    got = sum(g["bytes"] for g in mine)
    print("leak_b: %d bytes estimated, %d true" % (got, truth_bytes))
    s.check(abs(got - truth_bytes) <= 0.3 * truth_bytes,
            "leak_b: %d bytes estimated within 30%% of %d" % (got, truth_bytes))
    for g in mine:
        top = user_frames(g["stack"])
        if s.check(top, "leak_b: a leak stack with program frames"):
            s.eq(top[0]["line"], t["leak_b_line"], "leak_b: top frame's line")



# The sizes each mode counts the heap in (docs/architecture.md, "live heap"): full and
# aggregate modes the sizes the program requested, stats and sample modes the allocator's
# usable sizes (malloc_usable_size), counted on every call.
HEAP_SIZES = {"full": "peak_heap_bytes", "aggregate": "peak_heap_bytes",
              "stats": "peak_usable_bytes", "sample": "peak_usable_bytes"}


def check_modes_run(s, name, mode, report, t):
    """One run of programs/modes.cpp: every stage's peak (in the mode's sizes), allocations
    and bytes allocated exactly the program's, nested stages each counting what they did
    while innermost; the run's peak the program's on top of the runtime's blocks."""
    s.eq(report["mode"], mode, "%s: mode" % name)
    got = {st["path"]: st for st in report["stages"]}
    expected = t["stages"]
    s.eq(sorted(got), sorted(e["path"] for e in expected), "%s: stage paths" % name)
    if "baseline" not in got:
        return None
    key = HEAP_SIZES[mode]
    base = got["baseline"]["peak_heap_bytes"]  # the runtime's blocks, in this mode's sizes
    figures = {}
    for e in expected:
        g = got.get(e["path"])
        if g is None:
            continue
        where = "%s: stage %s" % (name, e["path"])
        s.eq(g["depth"], e["depth"], where + ": depth")
        s.eq(g["peak_heap_bytes"], base + e[key], where + ": peak_heap_bytes (baseline + the program's %s)" % key)
        s.eq(g["allocations"], e["allocations"], where + ": allocations")
        s.eq(g["bytes_allocated"], e["bytes_allocated"], where + ": bytes_allocated")
        figures[e["path"]] = (g["peak_heap_bytes"] - base, g["allocations"], g["bytes_allocated"])
    s.eq(report["totals"]["peak_heap_bytes"], base + t[key], "%s: totals.peak_heap_bytes" % name)
    print("%s: baseline %d; per stage (peak less baseline, allocations, bytes): %r" % (name, base, figures))
    return figures


@scenario
def scenario_figures_modes(s):
    """programs/modes.cpp in all four modes: each stage's peak heap, allocations and bytes
    allocated are the program's own count in every mode; peaks, and each stage's rise above its
    start, in requested sizes in full and aggregate modes, usable sizes in stats and sample
    modes, the rounding between the two exactly malloc_usable_size's."""
    results, rises = {}, {}
    for mode in ("full", "aggregate", "stats", "sample"):
        name = "modes_" + mode
        _, report = s.traced(name, [s.program("modes"), s.truth_file(name)], mode=mode)
        t = s.read_truth(name)
        s.eq(t["live_at_end_bytes"], 0, "%s: the program frees all it allocates" % name)
        results[mode] = check_modes_run(s, name, mode, report, t)
        rises[mode] = {st["path"]: st["peak_heap_increase_bytes"] for st in report["stages"]}
        # outer begins on an empty heap: its rise is its peak; inner's, what inner allocated.
        peak = "peak_heap_bytes" if mode in ("full", "aggregate") else "peak_usable_bytes"
        by_path = {e["path"]: e for e in t["stages"]}
        s.eq(rises[mode].get("outer"), by_path["outer"][peak], "%s: outer's heap rise is its peak" % name)
    # A stage's rise above its start, by each mode's size rule, as the peaks.
    s.eq(rises["aggregate"], rises["full"], "aggregate mode's heap rises == full mode's")
    s.eq(rises["sample"], rises["stats"], "sample mode's heap rises == stats mode's")
    # The counts are one figure in every mode; the peaks one per size rule.
    if all(results.values()):
        counts = {m: {p: f[1:] for p, f in r.items()} for m, r in results.items()}
        s.eq(counts["aggregate"], counts["full"], "aggregate mode's stage counts == full mode's")
        s.eq(counts["stats"], counts["full"], "stats mode's stage counts == full mode's")
        s.eq(counts["sample"], counts["full"], "sample mode's stage counts == full mode's")
        s.eq(results["aggregate"], results["full"], "aggregate mode's figures == full mode's")
        s.eq(results["sample"], results["stats"], "sample mode's figures == stats mode's")
    # Another allocator's usable sizes are its size classes, read by its malloc_usable_size.
    for lib in ("libjemalloc.so.2", "libtcmalloc_minimal.so.4", "libmimalloc.so.2"):
        path = os.path.join("/usr/lib/x86_64-linux-gnu", lib)
        if not os.path.exists(path):
            print("%s not installed: stats mode under it not checked" % lib)
            continue
        name = "modes_stats_" + lib.split(".")[0]
        env = dict(os.environ, LD_PRELOAD=path)
        _, report = s.traced(name, [s.program("modes"), s.truth_file(name)], mode="stats", env=env)
        check_modes_run(s, name, "stats", report, s.read_truth(name))


@scenario
def scenario_stats_stages(s):
    """Stats mode on nested stages (outer 530 allocations, inner 7 while nested), with one
    thread and with the tracer's writer thread running: each stage counts what it did while
    innermost, its peak the exact heap in usable sizes, blocks a thread left to another when
    it ended (handover) included."""
    for variant in ((), ("threaded",)):
        name = "stats_" + (variant[0] if variant else "single")
        _, report = s.traced(name, [s.program("modes"), s.truth_file(name)] + list(variant), mode="stats")
        t = s.read_truth(name)
        by_path = {e["path"]: e for e in t["stages"]}
        s.eq((by_path["outer"]["allocations"], by_path["outer/inner"]["allocations"],
              by_path["handover"]["allocations"]), (530, 7, 5), "%s: the program's own counts" % name)
        check_modes_run(s, name, "stats", report, t)



def frames_key(stack):
    """A stack as what it says (function, file, line per frame): two runs of one program
    give the same keys, whatever their stacks' indices."""
    return tuple((f.get("function"), file_base(f), f.get("line")) for f in stack)


def figures_by_mode(s, name, command, what):
    """The program under full mode and under aggregate mode: (full report, aggregate report)."""
    _, full = s.traced(name + ".full", command + [s.truth_file(name + ".full")])
    _, aggregate = s.traced(name + ".aggregate", command + [s.truth_file(name + ".aggregate")], mode="aggregate")
    s.eq(aggregate["mode"], "aggregate", "%s: mode" % what)
    s.check(any("aggregate mode" in n for n in aggregate.get("capture_notes", [])),
            "%s: the report says what aggregate mode cannot give: %r" % (what, aggregate.get("capture_notes")))
    return full, aggregate


def same_figures(s, full, aggregate, what):
    """Aggregate mode's figures are full mode's: totals, every stage, leaks by stack, the
    stacks at the run's and each stage's peak."""
    for key in ("peak_heap_bytes", "allocations", "frees", "bytes_allocated", "temporary_allocations",
                "leaked_bytes", "leaked_blocks"):
        s.eq(aggregate["totals"][key], full["totals"][key], "%s: totals.%s aggregate == full" % (what, key))
    s.eq([st["path"] for st in aggregate["stages"]], [st["path"] for st in full["stages"]], "%s: stage paths" % what)

    def top(entries):
        return sorted((frames_key(e["stack"]), e["bytes"], e["blocks"]) for e in entries)
    for a, f in zip(aggregate["stages"], full["stages"]):
        where = "%s: stage %s" % (what, f["path"])
        for key in ("peak_heap_bytes", "allocations", "frees", "bytes_allocated", "temporary_allocations",
                    "retained_bytes", "leaked_bytes", "leaked_blocks"):
            s.eq(a[key], f[key], "%s: %s aggregate == full" % (where, key))
        if len(f["top_stacks_at_peak"]) < 20:  # complete lists: ties at the cut would be listed in any order
            s.eq(top(a["top_stacks_at_peak"]), top(f["top_stacks_at_peak"]), "%s: stacks at its peak" % where)
    if len(full["totals"]["top_stacks_at_peak"]) < 20:
        s.eq(top(aggregate["totals"]["top_stacks_at_peak"]), top(full["totals"]["top_stacks_at_peak"]),
             "%s: stacks at the run's peak" % what)

    def leaks(report):
        return sorted((frames_key(g["stack"]), g["stage"] or "", g["bytes"], g["blocks"]) for g in report["leaks"])
    s.eq(leaks(aggregate), leaks(full), "%s: leaks by stack and stage" % what)


@scenario
def scenario_aggregate(s):
    """--mode aggregate gives full mode's figures on the exact programs (stages, peak, leaks)."""
    for program in ("stages", "peak", "leaks"):
        full, aggregate = figures_by_mode(s, program, [s.program(program)], program)
        same_figures(s, full, aggregate, program)
    # And the truth the stages program knows, through the same checks as full mode's.
    scenario_stages(s, mode="aggregate")


def trace_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder) if n.endswith(".mst"))


@scenario
def scenario_aggregate_size(s):
    """An aggregated capture does not grow with the calls: 4 x the calls, at most 1.2 x the bytes."""
    # The RSS timeline grows with wall time in every mode (a few bytes a tick; the 1-hour
    # figure of harness/bench counts it): one tick a second keeps it out of this count.
    sizes = {}
    for iterations in (250000, 1000000):
        name = "churn.%d" % iterations
        out, report = s.traced(name, [s.program("churn"), s.truth_file(name), str(iterations)], mode="aggregate",
                               run_flags=("--sample-interval", "1000"))
        sizes[iterations] = trace_bytes(out)
        churn = stage_by_path(report, "churn")
        if s.check(churn is not None, "%s: stage churn" % name):
            s.check(churn["allocations"] == iterations, "%s: allocations in the stage %d == %d"
                    % (name, churn["allocations"], iterations))
            s.eq(churn["leaked_bytes"], 0, "%s: nothing leaked in the stage" % name)
    print("capture bytes: %r" % sizes)
    s.check(sizes[1000000] <= 1.2 * sizes[250000], "capture of 4 x the calls %d bytes <= 1.2 x %d"
            % (sizes[1000000], sizes[250000]))


@scenario
def scenario_analysis_flat(s):
    """The analysis's memory does not grow with the events beyond pass one's log of them: a full-mode
    trace of 10 x the calls on the same few sites is analysed within the short one's memory plus that
    log (a byte an event here, what pass two replays instead of reading the trace again; kept up to
    AnalysisOptions::max_event_log_bytes, 64 MiB, past which the trace is read again)."""
    rss_mib, events = {}, {}
    for iterations in (200000, 2000000):
        name = "flat.%d" % iterations
        out, report = s.traced(name, [s.program("churn"), s.truth_file(name), str(iterations)],
                               run_flags=("--sample-interval", "1000"))
        events[iterations] = report["totals"]["allocations"] + report["totals"]["frees"]
        analysis = subprocess.Popen([s.memstage, "report", out, "--format", "json", "-o", out + ".again.json"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(analysis.pid, 0)
        analysis.returncode = os.waitstatus_to_exitcode(status)
        s.eq(analysis.returncode, 0, "%s: memstage report exits 0" % name)
        rss_mib[iterations] = usage.ru_maxrss / 1024
    short, long = sorted(rss_mib)
    log_mib = (events[long] - events[short]) / 2**20
    grew_mib = rss_mib[long] - rss_mib[short]
    print("analysis max RSS %.1f -> %.1f MiB for %d -> %d events (their log %.1f MiB)"
          % (rss_mib[short], rss_mib[long], events[short], events[long], log_mib))
    # 6 MiB for RSS read in huge pages (2 MiB each) and the allocator's own slack.
    s.check(grew_mib <= 1.25 * log_mib + 6, "the analysis grew %.1f MiB, at most the events' log %.1f MiB and slack"
            % (grew_mib, log_mib))


@scenario
def scenario_aggregate_aging(s):
    """Aggregate mode's timeline coarsens as the run ages (MEMSTAGE_TIMELINE_TICKS): a 3 s run with a budget
    of 50 ticks writes fewer bytes than with every 10 ms tick kept, and its peaks and stage edges are the same."""
    runs = {}
    for ticks in ("0", "50"):
        name = "aging.%s" % ticks
        env = dict(os.environ, MEMSTAGE_TIMELINE_TICKS=ticks)
        out, report = s.traced(name, [s.program("aging"), s.truth_file(name)], mode="aggregate", env=env)
        runs[ticks] = (trace_bytes(out), report)
    t = s.read_truth("aging.50")
    (full_bytes, full), (aged_bytes, aged) = runs["0"], runs["50"]
    points = (len(full["timeline"]), len(aged["timeline"]))
    print("capture bytes: every tick %d, aged %d; timeline points %d, %d" % ((full_bytes, aged_bytes) + points))
    # ~300 ticks against ~50 + 50 ln(3 s / 0.5 s) = ~140 (the header and modules are most of a short capture).
    s.check(points[1] < 0.6 * points[0], "aged timeline %d points < 0.6 x every tick's %d" % (points[1], points[0]))
    s.check(aged_bytes < full_bytes, "aged capture %d bytes < every tick's %d" % (aged_bytes, full_bytes))
    s.eq(aged["totals"]["peak_heap_bytes"], full["totals"]["peak_heap_bytes"], "the run's peak heap, aged and not")
    for stage, held in (("early", t["early_bytes"]), ("late", t["late_bytes"])):
        a, f = stage_by_path(aged, stage), stage_by_path(full, stage)
        if s.check(a is not None and f is not None, "stage %s in both runs" % stage):
            s.eq(a["peak_heap_bytes"], f["peak_heap_bytes"], "stage %s: peak heap, aged and not" % stage)
            s.check(a["peak_heap_bytes"] >= held, "stage %s: peak %d holds its %d bytes" % (stage, a["peak_heap_bytes"], held))
    s.check(full["totals"]["peak_heap_bytes"] >= t["early_bytes"], "the run's peak holds the 8 MiB")


@scenario
def scenario_timeline_aging_counting(s):
    """Stats and sample modes' timeline coarsens as the run ages too (MEMSTAGE_TIMELINE_TICKS=50): a run 4 x as
    long writes under 2.5 x the timeline points (~1.7 x; every tick kept, ~4 x) and fewer bytes than with every
    tick kept, with the same peaks and stage edges."""
    for mode in ("stats", "sample"):
        runs = {}
        for ticks, steps in (("0", 80), ("50", 20), ("50", 80)):
            name = "aging-%s.%s.%d" % (mode, ticks, steps)
            env = dict(os.environ, MEMSTAGE_TIMELINE_TICKS=ticks)
            out, report = s.traced(name, [s.program("aging"), s.truth_file(name), str(steps)], mode=mode, env=env)
            runs[(ticks, steps)] = (trace_bytes(out), report)
        (full_bytes, full), (short_bytes, short), (long_bytes, aged) = runs[("0", 80)], runs[("50", 20)], runs[("50", 80)]
        points = [len(r["timeline"]) for r in (full, short, aged)]
        print("%s: capture bytes every tick %d, aged %d (a quarter as long %d); timeline points %r"
              % (mode, full_bytes, long_bytes, short_bytes, points))
        s.check(points[2] < 2.5 * points[1], "%s: 4 x as long, %d points < 2.5 x %d" % (mode, points[2], points[1]))
        s.check(points[2] < 0.6 * points[0], "%s: aged %d points < 0.6 x every tick's %d" % (mode, points[2], points[0]))
        s.check(long_bytes < full_bytes, "%s: aged capture %d bytes < every tick's %d" % (mode, long_bytes, full_bytes))
        s.eq(aged["totals"]["peak_heap_bytes"], full["totals"]["peak_heap_bytes"], "%s: the run's peak heap" % mode)
        for stage in ("early", "late"):
            a, f = stage_by_path(aged, stage), stage_by_path(full, stage)
            if s.check(a is not None and f is not None, "%s: stage %s in both runs" % (mode, stage)):
                s.eq(a["peak_heap_bytes"], f["peak_heap_bytes"], "%s: stage %s's peak heap, aged and not" % (mode, stage))


@scenario
def scenario_sigkill_threaded(s):
    """As sigkill, the chunks written by the tracer's writer and compressor threads (a second thread
    churned first)."""
    scenario_sigkill(s, program_args=("threaded",))


@scenario
def scenario_sigterm_modes(s):
    """SIGTERM to a busy program that does not handle it, in every mode: exit 143, the trace completed from the
    tracer's handler (signal 15, no warning of a missing end), the 50 MiB held in the peak; the program sees
    SIGTERM's default action as SIG_DFL; and a handler it installs runs (exit 42)."""
    for mode in ("full", "aggregate", "stats", "sample"):
        _, report = s.traced("term-" + mode, [s.program("sigkill"), s.truth_file("term"), "term_busy"],
                             expect_exit=143, mode=mode)
        t = s.read_truth("term")
        held = t["blocks"] * t["size"]
        s.eq(t["saw_default"], 1, "%s: the program sees SIG_DFL for SIGTERM" % mode)
        s.eq(report["signal"], 15, "%s: report signal" % mode)
        s.check(report["totals"]["peak_heap_bytes"] >= held, "%s: peak_heap_bytes %d >= the %d bytes held"
                % (mode, report["totals"]["peak_heap_bytes"], held))
        s.check(not any("no end record" in w or "truncated" in w for w in report["warnings"]),
                "%s: no warning of an incomplete trace: %r" % (mode, report["warnings"]))
        if report["processes"]:
            s.eq(report["processes"][0]["ended"], "signal", "%s: processes[0].ended" % mode)
    s.traced("term-handled", [s.program("sigkill"), s.truth_file("handled"), "term_handled"], expect_exit=42)
    s.eq(s.read_truth("handled")["saw_default"], 1, "handled: SIG_DFL seen before installing its handler")


@scenario(may_skip=True)
def scenario_sigterm_pool(s):
    """multiprocessing.Pool.terminate() (SIGTERM) of two busy workers under Debian's python3, in every mode:
    each worker's trace ends with signal 15 and its peak heap holds the 21 MiB it held."""
    if not os.path.exists(SYSTEM_PYTHON):
        print("SKIP: no %s" % SYSTEM_PYTHON)
        raise SystemExit(SKIP)
    for mode in ("full", "aggregate", "stats", "sample"):
        truth_dir = os.path.join(s.work, "truth-" + mode)
        os.makedirs(truth_dir, exist_ok=True)
        for name in os.listdir(truth_dir):
            os.unlink(os.path.join(truth_dir, name))
        _, report = s.traced("pool-" + mode, [SYSTEM_PYTHON, os.path.join(SOURCE_PROGRAMS, "sigterm_pool.py"),
                                              truth_dir], mode=mode)
        by_pid = {p["pid"]: p for p in report["processes"]}
        for name in sorted(os.listdir(truth_dir)):
            with open(os.path.join(truth_dir, name)) as f:
                t = json.load(f)
            p = by_pid.get(t["pid"])
            if not s.check(p is not None, "%s: worker %d in the report" % (mode, t["pid"])):
                continue
            s.eq((p["ended"], p["signal"]), ("signal", 15), "%s: worker %d ended by SIGTERM" % (mode, t["pid"]))
            s.check(p["peak_heap_bytes"] >= t["held"], "%s: worker %d peak_heap_bytes %d >= the %d bytes it held"
                    % (mode, t["pid"], p["peak_heap_bytes"], t["held"]))


def make_memory_cgroup(limit):
    """A child cgroup with a memory limit under this process's own (v1) or the v2 root: (version, folder), or None
    where neither is writable."""
    with open("/proc/self/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    name = "memstage-e2e-%d" % os.getpid()
    for _, controllers, path in lines:
        if "memory" in controllers.split(",") and os.path.isdir("/sys/fs/cgroup/memory"):
            folder = os.path.join("/sys/fs/cgroup/memory" + path, name)
            files = [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]
            version = 1
            break
    else:
        folder = os.path.join("/sys/fs/cgroup", name)
        files = [("memory.max", limit), ("memory.swap.max", 0)]
        version = 2
        try:
            with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
                f.write("+memory")
        except OSError:
            return None
    try:
        os.mkdir(folder)
        for file, value in files:
            if os.path.exists(os.path.join(folder, file)):
                with open(os.path.join(folder, file), "w") as f:
                    f.write(str(value))
    except OSError:
        return None
    return version, folder


def run_in_memory_cgroup(s, limit, argv):
    """argv run in a cgroup of its own limited to `limit` bytes (make_memory_cgroup), removed after:
    (version, folder, the finished process). Skips the scenario where no cgroup is writable."""
    made = make_memory_cgroup(limit)
    if made is None:
        print("SKIP: no writable memory cgroup (v1 or v2) on this machine")
        raise SystemExit(SKIP)
    version, folder = made
    try:
        enter = "echo $$ > %s/cgroup.procs && exec \"$@\"" % folder
        proc = s.run(["sh", "-c", enter, "sh"] + argv)
    finally:
        subprocess.run(["sh", "-c", "echo $$ > %s/cgroup.procs" % os.path.dirname(folder)])
        for _ in range(50):
            try:
                os.rmdir(folder)
                break
            except OSError:
                time.sleep(0.1)
    return version, folder, proc


@scenario(may_skip=True)
def scenario_ram_limit_auto(s):
    """memstage run --ram-limit auto in a cgroup limited to 512 MiB: the limit taken from memory.max (v2) or
    memory.limit_in_bytes (v1), in run.json and the report."""
    limit = 512 * MIB
    out = os.path.join(s.work, "auto")
    version, _, proc = run_in_memory_cgroup(s, limit, [s.memstage, "run", "-q", "--ram-limit", "auto", "-o", out, "--",
                                                       s.program("peak"), os.path.join(s.work, "peak.truth.json")])
    if not s.eq(proc.returncode, 0, "memstage run --ram-limit auto in a v%d cgroup: %r" % (version, proc.stderr)):
        return
    report = read_report(os.path.join(out, "report.json"))
    s.reports.append(os.path.join(out, "report.json"))
    s.eq(report["ram_limit_bytes"], limit, "report.json's ram_limit_bytes: the cgroup's limit")
    s.eq(report["ram_limit"], None, "a limit far above the program's RSS is not passed")


@scenario(may_skip=True)
def scenario_oom_cgroup(s):
    """A program that mallocs and touches 10 MiB blocks under a 300 MiB cgroup limit (v1 or v2, made for the test):
    the OOM killer ends it (exit 137), and the report names it with the cgroup and the limit in JSON, text and page."""
    limit = 300 * MIB
    out = os.path.join(s.work, "oom")
    version, folder, proc = run_in_memory_cgroup(s, limit, [s.memstage, "run", "--read-after-exit", "-o", out, "--",
                                                            s.program("oom_hog")])
    s.eq(proc.returncode, 137, "exit code of memstage run (the OOM killer's SIGKILL)")
    report = read_report(os.path.join(out, "report.json"))
    s.reports.append(os.path.join(out, "report.json"))
    oom = report.get("oom_kill")
    if not s.check(oom is not None, "report.json names the OOM kill: %r" % report.get("warnings")):
        return
    s.eq(oom["cgroup_version"], version, "oom_kill.cgroup_version")
    s.eq(oom["limit_bytes"], limit, "oom_kill.limit_bytes")
    s.check(oom["processes_killed"] >= 1, "oom_kill.processes_killed %d >= 1" % oom["processes_killed"])
    s.check(oom["cgroup"].endswith(os.path.basename(folder)), "oom_kill.cgroup %s is the test's" % oom["cgroup"])
    text = s.run([s.memstage, "report", out, "--format", "text"]).stdout.decode()
    s.check("OOM killer" in text and "300.0 MiB" in text, "the text report names the OOM killer and the limit")
    with open(os.path.join(out, "report.html")) as f:
        s.check("OOM killer" in f.read(), "the page names the OOM killer")


@scenario
def scenario_aggregate_sigkill(s):
    """A SIGKILLed aggregate run reports up to its last snapshot: the 50 MiB held, by their stack."""
    scenario_sigkill(s, mode="aggregate", run_flags=("--snapshot-interval", "0.2"))


@scenario
def scenario_sample_sigkill(s):
    """A SIGKILLed sample-mode run of one thread that never waits (its trace written only at serve points on its
    own calls, small blocks allocated slowly): the 50 MiB held, by their stack, and every call it made up to 0.5 s
    before the kill."""
    report = scenario_sigkill(s, mode="sample", program_args=("busy",))
    t = s.read_truth("sigkill")
    before = t["blocks"] + t["small_blocks_before"]
    s.check(report["totals"]["allocations"] >= before, "allocations %d >= the %d made 0.5 s before the kill"
            % (report["totals"]["allocations"], before))


def kill_at(s, mode, name, delay_s, memstage_too=False, threaded=False):
    """memstage run --mode MODE of kill_schedule, SIGKILLed delay_s after it started allocating:
    (report, truth) with truth as the program left it in its mapped file at its death. memstage_too: memstage is
    killed first, and the report is `memstage report` of the folder afterwards. threaded: the program makes a
    second thread first, so the tracer's writer thread writes what it records."""
    out = os.path.join(s.work, name)
    progress_path = os.path.join(s.work, name + ".progress")
    with open(progress_path, "wb") as f:
        f.write(bytes(8192))
    argv = [s.memstage, "run", "-q", "-o", out, "--mode", mode, "--", s.program("kill_schedule"), progress_path]
    argv += ["threaded"] if threaded else []
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    fields = ("pid", "block_size", "usable_size", "blocks", "asked", "held", "finished", "rss_high_water_bytes")
    read = lambda: dict(zip(fields, struct.unpack_from("<8q", open(progress_path, "rb").read())))
    deadline = time.monotonic() + 30
    while read()["pid"] == 0 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.0005)
    if memstage_too:  # mid-run: once it holds 1-20 blocks, so that what it had not written is pending
        held = random.Random(delay_s).randint(1, 20)
        while read()["held"] < held and time.monotonic() < deadline:
            pass
    else:
        time.sleep(delay_s)
    pid = read()["pid"]
    if memstage_too:
        proc.kill()
        proc.wait()
    if pid:
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    if memstage_too:
        while os.path.exists("/proc/%d" % pid) and not open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] in "ZX":
            time.sleep(0.001)  # its new parent has not seen it die yet
        pending = glob.glob("/dev/shm/memstage.*.trace.%d.mst.pending" % pid) + glob.glob(out + "/*.pending")
        s.eq(len(pending), 1, "%s: the killed process's pending file" % name)
        after = s.run([s.memstage, "report", out, "--format", "json"])
        s.eq(after.returncode, 0, "%s: memstage report after memstage died" % name)
        s.check(not any(os.path.exists(p) for p in pending), "%s: memstage report drained %s" % (name, pending))
        return resolve_stacks(json.loads(after.stdout)), read()
    s.eq(proc.returncode, 137, "%s: exit code of memstage run (%s)" % (name, err.decode(errors="replace")[-300:]))
    return read_report(os.path.join(out, "report.json")), read()


@scenario
def scenario_sigkill_random(s):
    """SIGKILL at random instants of a program that allocates and touches 2 MiB blocks, in every mode: the
    peak heap reported is what the program held at its death (its own count, kept in a mapped file), the peak RSS
    at least the kernel's high-water mark it read last, and in full mode the blocks are held at the peak by their
    stack; once per mode memstage is killed first and `memstage report` of the folder says the same. MEMSTAGE_E2E_KILLS instants per mode
    (default 20), drawn from MEMSTAGE_E2E_SEED; every other one with a second thread in the program, so that the
    tracer's writer thread is the one that writes (a thread at a new heap high waits for its round)."""
    kills = int(os.environ.get("MEMSTAGE_E2E_KILLS", "20"))
    rng = random.Random(int(os.environ.get("MEMSTAGE_E2E_SEED", "20261206")))
    for mode in ("full", "aggregate", "stats", "sample"):
        for i in range(kills + 1):
            delay_s = rng.uniform(0.0, 0.25)
            memstage_too = i == kills  # once per mode, memstage dies first: `memstage report` drains
            threaded = i % 2 == 1
            name = "%s-%d%s" % (mode, i, "-threaded" if threaded else "") if not memstage_too else "%s-memstage-killed" % mode
            report, t = kill_at(s, mode, name, delay_s, memstage_too, threaded)
            # Requested sizes in full and aggregate mode, usable ones in stats and sample mode (docs/modes.md).
            size = t["block_size"] if mode in ("full", "aggregate") else t["usable_size"]
            truths = sorted({t["held"] * size, t["asked"] * size})  # two while the kill came inside a malloc
            peak = report["totals"]["peak_heap_bytes"]
            if size == 0 and t["asked"] == 1 and t["block_size"] <= peak < t["block_size"] + 4112:
                truths.append(peak)  # inside the first malloc, its usable size not yet known: glibc's rounding

            print("%s: killed %.3f s in, %d of %d blocks held, peak_heap_bytes %d" % (name, delay_s, t["held"], t["blocks"], peak))
            s.check(peak in truths, "%s (killed %.3f s in, %d of %d blocks held%s): peak_heap_bytes %d, truth %s"
                    % (name, delay_s, t["held"], t["blocks"], ", asked %d" % t["asked"] if t["asked"] != t["held"]
                       else "", peak, " or ".join(str(x) for x in truths)))
            # wait4's ru_maxrss, which only memstage run has: after memstage died, the RSS sampled last.
            # The kernel counts RSS in per-CPU counters (anonymous, file and shared pages) and reads them
            # approximately, each within its batch (max(32, 2 x CPUs) pages) per CPU of the truth: VmHWM and wait4's
            # ru_maxrss, two such readings, may differ by twice that (65 pages seen here).
            cpus = os.cpu_count() or 1
            rss, slack = report["totals"]["peak_rss_bytes"], 2 * 3 * max(32, 2 * cpus) * cpus * resource.getpagesize()
            s.check(memstage_too or rss + slack >= t["rss_high_water_bytes"], "%s: peak_rss_bytes %d >= the %d of "
                    "VmHWM the program read last, less %d" % (name, rss, t["rss_high_water_bytes"], slack))
            if mode == "full":  # aggregate mode's stacks at the peak come with its snapshots; sample mode lists none
                at_peak = sum(x["bytes"] for x in report["job"]["top_stacks_at_peak"]
                              if has_function(x["stack"], "hold_block"))
                s.check(at_peak in truths, "%s: hold_block's bytes at the peak %d, truth %s" % (name, at_peak, truths))


PTRACE_SEIZE, PTRACE_INTERRUPT, WALL = 0x4206, 0x4207, 0x40000000


def stop_one_thread(tid):
    """Stops thread `tid` alone (PTRACE_SEIZE, PTRACE_INTERRUPT), the rest of its process running on; False
    where ptrace is refused. The caller reaps it after the process dies (os.waitpid(tid, WALL))."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0 or libc.ptrace(PTRACE_INTERRUPT, tid, None, None) != 0:
        return False
    os.waitpid(tid, WALL)
    return True


def tracer_thread(pid, name):
    """The tid of the thread of `pid` called `name`, or 0."""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == name:
                return int(tid)
    return 0


@scenario(may_skip=True)
def scenario_sigkill_compressor_stalled(s):
    """SIGKILL of a program whose trace cannot reach the disk (the tracer's compressor thread stopped, as a disk
    that stalls its writes would hold it), in every mode: the program allocates 24 blocks 10 ms apart, each a
    new heap high, and the peak heap reported after the kill is still all 24, and in full mode held by their
    stack. The writer thread keeps moving what the threads record into the pending file while its chunks wait."""
    for mode in ("full", "aggregate", "stats", "sample"):
        out = os.path.join(s.work, mode)
        progress_path = out + ".progress"
        with open(progress_path, "wb") as f:
            f.write(bytes(8192))
        fields = ("pid", "block_size", "usable_size", "blocks", "asked", "held", "finished", "rss_high_water_bytes")
        read = lambda: dict(zip(fields, struct.unpack_from("<8q", open(progress_path, "rb").read())))
        proc = subprocess.Popen([s.memstage, "run", "-q", "-o", out, "--mode", mode, "--", s.program("kill_schedule"),
                                 progress_path, "threaded", "paced"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while read()["pid"] == 0 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.001)
        pid = read()["pid"]
        compressor = tracer_thread(pid, "memstage-zstd") if pid else 0
        s.check(compressor != 0, "%s: the tracer's compressor thread is there" % mode)
        if not compressor:
            proc.kill()
            proc.communicate()
            continue
        if not stop_one_thread(compressor):
            os.kill(pid, signal.SIGKILL)
            proc.communicate()
            print("SKIP: ptrace refused here, so no thread can be stopped alone")
            raise SystemExit(SKIP)
        with open(progress_path, "r+b") as f:  # go
            f.seek(64)
            f.write(struct.pack("<q", 1))
        while not read()["finished"] and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(compressor, WALL)  # its process's end waits for the tracer's reaping of it
        _, err = proc.communicate(timeout=120)
        t = read()
        s.eq(proc.returncode, 137, "%s: exit code of memstage run (%s)" % (mode, err.decode(errors="replace")[-300:]))
        s.eq(t["held"], t["blocks"], "%s: the program allocated every block before the kill" % mode)
        report = read_report(os.path.join(out, "report.json"))
        size = t["block_size"] if mode in ("full", "aggregate") else t["usable_size"]
        s.eq(report["totals"]["peak_heap_bytes"], t["held"] * size, "%s: peak_heap_bytes, every block" % mode)
        if mode == "full":
            at_peak = sum(x["bytes"] for x in report["job"]["top_stacks_at_peak"] if has_function(x["stack"], "hold_block"))
            s.eq(at_peak, t["held"] * size, "full: hold_block's bytes at the peak")


if __name__ == "__main__":
    sys.exit(SCENARIOS.main("e2e", __doc__.splitlines()[0]))
