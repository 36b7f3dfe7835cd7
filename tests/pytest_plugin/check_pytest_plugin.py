"""pytest --memstage on a suite whose tests know their memory (suite/test_memory.py).

    /usr/bin/python3 check_pytest_plugin.py MEMSTAGE PROFILER_PYTHON_DIR WORK_DIR [--xdist]

The plugin comes in as `-p memstage.pytest_plugin` from PROFILER_PYTHON_DIR on PYTHONPATH.
Checks: each test is a stage of the report; a test over its marker's limit, one that keeps
what it allocated past a `leaked` limit and one over a limit of --memstage-budget (a glob)
fail, with the figure, the limit and a stack naming the test's line; the others pass, and
the run exits 1; the JUnit file carries the figures and the failures; a run of only passing
tests exits 0; in stats mode a leak limit fails as not measured. With --xdist, the same under `-n 2`: the workers are processes of one job.
Exit 0: passed; 77: skipped (pytest or pytest-xdist missing); anything else: failed.
"""
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

SKIP = 77
MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "suite")
FAILING = {"test_memory.py::test_over", "test_memory.py::test_leaks", "test_memory.py::test_budget_file_large"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run_pytest(memstage, python_dir, work, args):
    env = dict(os.environ, MEMSTAGE=memstage, PYTHONPATH=python_dir, PYTHONDONTWRITEBYTECODE="1")
    env.pop("LD_PRELOAD", None)
    command = [sys.executable, "-m", "pytest", "-p", "memstage.pytest_plugin", "-p", "no:cacheprovider",
               "--rootdir", SUITE] + args
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, cwd=SUITE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, flush=True)
    return result


def check_figures(out_dir, xdist):
    """The tests' stages: in the run's report, or under xdist in the reports the plugin made
    of each worker's trace."""
    with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    stages = {s["path"]: s for s in report["stages"]}
    workers = glob.glob(os.path.join(out_dir, "pytest", "report.gw*.json"))
    if xdist and len(workers) != 2:
        fail("under -n 2 the plugin should have made two workers' reports, not %s" % workers)
    for path in workers:
        with open(path, encoding="utf-8") as f:
            stages.update({s["path"]: s for s in json.load(f)["stages"]})
    for name in ("test_small", "test_over", "test_leaks", "test_creates_fixture", "test_budget_file_large"):
        if "test_memory.py::" + name not in stages:
            fail("no stage for %s in report.json: %s" % (name, sorted(stages)))
    # The plugin keeps 5 stacks a test (memstage run --top-stacks 5).
    kept = [len(s["top_stacks_at_peak"]) for s in stages.values()]
    if max(kept) != 5:
        fail("the tests' stages keep %d stacks at most, not the plugin's 5" % max(kept))
    over = stages["test_memory.py::test_over"]["peak_heap_increase_bytes"]
    if not 40_000_000 <= over <= 40_000_000 + MiB:
        fail("test_over's heap rose %d bytes, not 40,000,000 (+ at most 1 MiB of pytest's own)" % over)
    retained = stages["test_memory.py::test_leaks"]["retained_bytes"]
    if not 3 * MiB <= retained <= 3 * MiB + 256 * 1024:
        fail("test_leaks retained %d bytes, not 3 MiB" % retained)
    # The session fixture is counted in the test that created it, not in the one that reused it
    # (in one process: under xdist each worker makes its own).
    created = stages["test_memory.py::test_creates_fixture"]["retained_bytes"]
    if created < 24 * MiB:
        fail("test_creates_fixture retained %d bytes, less than its 24 MiB fixture" % created)
    if not xdist and stages["test_memory.py::test_uses_fixture_again"]["retained_bytes"] >= MiB:
        fail("test_uses_fixture_again is charged for the fixture another test created")
    processes = report.get("processes", [])
    if xdist and len(processes) < 3:
        fail("under -n 2 the job should hold the controller and two workers, not %d processes" % len(processes))


def check_output(output):
    for nodeid in FAILING:
        if not re.search(r"FAILED %s: .* over the budget of" % re.escape(nodeid), output):
            fail("the summary does not fail %s with its figure and limit" % nodeid)
    if "FAILED test_memory.py::test_small" in output or "FAILED test_memory.py::test_budget_file_small" in output:
        fail("a test within its limits was failed")
    if not re.search(r"FAILED test_memory.py::test_over: peak_heap_increase .*\n(.*\n){0,30}?.*test_memory\.py:2\d",
                     output):
        fail("test_over's failure shows no stack reaching its line in test_memory.py")
    if "tests whose heap rose most" not in output:
        fail("no summary of the tests with the highest peaks")


def check_junit(path):
    cases = {c.get("name"): c for c in ElementTree.parse(path).iter("testcase")}
    for name, case in cases.items():
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "memstage_peak_heap_increase_bytes" not in properties:
            fail("JUnit testcase %s carries no memstage figures" % name)
        failed = case.find("failure") is not None
        if failed != ("test_memory.py::" + name in FAILING):
            fail("JUnit testcase %s: failure %s" % (name, failed))


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        return 2
    memstage, python_dir, work = (os.path.abspath(a) for a in sys.argv[1:4])
    xdist = sys.argv[4:] == ["--xdist"]
    try:
        import pytest  # noqa: F401
        if xdist:
            import xdist as _  # noqa: F401
    except ImportError as error:
        print("SKIP: %s (Debian: python3-pytest, python3-pytest-xdist)" % error)
        return SKIP
    os.makedirs(work, exist_ok=True)
    out_dir, junit = os.path.join(work, "run"), os.path.join(work, "junit.xml")
    extra = ["-n", "2"] if xdist else []
    result = run_pytest(memstage, python_dir, work, ["--memstage=" + out_dir, "--junitxml=" + junit,
                                                     "--memstage-budget", "budget.json"] + extra)
    if result.returncode != 1:
        fail("pytest --memstage exited %d, not 1 (three tests over their limits)" % result.returncode)
    check_figures(out_dir, xdist)
    check_output(result.stdout)
    check_junit(junit)
    passing = run_pytest(memstage, python_dir, work, ["--memstage=" + out_dir, "-k", "small or fixture"] + extra)
    if passing.returncode != 0:
        fail("only tests within their limits, yet pytest --memstage exited %d" % passing.returncode)
    if not xdist:
        # Stats mode does not follow blocks: a leak limit cannot hold, and says so.
        stats = run_pytest(memstage, python_dir, work, ["--memstage=" + out_dir, "-k", "leaks",
                                                        "--memstage-mode", "stats"])
        if stats.returncode != 1 or "retained of stage test_memory.py::test_leaks was not measured" not in stats.stdout:
            fail("in stats mode a leak limit must fail as not measured (exit %d)" % stats.returncode)
    print("pytest plugin: ok" + (" under xdist" if xdist else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
