"""The untraced side of `pytest --memstage`: runs the session under memstage, then holds each
test to its limits with `memstage gate` and says which tests need the most memory.

The figures are the report's (report.json, one stage per test) and the verdict is the gate's
(`memstage gate --json`): nothing is measured or judged here twice.
"""
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

import memstage
from memstage import pytest_plugin, report_file, report_text
from memstage.report_text import format_bytes

# A test's limit keys as the gate names the test's own figures: its rise above its start, and
# what it allocated and still held at its end (pytest-memray's limit_leaks).
GATE_KEYS = {"peak_heap": "peak_heap_increase", "peak_rss": "peak_rss_increase", "leaked": "retained"}
STACKS_SHOWN = 3
FRAMES_SHOWN = 6
# Stacks the report keeps per test at its peak: a suite has thousands of stages, each stack
# of a hundred Python and native frames.
TOP_STACKS = "5"


def run_traced(config):
    memstage_bin = find_memstage()
    out_dir = os.path.abspath(config.getoption("memstage"))
    results_dir = os.path.join(out_dir, "pytest")
    budget = read_user_budget(config.getoption("memstage_budget"))
    command = [memstage_bin, "run", "-q", "--mode", config.getoption("memstage_mode"), "--top-stacks", TOP_STACKS,
               "-o", out_dir, "--",
               sys.executable, "-m", "pytest"] + list(config.invocation_params.args)
    env = dict(os.environ, **{pytest_plugin.RESULTS_ENV: results_dir})
    shutil.rmtree(results_dir, ignore_errors=True)
    status = subprocess.call(command, env=env, cwd=str(config.invocation_params.dir))
    if not os.path.isfile(os.path.join(out_dir, "report.json")):
        print("memstage: no report was written in %s (memstage run exited %d)" % (out_dir, status), file=sys.stderr)
        return status or 2
    stages, failures = {}, []
    for part in read_results(results_dir):
        report_path = report_of(memstage_bin, out_dir, part)
        stages.update(stages_by_test(report_file.read_report(report_path), part["tests"]))
        limits = part["limits"]
        for nodeid, test_limits in budget_limits(budget, part["tests"]).items():
            limits.setdefault(nodeid, {}).update(test_limits)
        checks = gate_checks(memstage_bin, report_path, limits, results_dir, part["worker"])
        failures += [c for c in checks if c["verdict"] != "ok"]
    print_summary(stages, failures, config.getoption("memstage_top"), out_dir)
    junit = config.getoption("xmlpath", None)
    if junit:
        annotate_junit(junit, stages, failures)
    if status == 0 and failures:
        return pytest.ExitCode.TESTS_FAILED
    return status


