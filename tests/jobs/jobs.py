#!/usr/bin/env python3
"""End-to-end tests of the job view: several processes of one run (forked workers, ranks)
summed at each instant, checked against what the programs know about themselves.

usage: jobs.py SCENARIO --memstage PATH --programs DIR --work DIR [--validator PATH]

Built on tests/lib/memstage_scenarios.py (its Scenario runs programs under memstage and
validates every report against the schema). One test jobs.NAME per function scenario_NAME
under @scenario (tests/jobs/CMakeLists.txt asks `jobs.py --list`).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import MIB, Scenarios, chain, resolve_stacks  # noqa: E402

# Several processes, torch among them: minutes on a busy machine.
SCENARIOS = Scenarios(default_timeout_s=300)
scenario = SCENARIOS.register


def within(got, truth, tolerance):
    return truth > 0 and abs(got - truth) <= tolerance * truth


@scenario
def scenario_workers(s):
    """A parent and three forked workers holding known bytes at one instant: the job's heap."""
    out, report = s.traced("run", [s.program("workers"), s.truth_file("workers")])
    t = s.read_truth("workers")
    pids = [t["parent_pid"]] + t["worker_pids"]
    procs = report["processes"]
    s.eq(sorted(p["pid"] for p in procs), sorted(pids), "processes: the parent and its three workers")
    job = report.get("job") or {}
    s.eq(job.get("processes"), 4, "job.processes")
    truth = t["job_heap_bytes"]
    got = job.get("peak_heap_bytes", 0)
    s.check(within(got, truth, 0.02), "job.peak_heap_bytes %d within 2%% of the truth %d (%+.2f%%)"
            % (got, truth, 100.0 * (got - truth) / truth))
    # Each worker's share at the job's peak is its own block (what it inherited is the parent's).
    by_pid = {p["pid"]: p for p in procs}
    for pid, held in zip(t["worker_pids"], t["worker_bytes"]):
        share = by_pid.get(pid, {}).get("heap_at_job_peak_bytes", 0)
        s.check(within(share, held, 0.02), "worker %d: heap at the job's peak %d within 2%% of %d" % (pid, share, held))
    share = by_pid.get(t["parent_pid"], {}).get("heap_at_job_peak_bytes", 0)
    s.check(within(share, t["parent_bytes"], 0.02), "parent: heap at the job's peak %d within 2%% of %d"
            % (share, t["parent_bytes"]))
    s.check(job.get("peak_heap_bytes", 0) > report["totals"]["peak_heap_bytes"],
            "the job's peak is above the traced command's own")
    # The stacks held at the job's peak name each process's allocation site.
    tops = job.get("top_stacks_at_peak", [])
    sites = {}
    for top in tops:
        names = chain(top["stack"], 1)
        sites.setdefault(top["pid"], set()).update(names)
    s.check("parent_hold" in sites.get(t["parent_pid"], set()), "held at the job's peak: parent_hold in the parent")
    for pid in t["worker_pids"]:
        s.check("worker_hold" in sites.get(pid, set()), "held at the job's peak: worker_hold in worker %d" % pid)
    held_sum = sum(top["bytes"] for top in tops)
    s.check(within(held_sum, truth, 0.02), "the stacks held at the job's peak add up to %d, within 2%% of %d"
            % (held_sum, truth))
    # The job's timeline has the peak, and each instant's processes add up to it.
    timeline = job.get("timeline", [])
    s.check(any(p["heap_bytes"] == job.get("peak_heap_bytes") for p in timeline), "job.timeline shows the peak")
    s.check(all(sum(p["process_heap_bytes"]) == p["heap_bytes"] for p in timeline),
            "job.timeline: each instant's processes add up to its heap")
    # Summed RSS counts the parent's 40 MiB in every worker too.
    s.check(job.get("peak_rss_bytes", 0) >= truth + 3 * t["parent_bytes"] * 0.9,
            "summed RSS %d counts the shared 40 MiB in each worker" % job.get("peak_rss_bytes", 0))
    # Summed PSS counts the shared 40 MiB once: well under summed RSS, about the truth.
    pss = job.get("peak_pss_bytes")
    if s.check(pss is not None, "job.peak_pss_bytes present (smaps_rollup sampled)"):
        s.check(pss < 0.6 * job["peak_rss_bytes"], "summed PSS %d well under summed RSS %d" % (pss, job["peak_rss_bytes"]))
        # PSS is sampled sparsely (docs/jobs.md): its peak may fall short of the instant; it
        # must never count the shared pages once per worker.
        s.check(t["parent_bytes"] < pss <= truth + 3 * t["parent_bytes"] * 0.5,
                "summed PSS %d counts the shared pages about once (heap held: %d)" % (pss, truth))
    # The run's RSS breakdown says what of its resident pages other processes share (libraries
    # at least; the 40 MiB after the fork): PSS counts the shared ones in part, private ones whole.
    shares = report["totals"]["rss_breakdown"].get("shares")
    if s.check(shares is not None, "totals.rss_breakdown.shares present"):
        s.check(shares["shared_bytes"] > 0, "the parent shares pages with other processes: %d" % shares["shared_bytes"])
        s.check(shares["private_bytes"] <= shares["pss_bytes"] <= shares["private_bytes"] + shares["shared_bytes"],
                "PSS %d between private %d and private + shared %d" % (shares["pss_bytes"], shares["private_bytes"],
                                                                       shares["private_bytes"] + shares["shared_bytes"]))
    text = s.run([s.memstage, "report", out, "--format", "text"]).stdout.decode(errors="replace")
    s.check("shared with other processes" in text, "the text says what of the resident pages is shared")
    s.check(text.splitlines()[1].lstrip().startswith("job of 4 processes") if len(text.splitlines()) > 1 else False,
            "the text summary leads with the job:\n" + "\n".join(text.splitlines()[:4]))


