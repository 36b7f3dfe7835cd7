"""What the Python test scripts of tests/ share: a Scenario (checks, running programs under
`memstage run`, a work folder of its own, the report's schema validated at the end), the
readers of a report's stacks, and one registration of a script's scenarios.

A script registers each scenario once, as a function named scenario_NAME under @scenario
(Scenarios.register); CMake asks `SCRIPT --list` at configure time and makes one test
PREFIX.NAME of each (tests/CMakeLists.txt's memstage_add_scenarios). Scenarios.main runs
scenarios that take a Scenario (e2e.py, jobs.py); Scenarios.parse hands the parsed arguments
to scripts whose scenarios take those (outputs, compare, scale). Python 3 standard library only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler", "python"))
# The one way Python reads a report.json, the package's: stacks given back as their frames.
from memstage.report_file import read_report, resolve_stacks  # noqa: E402,F401

MIB = 1048576


def base_name(function):
    """'ns::f(int) const [clone .cold]' -> 'ns::f': the name without parameters or clone suffix."""
    name = function or ""
    while " [clone " in name:
        name = name[: name.rindex(" [clone ")]
    name = name.strip()
    for qualifier in (" const", " volatile", " &&", " &", " noexcept"):
        if name.endswith(qualifier):
            name = name[: -len(qualifier)].rstrip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            if name[i] == ")":
                depth += 1
            elif name[i] == "(":
                depth -= 1
                if depth == 0:
                    # 'operator()()' keeps its own parentheses.
                    name = name[:i]
                    break
    return name


def user_frames(stack):
    """The stack from the program's first frame on: past what the report flags as allocation
    plumbing (the analysis's one classifier, reports/analysis/allocator_frames.h)."""
    i = 0
    while i < len(stack) and stack[i]["allocator"]:
        i += 1
    return stack[i:]


def chain(stack, n):
    return [base_name(f.get("function")) for f in user_frames(stack)[:n]]


def file_base(frame):
    return os.path.basename(frame.get("file") or "")


def real_module(frame):
    return os.path.realpath(frame["module"]) if frame.get("module") else "(no module)"


def has_function(stack, name):
    return any(base_name(f.get("function")) == name for f in stack)


def format_stack(stack, limit=12):
    lines = []
    for f in stack[:limit]:
        lines.append("      %s (%s:%s) [%s]%s" % (f.get("function") or f.get("address"), file_base(f), f.get("line"),
                                                 os.path.basename(f.get("module") or "?"),
                                                 " inlined" if f.get("inlined") else ""))
    if len(stack) > limit:
        lines.append("      ... %d more" % (len(stack) - limit))
    return "\n".join(lines)


def fresh_folder(path):
    """PATH emptied (made where missing); returns it absolute."""
    path = os.path.abspath(path)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run_command(command, timeout=120, **kwargs):
    """COMMAND's CompletedProcess, stdout and stderr captured; the command, its status and time printed."""
    start = time.monotonic()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, **kwargs)
    elapsed = time.monotonic() - start
    shown = " ".join(os.fsdecode(word) for word in command)  # words may be bytes (a non-UTF-8 argument)
    print("$ %s  -> exit %d in %.2f s" % (shown, proc.returncode, elapsed), flush=True)
    return proc


class Checks:
    """Checks counted as they are made, each failure printed then (each pass too with
    show_passes) and listed by summary()."""
    def __init__(self, show_passes=False):
        self.failures = []
        self.checks = 0
        self.show_passes = show_passes

    def check(self, condition, message):
        self.checks += 1
        if not condition:
            self.failures.append(message)
            print("FAIL: " + message, flush=True)
        elif self.show_passes:
            print("ok:   " + message, flush=True)
        return condition

    def eq(self, got, expected, what):
        return self.check(got == expected, "%s: expected %r, got %r" % (what, expected, got))

    def fail(self, message):
        return self.check(False, message)

    def summary(self):
        """The failures listed; the exit status: 1 with a failure, 0 without."""
        if self.failures:
            print("\n%d of %d checks failed:" % (len(self.failures), self.checks))
            for f in self.failures:
                print("  - " + f.splitlines()[0])
            return 1
        print("\nall %d checks passed" % self.checks)
        return 0


