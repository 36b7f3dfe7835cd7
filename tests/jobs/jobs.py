#!/usr/bin/env python3
"""End-to-end tests of the job view: several processes of one run (forked workers, ranks)
summed at each instant, checked against what the programs know about themselves.

usage: jobs.py SCENARIO --memstage PATH --programs DIR --work DIR [--validator PATH]

Built on tests/e2e/e2e.py (its Scenario runs programs under memstage and validates every
report against the schema). One scenario per CTest test (tests/jobs/CMakeLists.txt).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import e2e  # noqa: E402

MIB = 1 << 20


def within(got, truth, tolerance):
    return truth > 0 and abs(got - truth) <= tolerance * truth


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
        names = e2e.chain(top["stack"], 1)
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
    text = s.run([s.memstage, "report", out, "--format", "text"]).stdout.decode(errors="replace")
    s.check(text.splitlines()[1].lstrip().startswith("job of 4 processes") if len(text.splitlines()) > 1 else False,
            "the text summary leads with the job:\n" + "\n".join(text.splitlines()[:4]))


SCENARIOS = {
    "workers": scenario_workers,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--memstage", required=True)
    parser.add_argument("--programs", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--validator")
    args = parser.parse_args()
    s = e2e.Scenario(args)
    print("jobs.%s: %s" % (args.scenario, SCENARIOS[args.scenario].__doc__), flush=True)
    try:
        SCENARIOS[args.scenario](s)
    except SystemExit as e:
        return e.code
    return s.finish()


if __name__ == "__main__":
    sys.exit(main())