@scenario
def scenario_ranks(s):
    """A 2-rank torch.distributed job (gloo) launched as torchrun does: both ranks by number, their
    combined peak; the same ranks traced into a folder each (as on two hosts), one report over both."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "torch_ranks.py")
    python = s.python
    out, report = s.traced("one_run", [python, script, "launch", s.truth_file("one_run")], mode="stats")
    check_ranks(s, report, s.read_truth("one_run"), "one run")
    job_folder = os.path.join(s.work, "job")
    folders = [os.path.join(job_folder, "host%d" % r) for r in range(2)]
    prefix = [s.memstage, "run", "--mode", "stats", "-o", os.path.join(job_folder, "host{rank}"), "--"]
    proc = s.run([python, script, "launch", s.truth_file("two_runs")] + prefix, timeout=300)
    s.eq(proc.returncode, 0, "two runs: the launcher's exit code")
    proc = s.run([s.memstage, "report", "--format", "json"] + folders)
    if not s.eq(proc.returncode, 0, "memstage report HOST0 HOST1: exit code"):
        print(proc.stderr.decode(errors="replace"))
        return
    path = os.path.join(s.work, "two_runs.json")
    with open(path, "wb") as f:
        f.write(proc.stdout)
    s.reports.append(path)
    report = resolve_stacks(json.loads(proc.stdout))
    s.eq(len(report["processes"]), 2, "memstage report HOST0 HOST1: one job of the two ranks")
    # The launcher's children are `memstage run` here, not the ranks: match by rank alone.
    truth = s.read_truth("two_runs")
    truth["pids"] = [p["pid"] for p in report["processes"]]
    check_ranks(s, report, truth, "memstage report HOST0 HOST1")
    # The folder that holds the hosts' folders is the same job.
    proc = s.run([s.memstage, "report", "--format", "json", job_folder])
    if s.eq(proc.returncode, 0, "memstage report JOB_FOLDER: exit code"):
        whole = json.loads(proc.stdout)
        s.eq(sorted(p["pid"] for p in whole["processes"]), sorted(truth["pids"]),
             "memstage report JOB_FOLDER: the processes of both hosts' folders")
        s.eq(whole["job"]["peak_heap_bytes"], report["job"]["peak_heap_bytes"],
             "memstage report JOB_FOLDER: the job's peak, as with the folders named")


def check_ranks(s, report, truth, what):
    ranks = sorted(p["rank"] for p in report["processes"] if p.get("rank") is not None and p["pid"] in truth["pids"])
    s.eq(ranks, [0, 1], "%s: the ranks' processes carry their rank" % what)
    job = report.get("job", {})
    got = job.get("peak_heap_bytes", 0)
    s.check(got >= truth["job_held_bytes"], "%s: the job's heap peak %d holds both ranks' tensors (%d)"
            % (what, got, truth["job_held_bytes"]))
    by_rank = {p["rank"]: p for p in report["processes"] if p.get("rank") is not None and p["pid"] in truth["pids"]}
    for rank, held in enumerate(truth["held_bytes"]):
        share = by_rank.get(rank, {}).get("heap_at_job_peak_bytes", 0)
        s.check(share >= held, "%s: rank %d holds its %d bytes at the job's peak (%d)" % (what, rank, held, share))


@scenario
def scenario_dataloader(s):
    """DataLoader-style workers over a parent's dataset (examples/dataloader_cow): held as Python
    objects, each worker copies the pages it reads (reference counts are written); as a numpy
    array, they stay shared, and summed RSS overstates the job where summed PSS does not."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "dataloader_cow",
                          "loader.py")
    items = 1_000_000
    runs = {}
    for layout in ("objects", "numpy"):
        out, report = s.traced(layout, [s.python, script, "--layout", layout, "--items", str(items),
                                        "--truth", s.truth_file(layout)])
        runs[layout] = (out, report, s.read_truth(layout))
    objects, numpy_ = runs["objects"], runs["numpy"]
    float_bytes = items * 24  # what a worker's reads copy: the float objects' pages (the list is only read)

    def workers_uss(run):
        _, report, truth = run
        by_pid = {p["pid"]: p for p in report["processes"]}
        s.eq(sorted(by_pid), sorted([truth["parent_pid"]] + truth["worker_pids"]),
             "%s: the parent and its workers" % truth["layout"])
        return [by_pid.get(pid, {}).get("peak_uss_bytes") or 0 for pid in truth["worker_pids"]]

    copied = workers_uss(objects)
    shared = workers_uss(numpy_)
    for uss in copied:
        s.check(uss >= 0.7 * float_bytes, "objects: a worker's private pages %.1f MiB hold its copy of the %.1f MiB "
                "of float objects it read" % (uss / MIB, float_bytes / MIB))
    s.check(max(shared) + 0.7 * float_bytes <= min(copied),
            "numpy: each worker's private pages (%s MiB) stay under the objects' (%s MiB) by most of a dataset"
            % ([round(u / MIB, 1) for u in shared], [round(u / MIB, 1) for u in copied]))
    job_o, job_n = objects[1]["job"], numpy_[1]["job"]
    s.check((job_o.get("peak_pss_bytes") or 0) >= (job_n.get("peak_pss_bytes") or 0) + 2 * 0.7 * float_bytes,
            "the job's PSS with objects (%.1f MiB) is above numpy's (%.1f MiB) by at least two workers' copies"
            % ((job_o.get("peak_pss_bytes") or 0) / MIB, (job_n.get("peak_pss_bytes") or 0) / MIB))
    # With numpy the pages stay shared: summed RSS counts them in every process, PSS once.
    rss, pss = job_n.get("peak_rss_bytes", 0), job_n.get("peak_pss_bytes") or 0
    # Typically 3 x; PSS is sampled sparsely (a sample before the workers settle reads high): 1.5 x at least.
    s.check(pss > 0 and 2 * rss >= 3 * pss, "numpy: summed RSS %.1f MiB overstates summed PSS %.1f MiB"
            % (rss / MIB, pss / MIB))
    s.eq(job_n.get("rss_overstates"), True, "numpy: job.rss_overstates")
    text = s.run([s.memstage, "report", numpy_[0], "--format", "text"]).stdout.decode(errors="replace")
    s.check("summed RSS overstates what the job holds" in text, "numpy: the text report says summed RSS overstates")