def report_of(memstage_bin, out_dir, part):
    """The report holding a process's tests: the run's for the traced pytest itself; for an
    xdist worker, a report of its own trace (a job's report has the stages of its first
    process)."""
    if part["worker"] == "main":
        return os.path.join(out_dir, "report.json")
    path = os.path.join(out_dir, "pytest", "report.%s.json" % part["worker"])
    trace = memstage.trace_path(part["pid"], out_dir)
    if trace is None:
        raise pytest.UsageError("memstage: no trace of xdist worker %s (pid %d) in %s" % (
            part["worker"], part["pid"], out_dir))
    made = subprocess.run([memstage_bin, "report", trace, "--format", "json", "--top-stacks", TOP_STACKS, "-o", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if made.returncode != 0:
        raise pytest.UsageError("memstage report %s: %s" % (trace, made.stderr.strip() or made.returncode))
    return path


def find_memstage():
    path = memstage.program()
    if not path or not os.access(path, os.X_OK):
        raise pytest.UsageError("--memstage: no memstage program: put it on PATH or give its path in MEMSTAGE")
    return path


def read_user_budget(path):
    """--memstage-budget: the gate's format, stages keyed by node id or a glob of node ids."""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            budget = json.load(f)
    except (OSError, ValueError) as error:
        raise pytest.UsageError("--memstage-budget %s: %s" % (path, error))
    stages = budget.get("stages", {}) if isinstance(budget, dict) else None
    if not isinstance(stages, dict) or set(budget) - {"stages"} - {k for k in budget if k[:1] in "_$"}:
        raise pytest.UsageError("--memstage-budget %s: expected {\"stages\": {NODE_ID_OR_GLOB: {limits}}}" % path)
    for key, limits in stages.items():
        unknown = set(limits) - set(pytest_plugin.LIMIT_KEYS) if isinstance(limits, dict) else {"(not an object)"}
        if unknown:
            raise pytest.UsageError("--memstage-budget %s: stages.%s: unknown %s (expected %s)" % (
                path, key, ", ".join(sorted(unknown)), ", ".join(pytest_plugin.LIMIT_KEYS)))
    return stages


def budget_limits(budget, tests):
    """Each test's limits from the budget's keys that match its node id, later keys first."""
    limits = {}
    for pattern, pattern_limits in budget.items():
        for nodeid in tests:
            if nodeid == pattern or fnmatch.fnmatchcase(nodeid, pattern):
                limits.setdefault(nodeid, {}).update(pattern_limits)
    return limits


def read_results(results_dir):
    """Per process of the traced session that ran tests (pytest itself, or each xdist
    worker): its worker id, pid, the node ids it ran and the limits their markers set."""
    parts = []
    names = sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []
    for name in names:
        if name.startswith("tests-") and name.endswith(".json"):
            with open(os.path.join(results_dir, name), encoding="utf-8") as f:
                part = json.load(f)
            if part["tests"]:
                parts.append(part)
    return parts


def gate_checks(memstage_bin, report_path, limits, results_dir, worker):
    """The gate's verdict on the limits of one process's tests; [] when none has one."""
    if not limits:
        return []
    stages = {nodeid: {GATE_KEYS[key]: str(value) for key, value in test_limits.items()}
              for nodeid, test_limits in limits.items()}
    budget_path = os.path.join(results_dir, "budget.%s.json" % worker)
    checks_path = os.path.join(results_dir, "checks.%s.json" % worker)
    with open(budget_path, "w", encoding="utf-8") as f:
        json.dump({"_comment": "written by pytest --memstage from the tests' limits", "stages": stages}, f, indent=1)
    gate = subprocess.run([memstage_bin, "gate", report_path, "--budget", budget_path, "--json", checks_path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if gate.returncode not in (0, 1):
        raise pytest.UsageError("memstage gate: " + (gate.stderr.strip() or "exit %d" % gate.returncode))
    with open(checks_path, encoding="utf-8") as f:
        return json.load(f)["checks"]


def stages_by_test(report, tests):
    """Each test's stage row in the report (its own path: a test is an outermost stage)."""
    wanted = set(tests)
    return {s["path"]: s for s in report.get("stages", []) if s.get("path") in wanted}


def stack_lines(stack_bytes):
    shown = ["      %s in %d block(s)" % (format_bytes(stack_bytes["bytes"]), stack_bytes["blocks"])]
    return shown + ["        " + line for line in report_text.stack_lines(stack_bytes, FRAMES_SHOWN)]


def stacks_to_show(stage):
    """The stacks holding most of the heap at the test's peak, those passing through the
    test's own file first: the peak's other blocks were live before the test began."""
    test_file = os.path.basename(stage["path"].split("::")[0])
    stacks = stage.get("top_stacks_at_peak", [])
    own = [s for s in stacks if any(os.path.basename(f.get("file") or "") == test_file for f in s["stack"])]
    return (own + [s for s in stacks if s not in own])[:STACKS_SHOWN]


def print_summary(stages, failures, top, out_dir):
    write = sys.stdout.write
    write("\n" + " memstage ".center(78, "=") + "\n")
    for key, label in (("peak_heap_increase_bytes", "heap"), ("peak_rss_increase_bytes", "RSS")):
        ranked = sorted(stages.values(), key=lambda s: -s.get(key, 0))[:top]
        if ranked:
            write("tests whose %s rose most (rise above the test's start; the process's peak):\n" % label)
        for s in ranked:
            peak = s["peak_heap_bytes"] if label == "heap" else s["peak_rss_bytes"]
            write("  %10s  %10s  %s\n" % (format_bytes(s.get(key, 0)), format_bytes(peak), s["path"]))
    for check in failures:
        stage = stages.get(check["stage"])
        write("FAILED %s: %s\n" % (check["stage"], check["message"]))
        for stack in stacks_to_show(stage) if stage else []:
            write("\n".join(stack_lines(stack)) + "\n")
    write("memstage: report in %s (report.html, report.json); %d test limit(s) failed\n" % (out_dir, len(failures)))


def annotate_junit(path, stages, failures):
    """The tests' figures as JUnit properties, and a <failure> for each test over a limit."""
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError):
        return
    failed = {}
    for check in failures:
        failed.setdefault(check["stage"], []).append(check["message"])
    for case in tree.iter("testcase"):
        properties = case.find("properties")
        nodeid = None if properties is None else next(
            (p.get("value") for p in properties.iter("property") if p.get("name") == pytest_plugin.STAGE_PROPERTY), None)
        stage = stages.get(nodeid)
        if stage is None:
            continue
        for field in ("peak_heap_increase_bytes", "peak_rss_increase_bytes", "retained_bytes", "peak_heap_bytes",
                      "peak_rss_bytes"):
            if stage.get(field) is not None:
                ElementTree.SubElement(properties, "property", name="memstage_" + field, value=str(stage[field]))
        if nodeid in failed and case.find("failure") is None and case.find("error") is None:
            failure = ElementTree.SubElement(case, "failure", message="; ".join(failed[nodeid]))
            failure.text = "\n".join(failed[nodeid])
            for suite in tree.iter("testsuite"):
                if case in list(suite):
                    suite.set("failures", str(int(suite.get("failures", "0")) + 1))
    tree.write(path, encoding="utf-8", xml_declaration=True)