class Scenario(Checks):
    """One scenario's checks and runs: its work folder (args.work, emptied first), the programs
    (args.programs), memstage (args.memstage) and the schema validator (args.validator)."""
    def __init__(self, args):
        super().__init__()
        self.memstage = os.path.abspath(args.memstage)
        self.programs = os.path.abspath(args.programs)
        self.work = fresh_folder(args.work)
        self.validator = args.validator
        self.reports = []  # report.json files to validate

    # ---- running things ----
    def program(self, name):
        return os.path.join(self.programs, name)

    def run(self, command, timeout=120, env=None, cwd=None):
        return run_command(command, timeout=timeout, env=env, cwd=cwd)

    def traced(self, name, command, expect_exit=0, mode=None, run_flags=(), env=None):
        """memstage run -o WORK/name [--mode MODE] [RUN_FLAGS] -- COMMAND: returns (folder, report)."""
        out = os.path.join(self.work, name)
        argv = [self.memstage, "run", "-o", out]
        if mode:
            argv += ["--mode", mode]
        argv += list(run_flags)
        proc = self.run(argv + ["--"] + command, env=env)
        with open(out + ".stderr", "wb") as f:
            f.write(proc.stderr)
        self.eq(proc.returncode, expect_exit, "%s: exit code of memstage run" % name)
        path = os.path.join(out, "report.json")
        if not os.path.exists(path):
            self.fail("%s: no report.json in %s; memstage said:\n%s" % (name, out, proc.stderr.decode(errors="replace")))
            raise SystemExit(self.finish())
        self.reports.append(path)
        report = read_report(path)
        self.eq(report.get("schema"), "memstage.report/2", "%s: schema" % name)
        return out, report

    def traced_as_untraced(self, name, command, expect_exit=0, run_flags=(), timeout=120, validate=True):
        """COMMAND untraced, then under `memstage run -q`, each with a folder of its own as
        working directory (WORK/name.untraced, WORK/name.traced). The tracer must not
        disturb the program: exit status, stdout, stderr and every file it wrote there
        (truth.json aside: it holds pids) byte-identical. Returns (trace folder, report,
        the traced run's truth.json or None). `validate`: check report.json against the
        schema (slow for a Python program's hundreds of stacks: once per scenario is enough)."""
        runs = {}
        for kind in ("untraced", "traced"):
            cwd = os.path.join(self.work, "%s.%s" % (name, kind))
            os.makedirs(cwd)
            argv = list(command)
            if kind == "traced":
                argv = [self.memstage, "run", "-q", "-o", os.path.join(self.work, name)] + list(run_flags) + ["--"] + argv
            try:
                runs[kind] = (self.run(argv, timeout=timeout, cwd=cwd), cwd)
            except subprocess.TimeoutExpired:
                self.fail("%s: %s run still running after %d s" % (name, kind, timeout))
                raise SystemExit(self.finish())
        (plain, plain_cwd), (traced, traced_cwd) = runs["untraced"], runs["traced"]
        # memstage run exits 128 + signal for a program a signal ended, as a shell does.
        plain_exit = 128 - plain.returncode if plain.returncode < 0 else plain.returncode
        self.eq(plain_exit, expect_exit, "%s: exit status untraced" % name)
        self.eq(traced.returncode, plain_exit, "%s: exit status traced == untraced" % name)
        self.eq(traced.stdout, plain.stdout, "%s: stdout traced == untraced" % name)
        self.eq(traced.stderr, plain.stderr, "%s: stderr traced == untraced" % name)

        def files(root):
            found = {}
            for folder, _, names in os.walk(root):
                for n in names:
                    path = os.path.join(folder, n)
                    rel = os.path.relpath(path, root)
                    if rel != "truth.json":
                        with open(path, "rb") as f:
                            found[rel] = f.read()
            return found
        plain_files, traced_files = files(plain_cwd), files(traced_cwd)
        self.eq(sorted(traced_files), sorted(plain_files), "%s: files written traced == untraced" % name)
        for rel in sorted(set(plain_files) & set(traced_files)):
            self.check(traced_files[rel] == plain_files[rel], "%s: %s traced (%d bytes) == untraced (%d bytes)"
                       % (name, rel, len(traced_files[rel]), len(plain_files[rel])))
        out = os.path.join(self.work, name)
        path = os.path.join(out, "report.json")
        if not self.check(os.path.exists(path), "%s: report.json written" % name):
            raise SystemExit(self.finish())
        if validate:
            self.reports.append(path)
        report = read_report(path)
        truth = None
        if os.path.exists(os.path.join(traced_cwd, "truth.json")):
            with open(os.path.join(traced_cwd, "truth.json")) as f:
                truth = json.load(f)
        return out, report, truth

    def report_json(self, trace, name):
        """memstage report TRACE --format json, kept as WORK/name.json for validation."""
        proc = self.run([self.memstage, "report", trace, "--format", "json"])
        if not self.eq(proc.returncode, 0, "memstage report %s: exit code" % trace):
            print(proc.stderr.decode(errors="replace"))
            raise SystemExit(self.finish())
        path = os.path.join(self.work, name + ".json")
        with open(path, "wb") as f:
            f.write(proc.stdout)
        self.reports.append(path)
        return resolve_stacks(json.loads(proc.stdout))

    def same_as_report_afterwards(self, out, what):
        """memstage run and attach read the program's trace while it ran (TraceBeingWritten): the report.json they
        wrote must be the one `memstage report` makes from the finished files."""
        proc = self.run([self.memstage, "report", out, "--format", "json"])
        with open(os.path.join(out, "report.json"), "rb") as f:
            written = f.read()
        self.check(proc.returncode == 0 and proc.stdout == written,
                   "%s: report.json of the run (%d bytes) == memstage report of its folder afterwards (%d bytes)"
                   % (what, len(written), len(proc.stdout)))

    def truth_file(self, name):
        return os.path.join(self.work, name + ".truth.json")

    def read_truth(self, name):
        with open(self.truth_file(name)) as f:
            return json.load(f)

    # ---- report helpers ----
    def one_leak(self, report, size, what):
        """The single leak group of one block of `size` bytes."""
        groups = [g for g in report["leaks"] if g["bytes"] == size and g["blocks"] == 1]
        if not self.eq(len(groups), 1, "%s: leak groups of one block of %d bytes" % (what, size)):
            return None
        return groups[0]

    def expect_chain(self, report, size, expected, what):
        group = self.one_leak(report, size, what)
        if group is None:
            return None
        got = chain(group["stack"], len(expected))
        if not self.eq(got, expected, "%s: frames after the allocator for the %d-byte block" % (what, size)):
            print(format_stack(group["stack"], 60))
        return group

    def counts_consistent(self, report, what):
        t = report["totals"]
        # Every block never freed is the program's leak or the runtime's, held for the process's life.
        self.eq(t["allocations"] - t["frees"], t["leaked_blocks"] + t["runtime_held_blocks"],
                "%s: allocations - frees == leaked_blocks + runtime_held_blocks" % what)
        for runtime, key in ((False, "leaked"), (True, "runtime_held")):
            groups = [g for g in report["leaks"] if g["runtime"] == runtime]
            self.eq(sum(g["bytes"] for g in groups), t[key + "_bytes"], "%s: sum of leak groups == %s_bytes" % (what, key))
            self.eq(sum(g["blocks"] for g in groups), t[key + "_blocks"],
                    "%s: sum of leak groups' blocks == %s_blocks" % (what, key))

    def one_line_error(self, proc, what, contains=None):
        text = proc.stderr.decode(errors="replace")
        body = text[:-1] if text.endswith("\n") else text
        self.check(body != "" and "\n" not in body, "%s: stderr must be exactly one line, got %r" % (what, text))
        if contains is not None:
            self.check(contains in text, "%s: stderr must mention %r, got %r" % (what, contains, text))

    # ---- the end ----
    def validate_reports(self):
        if not self.reports:
            return
        if not self.validator or not os.path.exists(self.validator):
            self.fail("schema validator %r not found: %d reports left unvalidated" % (self.validator, len(self.reports)))
            return
        proc = self.run([sys.executable, self.validator] + self.reports)
        if not self.eq(proc.returncode, 0, "schema validation of %d reports" % len(self.reports)):
            print(proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace"))

    def finish(self):
        self.validate_reports()
        return self.summary()

    def run_scenario(self, function):
        """function(self), then finish(); a SystemExit on the way (a run that left nothing to check,
        a skip) gives its status."""
        try:
            function(self)
        except SystemExit as e:
            return e.code
        return self.finish()


SKIP = 77  # the exit status CTest reads as skipped (SKIP_RETURN_CODE) where a scenario may skip


class Scenarios:
    """A test script's scenarios, each registered once: @scenarios.register on a function named
    scenario_NAME is test PREFIX.NAME."""
    PREFIX = "scenario_"

    def __init__(self, default_timeout_s=120):
        self.default_timeout_s = default_timeout_s
        self.by_name = {}  # NAME -> (function, timeout in seconds, whether it may skip)

    def register(self, function=None, *, timeout_s=None, may_skip=False):
        """@register, or @register(timeout_s=240, may_skip=True) where a scenario needs longer
        or exits SKIP where what it needs is missing."""
        def add(f):
            if not f.__name__.startswith(self.PREFIX):
                raise ValueError("a scenario's function is named %sNAME, not %s" % (self.PREFIX, f.__name__))
            name = f.__name__[len(self.PREFIX):]
            if name in self.by_name:
                raise ValueError("scenario %s registered twice" % name)
            self.by_name[name] = (f, timeout_s or self.default_timeout_s, may_skip)
            return f
        return add(function) if function is not None else add

    def listing(self):
        """One line per scenario, in the order registered: NAME TIMEOUT_S MAY_SKIP (0 or 1)."""
        return "".join("%s %d %d\n" % (name, timeout_s, int(may_skip))
                       for name, (_, timeout_s, may_skip) in self.by_name.items())

    def refuse_unregistered(self, names):
        """A function named scenario_NAME without @scenario would be no test at all: exits with
        one line naming it (CMake's configure fails)."""
        missing = sorted(name for name, value in names.items()
                         if name.startswith(self.PREFIX) and callable(value) and value not in
                         [f for f, _, _ in self.by_name.values()])
        if missing:
            sys.exit("%s: put @scenario above %s, or name it otherwise" % (sys.argv[0], ", ".join(missing)))

    def parse(self, prefix, description, add_arguments=None):
        """`SCRIPT --list` (prints listing() and exits 0), or `SCRIPT NAME --memstage PATH --work DIR`
        and what add_arguments(parser) adds: returns (the scenario's function, the arguments),
        memstage's path made absolute, after printing which scenario runs."""
        if sys.argv[1:] == ["--list"]:
            self.refuse_unregistered(vars(sys.modules["__main__"]))
            sys.stdout.write(self.listing())
            sys.exit(0)
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("scenario", choices=sorted(self.by_name))
        parser.add_argument("--memstage", required=True, help="the memstage binary")
        parser.add_argument("--work", required=True, help="scratch folder (emptied first)")
        if add_arguments:
            add_arguments(parser)
        args = parser.parse_args()
        args.memstage = os.path.abspath(args.memstage)
        function = self.by_name[args.scenario][0]
        print("%s.%s: %s" % (prefix, args.scenario, function.__doc__ or ""), flush=True)
        return function, args

    def main(self, prefix, description, add_arguments=None, configure=None):
        """A script whose scenarios take a Scenario: parse(), with --programs DIR and --validator PATH,
        then configure(s, args) and the scenario. Exit status 0 when every check passed, 1 otherwise,
        SKIP when it skipped."""
        def arguments(parser):
            parser.add_argument("--programs", required=True, help="folder of the built test programs")
            parser.add_argument("--validator", help="tests/render/validate_report.py")
            if add_arguments:
                add_arguments(parser)
        function, args = self.parse(prefix, description, arguments)
        s = Scenario(args)
        if configure:
            configure(s, args)
        return s.run_scenario(function)