@scenario
def scenario_dataloader_torch(s):
    """The example through torch.utils.data.DataLoader itself (2 workers, objects layout): the
    workers torch forks are in the job, each under the parent, their pages shared with it said
    by PSS, and the run ends normally."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "dataloader_cow",
                          "loader.py")
    out, report = s.traced("torch", [s.python, script, "--layout", "objects", "--loader", "torch", "--workers", "2",
                                     "--items", "100000", "--truth", s.truth_file("torch")], mode="stats")
    truth = s.read_truth("torch")
    s.eq(report.get("exit_code"), 0, "the loader's exit code")
    children = [p for p in report["processes"] if p.get("parent_pid") == truth["parent_pid"]]
    s.check(len(children) >= 2, "DataLoader's 2 workers are in the job under the parent: %s"
            % [p["pid"] for p in children])
    s.check(all(p.get("ended") != "killed" for p in report["processes"]),
            "no process reads as killed: %s" % [(p["pid"], p.get("ended")) for p in report["processes"]])
    job = report.get("job") or {}
    s.check(job.get("processes", 0) >= 3, "job.processes %d: the parent and its workers" % job.get("processes", 0))
    rss, pss = job.get("peak_rss_bytes", 0), job.get("peak_pss_bytes") or 0
    s.check(0 < pss < rss, "summed PSS %.1f MiB under summed RSS %.1f MiB (the workers share the parent's pages)"
            % (pss / MIB, rss / MIB))


@scenario
def scenario_fork_modes(s):
    """A DataLoader-style job (a parent's 100 MiB dataset, two forked workers that free some of it and hold
    their own) in every mode: the job's peak heap, each inherited block counted once (docs/jobs.md)."""
    peaks, notes = {}, {}
    for mode in ("full", "aggregate", "stats", "sample"):
        out, report = s.traced(mode, [s.program("fork_job"), s.truth_file(mode)], mode=mode)
        peaks[mode] = (report.get("job") or {}).get("peak_heap_bytes", 0)
        notes[mode] = report.get("capture_notes", [])
        warned = [w for w in report.get("warnings", []) if "went through malloc" in w]
        s.eq(warned, [], "%s: no malloc-coverage warning (a worker's RSS is its inherited heap)" % mode)
    truth = s.read_truth("full")["job_heap_bytes"]
    print("job peak heap by mode: %r, truth %d" % (peaks, truth))
    # Full and aggregate count requested sizes, stats and sample modes usable ones: the truth, up to the C++
    # runtime's own blocks and glibc's rounding. Every mode leaves out the workers' frees of inherited blocks,
    # the large ones and the 4 KiB ones (stats and sample modes by the child's table of its own blocks).
    for mode in ("full", "aggregate", "stats", "sample"):
        s.check(within(peaks[mode], truth, 0.02), "%s: job peak %d within 2%% of %d" % (mode, peaks[mode], truth))
        s.eq([n for n in notes[mode] if "forked child's heap" in n], [], "%s: no note of inherited frees untold" % mode)


def add_arguments(parser):
    parser.add_argument("--python", default=sys.executable, help="a python with torch (jobs.ranks)")


def configure(s, args):
    s.python = args.python


if __name__ == "__main__":
    sys.exit(SCENARIOS.main("jobs", __doc__.splitlines()[0], add_arguments, configure))
