"""memstage replay against the run it replays:

    /usr/bin/python3 check_replay.py MEMSTAGE MODES_PROGRAM WORK_DIR

1. A full-mode run of MODES_PROGRAM (tests/e2e/programs/modes.cpp: nested stages; malloc,
   calloc, realloc, new[], posix_memalign; blocks freed by another thread), replayed under
   glibc and jemalloc: compare.json has both, says what a replay leaves out, and each
   replay's heap is the run's, the run's peak and every stage's peak to the byte (under
   jemalloc plus the 72,704 bytes of the pool libstdc++ makes at its start, which
   libjemalloc loads and the replayer does not).
2. A stats-mode run is refused in one line naming full mode, exit 2; so is a file that is
   not a trace.
Exit 0: passed.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, read_report  # noqa: E402

LIBSTDCXX_POOL_BYTES = 72704


def run(argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stage_peaks(report):
    return {s["path"]: s["peak_heap_bytes"] for s in report["stages"]}


def check_replay_against_run(c, memstage, program, work):
    recorded = os.path.join(work, "run")
    p = run([memstage, "run", "-q", "--mode", "full", "-o", recorded, "--", program, os.path.join(work, "truth.json")])
    c.check(p.returncode == 0, "memstage run of the program: %s" % p.stderr[-500:])
    original = read_report(os.path.join(recorded, "report.json"))
    out = os.path.join(work, "replay")
    p = run([memstage, "replay", recorded, "--allocators", "glibc,jemalloc", "--repeat", "1", "-o", out])
    if not c.check(p.returncode == 0, "memstage replay: exit %d, %s" % (p.returncode, p.stderr[-800:])):
        return
    compare = json.load(open(os.path.join(out, "compare.json")))
    c.check([s["name"] for s in compare["subjects"]] == ["glibc", "jemalloc"], "compare.json: glibc and jemalloc")
    c.check(any("not replayed" in n for n in compare.get("notes", [])), "compare.json says what a replay leaves out")
    for subject in compare["subjects"]:
        replayed = read_report(os.path.join(out, subject["full_report"].replace("report.html", "report.json")))
        extra = 0 if subject["name"] == "glibc" else LIBSTDCXX_POOL_BYTES
        c.check(replayed["totals"]["peak_heap_bytes"] == original["totals"]["peak_heap_bytes"] + extra,
                "%s: the replay's peak heap %d, the run's %d + %d" % (subject["name"], replayed["totals"]["peak_heap_bytes"],
                                                                     original["totals"]["peak_heap_bytes"], extra))
        want = {path: peak + extra for path, peak in stage_peaks(original).items()}
        c.check(stage_peaks(replayed) == want, "%s: every stage's peak heap: %r, the run's %r"
                % (subject["name"], stage_peaks(replayed), want))


def check_refusals(c, memstage, program, work):
    stats = os.path.join(work, "stats")
    run([memstage, "run", "-q", "--mode", "stats", "-o", stats, "--", program, os.path.join(work, "truth2.json")])
    p = run([memstage, "replay", stats, "-o", os.path.join(work, "no-replay")])
    c.check(p.returncode == 2 and "full mode" in p.stderr and p.stderr.count("\n") == 1,
            "a stats-mode run: one line naming full mode, exit 2: %d %r" % (p.returncode, p.stderr))
    garbage = os.path.join(work, "trace.1.mst")
    with open(garbage, "wb") as f:
        f.write(b"not a trace at all")
    p = run([memstage, "replay", garbage, "-o", os.path.join(work, "no-replay2")])
    c.check(p.returncode == 2 and p.stderr.count("\n") == 1, "not a trace: one line, exit 2: %d %r" % (p.returncode, p.stderr))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    memstage, program, work = (os.path.abspath(a) for a in sys.argv[1:])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    c = Checks()
    check_replay_against_run(c, memstage, program, work)
    check_refusals(c, memstage, program, work)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
