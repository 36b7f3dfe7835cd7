"""memstage's pytest plugin: each test a stage, per-test memory limits, a verdict from the report.

    pytest --memstage[=DIR] [--memstage-budget FILE] [--memstage-mode MODE]

    @pytest.mark.memstage_limit(peak_heap="120 MiB", peak_rss="200 MiB", leaked="1 MiB")
    def test_vectorize(): ...

Registered as the `memstage` entry point of the `pytest11` group when the package is
installed; `-p memstage.pytest_plugin` with profiler/python on PYTHONPATH otherwise.

Two roles. Started untraced, `pytest --memstage` runs the same pytest command again under
`memstage run -o DIR` and, once that run's report is written, holds each test to its limits
through `memstage gate` (pytest_verdict.py). Inside the traced run (the tracer is in the
process) each test is a stage named by its node id, setup, call and teardown inside it, so
a fixture of wider scope counts in the test that created it. What a test is held to is its
own demand: how far the heap and the RSS rose above their level when the test began
(peak_heap_increase_bytes and peak_rss_increase_bytes in report.json), and what it leaked:
what it allocated and still held when it ended (retained_bytes; pytest-memray's limit_leaks).
"""
import json
import os

import pytest

import memstage

# Set by the untraced pytest for the traced one: where to write the tests' limits.
RESULTS_ENV = "MEMSTAGE_PYTEST_RESULTS"
DEFAULT_DIR = "memstage-pytest"
LIMIT_KEYS = ("peak_heap", "peak_rss", "leaked")
STAGE_PROPERTY = "memstage_stage"


def pytest_addoption(parser):
    group = parser.getgroup("memstage", "memory by test with memstage")
    group.addoption("--memstage", action="store", nargs="?", const=DEFAULT_DIR, default=None, metavar="DIR",
                    help="run the session under memstage, each test a stage; report in DIR (default %s)" % DEFAULT_DIR)
    group.addoption("--memstage-budget", action="store", default=None, metavar="FILE",
                    help="limits per test in memstage gate's budget format, keyed by node id (globs allowed)")
    group.addoption("--memstage-mode", action="store", default="full",
                    choices=("full", "aggregate", "sample", "stats"), help="memstage's capture mode (default full)")
    group.addoption("--memstage-top", action="store", type=int, default=5, metavar="N",
                    help="tests listed in the summary by heap and by RSS (default 5)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "memstage_limit(peak_heap=None, peak_rss=None, leaked=None): fail the test when its heap or RSS rose "
        "more than this above where it stood when the test began, or it still held more than `leaked` of what "
        "it allocated when it ended (sizes as '120 MiB')")
    if config.getoption("memstage") is not None and memstage.enabled():
        config.pluginmanager.register(TracedSession(config), "memstage-traced-session")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Untraced with --memstage: the whole session runs again under memstage, and its exit
    status is the verdict of the tests and of their limits."""
    if config.getoption("memstage") is None or memstage.enabled() or hasattr(config, "workerinput"):
        return None
    from memstage import pytest_verdict
    return pytest_verdict.run_traced(config)


def limits_of(item):
    marker = item.get_closest_marker("memstage_limit")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(LIMIT_KEYS))
    if marker.args or unknown:
        raise pytest.UsageError("%s: memstage_limit takes %s as keywords, not %s" % (
            item.nodeid, ", ".join(LIMIT_KEYS), ", ".join(map(str, marker.args)) or ", ".join(unknown)))
    return {key: value for key, value in marker.kwargs.items() if value is not None}


class TracedSession:
    """The plugin's part inside the traced run (the controller and each xdist worker)."""

    def __init__(self, config):
        self.config = config
        self.limits = {}
        self.tests = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.tests.append(item.nodeid)
        limits = limits_of(item)
        if limits:
            self.limits[item.nodeid] = limits
        # JUnit's testcase names the stage, so the verdict can find it again.
        item.user_properties.append((STAGE_PROPERTY, item.nodeid))
        memstage.stage_begin(item.nodeid)
        try:
            yield
        finally:
            memstage.stage_end()

    def pytest_sessionfinish(self, session):
        results_dir = os.environ.get(RESULTS_ENV)
        if not results_dir:
            return
        worker = getattr(self.config, "workerinput", {}).get("workerid", "main")
        os.makedirs(results_dir, exist_ok=True)
        path = os.path.join(results_dir, "tests-%s.json" % worker)
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"worker": worker, "pid": os.getpid(), "tests": self.tests, "limits": self.limits}, out)

    def pytest_terminal_summary(self, terminalreporter):
        if os.environ.get(RESULTS_ENV) or not self.limits:
            return
        # Under `memstage run -- pytest ...` nobody reads the report before pytest ends.
        terminalreporter.write_line(
            "memstage: %d test(s) carry memstage_limit; they are held to it by `pytest --memstage` "
            "started untraced (it runs itself under memstage)" % len(self.limits))
