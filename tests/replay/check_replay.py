#!/usr/bin/env python3
"""memstage replay against the run it replays, and its allocator settings (--tune, --suggest).

    check_replay.py SCENARIO --memstage MEMSTAGE --work DIR --program MODES_PROGRAM --handoff HANDOFF

MODES_PROGRAM is tests/e2e/programs/modes.cpp: nested stages; malloc, calloc, realloc, new[],
posix_memalign; blocks freed by another thread. HANDOFF is tests/compare/programs/handoff.cpp:
producer threads handing blocks through a bounded queue to consumer threads that free them.
Each scenario is one test replay.NAME:
- against_run: a full-mode run replayed under glibc and jemalloc: compare.json has both, says
  what a replay leaves out, and each replay's heap is the run's, the run's peak and every
  stage's peak to the byte (under jemalloc plus the 72,704 bytes of the pool libstdc++ makes
  at its start, which libjemalloc loads and the replayer does not).
- threads: HANDOFF's run replayed under glibc and jemalloc, one replay thread per recorded
  thread: the same allocations, frees and bytes; the stage after the threads joined peaks at
  the run's heap to the byte (a stage edge waits for every thread); the threads' stage within
  10 % of the run's peak heap (the marks of the trace's order hold the producers back, as
  the queue did: unheld, they would allocate every message before the consumers freed one).
- non_heap: by default the replayer holds the program's memory outside its heap (a Python
  program's, where that is much of its RSS): its peak RSS less the replayer's own, each in a
  run under glibc less the tracer's memory (the replayer's in calibration/, stats mode), said
  in the notes with those figures; its peak RSS is then higher than with --heap-only, whose
  notes say the figures are the heap's share; the heap's peak the same in both.
- refusals: a stats-mode run, and a file that is not a trace: one line, exit 2.
- tune_environment: each --tune is one more subject, named by its allocator and settings,
  and its settings reach the replayer and only it: jemalloc's stats (stats_print) say
  narenas 1, mimalloc's options (verbose) say decommit_delay 0.
- bad_tune: an unknown allocator, a setting without '=', a glibc name glibc ignores: one
  line, exit 2, before anything is replayed; so is memstage run --env without '='.
- suggest: --suggest STAGE replays each allocator's grid and ranks the settings by that
  stage's peak RSS, lowest first, in compare.json and on stdout; a stage no run reached is
  said in one line, exit 2; compare takes it alike.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, Scenarios, fresh_folder, read_report, run_command  # noqa: E402

CHECKS = Checks()
check = CHECKS.check
SCENARIOS = Scenarios()
scenario = SCENARIOS.register

LIBSTDCXX_POOL_BYTES = 72704


def run(argv):
    return run_command(argv, timeout=240, text=True)


def stage_peaks(report):
    return {s["path"]: s["peak_heap_bytes"] for s in report["stages"]}


def recorded_run(a):
    """A full-mode run of the program, once per scenario."""
    recorded = os.path.join(a.work, "run")
    p = run([a.memstage, "run", "-q", "--mode", "full", "-o", recorded, "--", a.program, os.path.join(a.work, "truth.json")])
    check(p.returncode == 0, "memstage run of the program: %s" % p.stderr[-500:])
    return recorded


def one_line_exit_2(p, what):
    check(p.returncode == 2 and p.stderr.count("\n") == 1, "%s: one line, exit 2: %d %r" % (what, p.returncode, p.stderr))


@scenario
def scenario_against_run(a):
    recorded = recorded_run(a)
    original = read_report(os.path.join(recorded, "report.json"))
    out = os.path.join(a.work, "replay")
    p = run([a.memstage, "replay", recorded, "--allocators", "glibc,jemalloc", "--repeat", "1", "-o", out])
    if not check(p.returncode == 0, "memstage replay: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        return
    compare = json.load(open(os.path.join(out, "compare.json")))
    check([s["name"] for s in compare["subjects"]] == ["glibc", "jemalloc"], "compare.json: glibc and jemalloc")
    check(any("not replayed" in n for n in compare.get("notes", [])), "compare.json says what a replay leaves out")
    for subject in compare["subjects"]:
        replayed = read_report(os.path.join(out, subject["full_report"].replace("report.html", "report.json")))
        extra = 0 if subject["name"] == "glibc" else LIBSTDCXX_POOL_BYTES
        check(replayed["totals"]["peak_heap_bytes"] == original["totals"]["peak_heap_bytes"] + extra,
              "%s: the replay's peak heap %d, the run's %d + %d" % (subject["name"], replayed["totals"]["peak_heap_bytes"],
                                                                   original["totals"]["peak_heap_bytes"], extra))
        want = {path: peak + extra for path, peak in stage_peaks(original).items()}
        check(stage_peaks(replayed) == want, "%s: every stage's peak heap: %r, the run's %r"
              % (subject["name"], stage_peaks(replayed), want))


@scenario
def scenario_threads(a):
    recorded = os.path.join(a.work, "run")
    p = run([a.memstage, "run", "-q", "--mode", "full", "-o", recorded, "--", a.handoff, "5000", "3", "2"])
    if not check(p.returncode == 0, "memstage run of handoff: %s" % p.stderr[-500:]):
        return
    original = read_report(os.path.join(recorded, "report.json"))
    out = os.path.join(a.work, "replay")
    p = run([a.memstage, "replay", recorded, "--allocators", "glibc,jemalloc", "--repeat", "1", "--heap-only", "-o", out])
    if not check(p.returncode == 0, "memstage replay: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        return
    compare = json.load(open(os.path.join(out, "compare.json")))
    threads = [n for n in compare["notes"] if n.startswith("replayed:")]
    check(threads and any(" of its %d threads" % n in threads[0] for n in range(6, 8)),
          "the notes count the program's threads that allocate, 6 or 7 (main, 3 producers, 2 consumers, its "
          "runtime's): %r" % threads)
    run_totals = original["totals"]
    run_peaks = stage_peaks(original)
    for subject in compare["subjects"]:
        replayed = read_report(os.path.join(out, subject["full_report"].replace("report.html", "report.json")))
        totals = replayed["totals"]
        # Under jemalloc, libstdc++'s start-up pool besides, as in against_run.
        extra = 0 if subject["name"] == "glibc" else LIBSTDCXX_POOL_BYTES
        want = {"allocations": run_totals["allocations"] + (1 if extra else 0), "frees": run_totals["frees"],
                "bytes_allocated": run_totals["bytes_allocated"] + extra}
        for key, value in want.items():
            check(totals[key] == value, "%s: %s %d, the run's and the pool's %d" % (subject["name"], key, totals[key], value))
        peaks = stage_peaks(replayed)
        check(peaks.get("drain") == run_peaks["drain"] + extra, "%s: drain's peak heap %r, the run's %d + %d"
              % (subject["name"], peaks.get("drain"), run_peaks["drain"], extra))
        ratio = peaks.get("handoff", 0) / run_peaks["handoff"]
        check(0.9 <= ratio <= 1.1, "%s: handoff's peak heap %r, %.3f of the run's %d"
              % (subject["name"], peaks.get("handoff"), ratio, run_peaks["handoff"]))


def replay_subject(a, recorded, out, *flags):
    p = run([a.memstage, "replay", recorded, "--allocators", "glibc", "--repeat", "1", "-o", out] + list(flags))
    check(p.returncode == 0, "memstage replay %s: exit %d, %s" % (" ".join(flags), p.returncode, p.stderr[-800:]))
    compare = json.load(open(os.path.join(out, "compare.json")))
    return compare, compare["subjects"][0]


@scenario
def scenario_non_heap(a):
    # A Python program: its interpreter and libraries are much of its RSS; its heap peaks at
    # the end, once they are all loaded, and after its 8 MiB block was written and RSS sampled
    # (at the block's own allocation, its pages are not yet resident: first touch).
    recorded = os.path.join(a.work, "run")
    p = run([a.memstage, "run", "-q", "--mode", "full", "-o", recorded, "--", sys.executable, "-c",
             "import json, decimal, email.parser, time; b = bytearray(8 << 20); b[::4096] = b'x' * 2048; "
             "time.sleep(0.05); c = [bytes(100000) for _ in range(4)]"])
    check(p.returncode == 0, "memstage run of python: %s" % p.stderr[-500:])
    program = read_report(os.path.join(recorded, "report.json"))["totals"]["peak_program_rss_bytes"]
    held, held_subject = replay_subject(a, recorded, os.path.join(a.work, "held"))
    alone, alone_subject = replay_subject(a, recorded, os.path.join(a.work, "alone"), "--heap-only")
    calibration = read_report(os.path.join(a.work, "held", "calibration", "report.json"))["totals"]
    own = calibration["peak_program_rss_bytes"]
    check(calibration["peak_heap_bytes"] > 8 << 20, "the calibration replayed the heap")
    hold = program - own
    check(hold > 0 and any(n.startswith("held beside the heap: %d bytes" % hold) and "(%d bytes)" % program in n
                           and "(%d bytes)" % own in n for n in held["notes"]),
          "the notes give the hold, %d bytes, the program's peak RSS %d less the replayer's %d: %r"
          % (hold, program, own, held["notes"]))
    check(any(n.startswith("not held") and "heap's share" in n for n in alone["notes"]),
          "--heap-only: the notes say the figures are the heap's share: %r" % alone["notes"])
    rss = [s["totals"]["stats_peak_rss_bytes"]["median"] for s in (held_subject, alone_subject)]
    check(rss[0] > rss[1], "the peak RSS with the non-heap memory held, %d, above the heap's alone, %d" % tuple(rss))
    heaps = [s["totals"]["memory"]["peak_heap_bytes"] for s in (held_subject, alone_subject)]
    check(heaps[0] == heaps[1], "the heap's peak the same: %r" % heaps)


@scenario
def scenario_refusals(a):
    stats = os.path.join(a.work, "stats")
    run([a.memstage, "run", "-q", "--mode", "stats", "-o", stats, "--", a.program, os.path.join(a.work, "truth2.json")])
    p = run([a.memstage, "replay", stats, "-o", os.path.join(a.work, "no-replay")])
    one_line_exit_2(p, "a stats-mode run")
    check("full mode" in p.stderr, "the refusal names full mode: %r" % p.stderr)
    garbage = os.path.join(a.work, "trace.1.mst")
    with open(garbage, "wb") as f:
        f.write(b"not a trace at all")
    one_line_exit_2(run([a.memstage, "replay", garbage, "-o", os.path.join(a.work, "no-replay2")]), "not a trace")


def full_run_log(out, subject):
    return open(os.path.join(out, os.path.dirname(subject["full_report"]), "output.log")).read()


@scenario
def scenario_tune_environment(a):
    recorded = recorded_run(a)
    out = os.path.join(a.work, "replay")
    tunes = ["jemalloc:narenas=1,stats_print=true", "mimalloc:verbose=1,decommit_delay=0"]
    p = run([a.memstage, "replay", recorded, "--allocators", "jemalloc", "--tune", tunes[0], "--tune", tunes[1],
             "--repeat", "1", "-o", out])
    if not check(p.returncode == 0, "replay with two tunings: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        return
    subjects = json.load(open(os.path.join(out, "compare.json")))["subjects"]
    check([s["name"] for s in subjects] == ["jemalloc"] + tunes, "a subject per tuning: %r" % [s["name"] for s in subjects])
    check(subjects[1].get("environment") == {"MALLOC_CONF": "narenas:1,stats_print:true"},
          "jemalloc's settings as MALLOC_CONF: %r" % subjects[1].get("environment"))
    check(subjects[2].get("environment") == {"MIMALLOC_VERBOSE": "1", "MIMALLOC_DECOMMIT_DELAY": "0"},
          "mimalloc's as MIMALLOC_*: %r" % subjects[2].get("environment"))
    check("environment" not in subjects[0], "the untuned subject has none")
    untuned, jemalloc, mimalloc = (full_run_log(out, s) for s in subjects)
    # One statistics print: the replayer's; memstage itself (linked with jemalloc) never saw MALLOC_CONF.
    check(jemalloc.count("Begin jemalloc statistics") == 1, "jemalloc's stats printed once, by the replayer")
    check("opt.narenas: 1\n" in jemalloc, "the replayer's jemalloc ran with narenas 1")
    check("jemalloc statistics" not in untuned, "the untuned jemalloc printed nothing")
    check("option 'decommit_delay': 0" in mimalloc, "the replayer's mimalloc ran with decommit_delay 0")


@scenario
def scenario_bad_tune(a):
    for spec in ["foo:x=1", "glibc:MALLOC_ARENA_MAX", "glibc", "glibc:MALLOC_FOO=1", "jemalloc:narenas="]:
        out = os.path.join(a.work, "never")
        p = run([a.memstage, "replay", os.path.join(a.work, "no-such-run"), "--tune", spec, "-o", out])
        one_line_exit_2(p, "--tune " + spec)
        check("--tune" in p.stderr, "the line names --tune: %r" % p.stderr)
        check(not os.path.exists(out), "nothing written for --tune " + spec)
    one_line_exit_2(run([a.memstage, "compare", "--tune", "glibc:M_NOPE_=1", "--", "true"]), "compare --tune")
    # How a tuning reaches the command (memstage run --env), refused alike when malformed.
    one_line_exit_2(run([a.memstage, "run", "-o", os.path.join(a.work, "env"), "--env", "NO_VALUE", "--", "true"]),
                    "run --env without '='")


@scenario(timeout_s=400)
def scenario_suggest(a):
    recorded = recorded_run(a)
    original = read_report(os.path.join(recorded, "report.json"))
    stage = original["stages"][-1]["path"]
    out = os.path.join(a.work, "replay")
    p = run([a.memstage, "replay", recorded, "--allocators", "glibc,jemalloc", "--repeat", "1", "-o", out,
             "--suggest", stage])
    if not check(p.returncode == 0, "replay --suggest: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        return
    compare = json.load(open(os.path.join(out, "compare.json")))
    names = [s["name"] for s in compare["subjects"]]
    check(len(names) > 2 and all(n.startswith(("glibc:", "jemalloc:")) for n in names[2:]),
          "each allocator's grid replayed: %r" % names)
    suggestions = compare.get("suggestions", {})
    check(suggestions.get("stage") == stage, "ranked by the stage given: %r" % suggestions.get("stage"))
    ranked = suggestions.get("ranked", [])
    check(sorted(r["subject"] for r in ranked) == sorted(names), "every subject ranked")
    keys = [r.get("stage_peak_rss_bytes") for r in ranked]
    check(all(k is not None for k in keys) and keys == sorted(keys), "lowest stage peak RSS first: %r" % keys)
    by_name = {s["name"]: s for s in compare["subjects"]}
    for r in ranked:
        row = [s for s in by_name[r["subject"]]["stages"] if s["path"] == stage][0]
        check(r["stage_peak_rss_bytes"] == int(row["stats_peak_rss_bytes"]["median"]),
              "%s: the stage's stats-run peak RSS" % r["subject"])
    check("lowest first" in p.stdout and ranked and ranked[0]["subject"] in p.stdout, "the ranking on stdout")
    p = run([a.memstage, "replay", recorded, "--allocators", "glibc", "--repeat", "1", "-o",
             os.path.join(a.work, "nosuch"), "--suggest", "no-such-stage"])
    check(p.returncode == 2 and "--suggest no-such-stage: no such stage" in p.stderr,
          "a stage no run reached: said, exit 2: %d %r" % (p.returncode, p.stderr[-300:]))
    # compare takes it alike; with a "--" further on, the word after --suggest is its stage.
    out = os.path.join(a.work, "compare")
    p = run([a.memstage, "compare", "--allocators", "glibc", "--repeat", "1", "--suggest", stage, "-o", out, "--",
             a.program, os.path.join(a.work, "truth3.json")])
    if check(p.returncode == 0, "compare --suggest STAGE -o DIR -- CMD: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        suggestions = json.load(open(os.path.join(out, "compare.json"))).get("suggestions", {})
        check(suggestions.get("stage") == stage and len(suggestions.get("ranked", [])) > 1,
              "compare ranks glibc's grid by the stage: %r" % suggestions)


def main():
    def arguments(parser):
        parser.add_argument("--program", required=True)
        parser.add_argument("--handoff", required=True)
    function, a = SCENARIOS.parse("replay", __doc__.splitlines()[0], arguments)
    a.memstage, a.program, a.handoff = os.path.abspath(a.memstage), os.path.abspath(a.program), os.path.abspath(a.handoff)
    a.work = fresh_folder(a.work)
    function(a)
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
