#!/usr/bin/env python3
"""gate.e2e: `memstage run --budget` and `memstage gate` on a real traced program.

staged_program LOAD_MIB EXIT_CODE holds LOAD_MIB in stage "load", runs two "train/epoch"
stages of 1 MiB each and leaks 8 x 512 bytes. Checks exit codes (0 under budget, 1 over,
CMD's own failure first, 2 for a malformed budget), the JUnit file (parsed back with
xml.etree), GitHub annotations, stages missing from the report, and baseline mode.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, fresh_folder, run_command  # noqa: E402

CHECKS = Checks()
check = CHECKS.check


def run(args, env=None):
    full_env = dict(os.environ)
    full_env.pop("GITHUB_ACTIONS", None)  # annotations only where the test asks for them
    full_env.update(env or {})
    p = run_command(args, timeout=60, text=True, env=full_env)
    return p.returncode, p.stdout, p.stderr


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def unmeasured_and_malformed(a, w, ms, prog, under):
    """What the report did not measure fails; a malformed figure is exit 2; its warnings are shown."""
    rc, _, err = run([ms, "run", "-q", "--mode", "stats", "-o", w("stats"), "--", prog, "8", "0"])
    check(rc == 0, f"stats-mode run (got {rc}): {err}")
    report = json.load(open(w("stats/report.json")))
    check(report["totals"]["leaked_bytes"] is None, f"stats mode's leaked_bytes is null: {report['totals']['leaked_bytes']}")
    leak_free = write_json(w("leak_free.json"), {"totals": {"leaked": "0"}})
    rc, out, _ = run([ms, "gate", w("stats"), "--budget", leak_free])
    check(rc == 1 and "NOT MEASURED" in out and "0 B ok" not in out, f"stats mode held to leaked 0: exit 1 ({rc}): {out}")
    rc, out, _ = run([ms, "gate", w("stats"), "--baseline", w("stats"), "--max-growth", "5%"])
    check(rc == 0 and "skipped" in out, f"stats against stats: leaks skipped, the rest passes ({rc}): {out}")
    rc, out, _ = run([ms, "gate", w("stats"), "--baseline", w("small"), "--max-growth", "50%"])
    check(rc == 1 and "NOT MEASURED" in out, f"stats against a full-mode baseline: leaks not measured ({rc}): {out}")

    for name, value in (("missing", None), ("word", "big"), ("negative", -5)):
        damaged = json.load(open(w("small/report.json")))
        if value is None:
            del damaged["totals"]["peak_heap_bytes"]
        else:
            damaged["totals"]["peak_heap_bytes"] = value
        path = write_json(w(f"report_{name}.json"), damaged)
        rc, out, err = run([ms, "gate", path, "--budget", under])
        if value is None:
            check(rc == 1 and "NOT MEASURED" in out, f"peak_heap_bytes missing: exit 1, not measured ({rc}): {out}{err}")
        else:
            check(rc == 2 and err.count("\n") == 1 and "totals.peak_heap_bytes" in err,
                  f"peak_heap_bytes {value!r}: exit 2 naming the field ({rc}): {err!r}")

    # A damaged trace: the report says so, and the gate carries it.
    shutil.copytree(w("small"), w("damaged"))
    trace = [n for n in os.listdir(w("damaged")) if n.startswith("trace.")][0]
    size = os.path.getsize(w("damaged/" + trace))
    os.truncate(w("damaged/" + trace), size - 40)
    rc, _, err = run([ms, "report", w("damaged"), "--format", "json", "-o", w("damaged/report.json")])
    check(rc == 0, f"report of a truncated trace (got {rc}): {err}")
    rc, out, _ = run([ms, "gate", w("damaged"), "--budget", under])
    check("the report warns:" in out and "truncated" in out, f"the gate shows the report's warning: {out}")

    for growth in ("5", "1e18", "nan"):
        rc, _, err = run([ms, "gate", w("small"), "--baseline", w("small"), "--max-growth", growth])
        check(rc == 2 and err.count("\n") == 1, f"--max-growth {growth}: exit 2, one line ({rc}): {err!r}")


def inputs_that_are_not_files(w, ms, under):
    """A FIFO or a device as budget, report or baseline: one line and exit 2, at once."""
    fifo = w("fifo")
    os.mkfifo(fifo)
    for args in (["gate", w("small"), "--budget", fifo], ["gate", w("small"), "--budget", "/dev/zero"],
                 ["gate", fifo, "--budget", under], ["gate", w("small"), "--baseline", fifo, "--max-growth", "5%"],
                 ["diff", fifo, w("small")], ["diff", w("small"), "/dev/zero"]):
        try:
            rc, _, err = run([ms] + args)
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        check(rc == 2 and err.count("\n") == 1 and "not a regular file" in err,
              f"{' '.join(args[:1] + [os.path.basename(x) for x in args[1:]])}: exit 2, one line ({rc}): {err!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memstage", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.work = fresh_folder(a.work)
    w = lambda name: os.path.join(a.work, name)
    ms, prog = a.memstage, a.program

    under = write_json(w("under.json"), {
        "totals": {"peak_heap": "64MiB", "peak_rss": "1GiB", "leaked": "1MiB", "fragmentation": "100%"},
        "stages": {"load": {"peak_heap": "64MiB"}, "train/epoch": {"peak_heap": "64MiB", "leaked": 0},
                   "epoch": {"fragmentation": 1}}})
    # Over in one stage only (load holds 8 MiB) and on the total leak.
    over = write_json(w("over.json"), {
        "totals": {"peak_heap": "64MiB", "leaked": 0},
        "stages": {"load": {"peak_heap": "4MiB"}, "train/epoch": {"peak_heap": "64MiB"}}})
    with open(w("typo.json"), "w") as f:
        f.write('{"totals": {"peak_rs": "2GiB"}}')
    with open(w("broken.json"), "w") as f:
        f.write('{"totals": {"peak_rss": "2GiB",\n  }\n')
    missing = write_json(w("missing.json"), {"stages": {"tokenize": {"peak_heap": "1GiB"}}})

    # run --budget: under budget -> 0, with the table on stderr.
    rc, out, err = run([ms, "run", "-q", "-o", w("small"), "--budget", under, "--", prog, "8", "0"])
    check(rc == 0, f"run --budget under budget exits 0 (got {rc}): {err}")
    check("stages.load.peak_heap" in err and "failed: pass" in err, f"run --budget prints the table: {err}")
    check(os.path.exists(w("small/report.json")), "run --budget writes report.json")

    # Over budget -> 1.
    rc, out, err = run([ms, "run", "-q", "-o", w("over_run"), "--budget", over, "--", prog, "8", "0"])
    check(rc == 1, f"run --budget over budget exits 1 (got {rc}): {err}")
    check("OVER" in err, f"the table marks the check OVER: {err}")

    # CMD's failure wins over the gate's verdict, under budget or over.
    rc, _, err = run([ms, "run", "-q", "-o", w("cmd_fails"), "--budget", under, "--", prog, "8", "3"])
    check(rc == 3, f"run --budget: CMD's exit code 3 wins when under budget (got {rc}): {err}")
    rc, _, err = run([ms, "run", "-q", "-o", w("cmd_fails_over"), "--budget", over, "--", prog, "8", "5"])
    check(rc == 5, f"run --budget: CMD's exit code 5 wins when over budget (got {rc}): {err}")

    # A typo in the budget: exit 2 naming the field, before the command runs.
    rc, _, err = run([ms, "run", "-q", "-o", w("typo_run"), "--budget", w("typo.json"), "--", prog, "8", "0"])
    expected = f'memstage: {w("typo.json")}: unknown field "totals.peak_rs" (expected peak_heap, peak_rss, leaked, fragmentation, peak_device, and for stages peak_heap_increase, peak_rss_increase, retained)'
    check(rc == 2, f"run --budget with a typo exits 2 (got {rc})")
    check(err.strip() == expected, f"run --budget typo message: {err!r}")
    check(not os.path.exists(w("typo_run/report.json")), "run --budget with a typo does not run the command")

    # memstage gate: the same typo, and invalid JSON with the parser's position.
    rc, _, err = run([ms, "gate", w("small"), "--budget", w("typo.json")])
    check(rc == 2 and err.strip() == expected, f"gate with a typo: exit 2 and the field ({rc}, {err!r})")
    rc, _, err = run([ms, "gate", w("small"), "--budget", w("broken.json")])
    check(rc == 2 and "invalid JSON" in err and "line 2" in err, f"gate with invalid JSON: ({rc}, {err!r})")

    # gate on a folder and on the file, with JUnit and GitHub annotations.
    rc, out, err = run([ms, "gate", w("small"), "--budget", under, "--junit", w("under.xml")])
    check(rc == 0, f"gate under budget exits 0 (got {rc}): {out}{err}")
    rc, out, err = run([ms, "gate", w("small/report.json"), "--budget", over, "--junit", w("over.xml"), "--github"])
    check(rc == 1, f"gate over budget exits 1 (got {rc}): {out}{err}")
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    check(len(errors) == 2, f"two ::error annotations (stage load, total leak): {out}")
    check(any(line.startswith("::error title=memstage gate stages.load.peak_heap::peak_heap of stage load is ")
              for line in errors), f"annotation for load: {errors}")
    for name, tests, failed in (("under.xml", 8, 0), ("over.xml", 4, 2)):
        root = ET.parse(w(name)).getroot()
        cases = root.findall(".//testcase")
        check(len(cases) == tests, f"{name}: {tests} testcases (got {len(cases)})")
        check(len(root.findall(".//testcase/failure")) == failed, f"{name}: {failed} failures")
        check(root.find("testsuite").get("failures") == str(failed), f"{name}: failures attribute")
    over_failed = {c.get("name") for c in ET.parse(w("over.xml")).getroot().iter("testcase") if c.find("failure") is not None}
    check(over_failed == {"stages.load.peak_heap", "totals.leaked"}, f"over.xml failing cases: {over_failed}")

    # A stage the report lacks is a failing check (exit 1), not an input error.
    rc, out, _ = run([ms, "gate", w("small"), "--budget", missing])
    check(rc == 1 and "MISSING" in out, f"gate with a missing stage: exit 1, MISSING ({rc}): {out}")

    # Baseline: the same program holding 8 then 24 MiB in load.
    rc, _, err = run([ms, "run", "-q", "-o", w("big"), "--", prog, "24", "0"])
    check(rc == 0, f"plain run (got {rc}): {err}")
    rc, out, err = run([ms, "gate", w("big"), "--baseline", w("small"), "--max-growth", "5%"])
    check(rc == 1 and "baseline.stages.load.peak_heap" in out, f"baseline: growth fails ({rc}): {out}{err}")
    rc, out, err = run([ms, "gate", w("small"), "--baseline", w("big"), "--max-growth", "5%"])
    check(rc == 0, f"baseline: shrinking passes ({rc}): {out}{err}")
    rc, out, err = run([ms, "gate", w("small"), "--baseline", w("small"), "--max-growth", "0"])
    check(rc == 0, f"baseline: itself with 0% passes ({rc}): {out}{err}")
    rc, _, err = run([ms, "gate", w("small"), "--baseline", w("big")])
    check(rc == 2 and "--max-growth" in err, f"baseline without --max-growth: exit 2 ({rc}, {err!r})")
    rc, _, err = run([ms, "gate", w("small")])
    check(rc == 2, f"gate without a budget or baseline: exit 2 ({rc}, {err!r})")
    rc, _, err = run([ms, "gate", w("nowhere"), "--budget", under])
    check(rc == 2, f"gate on a missing report: exit 2 ({rc}, {err!r})")

    unmeasured_and_malformed(a, w, ms, prog, under)
    inputs_that_are_not_files(w, ms, under)

    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
