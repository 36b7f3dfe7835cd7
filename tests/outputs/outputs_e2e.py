#!/usr/bin/env python3
"""What memstage writes, under hostile conditions: the real CLI on a small staged program.

usage: outputs_e2e.py SCENARIO --memstage PATH --program PATH --work DIR
       outputs_e2e.py --list

  links               links planted under every output's name are replaced, never followed;
                      folders memstage makes are 0700, traces 0600; an output folder that
                      is a link is refused
  bad_input           a non-UTF-8 argument: the program's status passes, run.json holds it;
                      empty and header-only traces beside good ones are skipped with a warning
  full_disk           a tmpfs too small for report.html, then one with no room at all: the
                      program's status passes, the summary is printed, no .tmp is left
  control_characters  escape sequences in a stage name reach the terminal escaped
  words               the command line's words: an unknown command named, `help CMD`, a number
                      option's word and range, the subcommand's help named, the traced
                      command's own flags left to it (with and without "--", after -qo DIR)
  earlier_runs        a run into a folder with an earlier run's traces says it removed them;
                      `report A B` of two runs that never overlapped says so
  devices             a device, FIFO or descriptor named as every command's output is written
                      as a stream, never replaced (/dev/null stays a device); /dev/full and a
                      full stdout fail with exit 2

Exit status 0 when every check passed, 1 otherwise, 77 when the machine cannot run the
scenario (full_disk needs root to mount a tmpfs).
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import SKIP, Checks, Scenarios, fresh_folder, run_command  # noqa: E402

CHECKS = Checks()
check = CHECKS.check
# Each scenario is one function, scenario_NAME under @scenario: test outputs.NAME. Any may skip
# (exit SKIP) where the machine cannot do what it needs (mount a tmpfs as root).
SCENARIOS = Scenarios()
scenario = SCENARIOS.register
VICTIM = b"victim: must stay as it is\n"


def run(args, **kwargs):
    return run_command(args, timeout=60, **kwargs)


def tmp_files(folder):
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


def plant(folder, names, victims):
    """Links `folder/NAME` -> `victims/NAME`, each victim a file of known content."""
    for name in names:
        victim = os.path.join(victims, name)
        with open(victim, "wb") as f:
            f.write(VICTIM)
        os.symlink(victim, os.path.join(folder, name))


def check_replaced(folder, names, victims, what):
    for name in names:
        with open(os.path.join(victims, name), "rb") as f:
            check(f.read() == VICTIM, "%s: the file %s's link pointed to was written" % (what, name))
        path = os.path.join(folder, name)
        check(os.path.isfile(path) and not os.path.islink(path), "%s: %s is not a file of its own" % (what, name))
    check(tmp_files(folder) == [], "%s: temporary files left: %s" % (what, tmp_files(folder)))


@scenario(may_skip=True)
def scenario_links(a):
    victims = os.path.join(a.work, "victims")
    shared = os.path.join(a.work, "shared")  # a folder others can write to
    os.makedirs(victims)
    os.makedirs(shared)
    os.chmod(shared, 0o777)

    names = ["run.json", "report.json", "report.html"]
    plant(shared, names, victims)
    p = run([a.memstage, "run", "-q", "-o", shared, "--", a.program, "work", "0"])
    check(p.returncode == 0, "run into a folder with planted links: exit %d, %s" % (p.returncode, p.stderr))
    check_replaced(shared, names, victims, "run")
    report = json.load(open(os.path.join(shared, "report.json")))
    check(report["stages"][0]["name"] == "work", "the report is this run's")
    traces = [n for n in os.listdir(shared) if n.startswith("trace.")]
    check(len(traces) == 1, "one trace: %s" % traces)
    for t in traces:
        mode = stat.S_IMODE(os.stat(os.path.join(shared, t)).st_mode)
        check(mode == 0o600, "trace %s has mode %o, not 600" % (t, mode))

    # Folders memstage makes are its own.
    fresh = os.path.join(a.work, "fresh", "run")
    p = run([a.memstage, "run", "-q", "-o", fresh, "--", a.program, "work", "0"])
    check(p.returncode == 0, "run into a new folder: %s" % p.stderr)
    for folder in (fresh, os.path.dirname(fresh)):
        mode = stat.S_IMODE(os.stat(folder).st_mode)
        check(mode == 0o700, "%s was made with mode %o, not 700" % (folder, mode))

    # An output folder that is itself a link is refused, and nothing is written through it.
    link_dir = os.path.join(a.work, "linked")
    os.symlink(victims, link_dir)
    p = run([a.memstage, "run", "-q", "-o", link_dir, "--", a.program, "work", "0"])
    check(p.returncode == 2 and b"symbolic link" in p.stderr, "-o through a link: %d %s" % (p.returncode, p.stderr))
    check(not any(n.startswith("trace.") or n.endswith(".tmp") for n in os.listdir(victims)),
          "-o through a link wrote into its target: %s" % os.listdir(victims))

    # The other commands' outputs.
    budget = os.path.join(a.work, "budget.json")
    with open(budget, "w") as f:
        json.dump({"totals": {"peak_heap": "1GiB"}}, f)
    plant(shared, ["junit.xml", "diff.html", "report.txt"], victims)
    p = run([a.memstage, "gate", shared, "--budget", budget, "--junit", os.path.join(shared, "junit.xml")])
    check(p.returncode == 0, "gate: %s" % p.stderr)
    p = run([a.memstage, "diff", shared, fresh, "--html", os.path.join(shared, "diff.html")])
    check(p.returncode == 0, "diff: %s" % p.stderr)
    p = run([a.memstage, "report", shared, "--format", "text", "-o", os.path.join(shared, "report.txt")])
    check(p.returncode == 0, "report -o: %s" % p.stderr)
    check_replaced(shared, ["junit.xml", "diff.html", "report.txt"], victims, "gate, diff, report")
    check(b"<testsuites" in open(os.path.join(shared, "junit.xml"), "rb").read(), "the JUnit file is written")

    compare_dir = os.path.join(a.work, "compare")
    os.makedirs(compare_dir)
    plant(compare_dir, ["compare.json", "compare.html"], victims)
    p = run([a.memstage, "compare", "--repeat", "1", "-o", compare_dir, "--", a.program, "work", "0"])
    check(p.returncode == 0, "compare: %s" % p.stderr)
    check_replaced(compare_dir, ["compare.json", "compare.html"], victims, "compare")

    scale_dir = os.path.join(a.work, "scale")
    os.makedirs(scale_dir)
    plant(scale_dir, ["scale.json", "scale.html"], victims)
    p = run([a.memstage, "scale", "--sizes", "64,128", "--ram", "1GiB", "-o", scale_dir, "--",
             a.program, "work", "0", "{n}"])
    check(p.returncode == 0, "scale: %s" % p.stderr)
    check_replaced(scale_dir, ["scale.json", "scale.html"], victims, "scale")


@scenario(may_skip=True)
def scenario_bad_input(a):
    run_dir = os.path.join(a.work, "run")
    # Arguments are bytes; one that is not UTF-8 must not cost the program's status.
    argument = b"caf\xe9 \xff\xfe"
    p = run([a.memstage.encode(), b"run", b"-q", b"-o", run_dir.encode(), b"--", a.program.encode(), b"work", b"7",
             b"64", argument])
    check(p.returncode == 7, "non-UTF-8 argument: exit %d, not the program's 7: %s" % (p.returncode, p.stderr))
    run_json = json.load(open(os.path.join(run_dir, "run.json"), encoding="utf-8"))
    check(run_json["command"][-1] == "caf\ufffd \ufffd\ufffd", "run.json's command: %r" % run_json["command"])
    check(run_json["exit_code"] == 7, "run.json's exit code")
    report = json.load(open(os.path.join(run_dir, "report.json"), encoding="utf-8"))
    check(report["exit_code"] == 7 and report["stages"][0]["name"] == "work", "report.json of the run")

    # A broken trace beside a good one: skipped with a warning, the rest reported.
    good = [n for n in os.listdir(run_dir) if n.startswith("trace.")][0]
    with open(os.path.join(run_dir, good), "rb") as f:
        header = f.read(16)
    open(os.path.join(run_dir, "trace.999998.mst"), "wb").close()
    with open(os.path.join(run_dir, "trace.999999.mst"), "wb") as f:
        f.write(header)
    p = run([a.memstage, "report", run_dir, "--format", "json"])
    check(p.returncode == 0, "report with broken traces beside a good one: %s" % p.stderr)
    if p.returncode == 0:
        again = json.loads(p.stdout)
        check(again["totals"]["peak_heap_bytes"] == report["totals"]["peak_heap_bytes"], "the good trace reported")
        warnings = "\n".join(again["warnings"])
        check("trace.999998.mst" in warnings and "trace.999999.mst" in warnings and "skipped" in warnings,
              "both broken traces named in the warnings: %r" % again["warnings"])
        check(p.stderr.count(b"skipped") == 2, "the warnings on stderr: %s" % p.stderr)

    # Only broken traces: one line, exit 2.
    broken = os.path.join(a.work, "broken")
    os.makedirs(broken)
    shutil.copy(os.path.join(run_dir, "trace.999998.mst"), broken)
    shutil.copy(os.path.join(run_dir, "trace.999999.mst"), broken)
    p = run([a.memstage, "report", broken])
    check(p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"memstage: " in p.stderr,
          "a folder of broken traces: %d %s" % (p.returncode, p.stderr))
    p = run([a.memstage, "report", os.path.join(broken, "trace.999998.mst")])
    check(p.returncode == 2 and b"is empty: nothing was written to it" in p.stderr, "one empty trace: %s" % p.stderr)


def fill(disk, leave_bytes):
    """Writes a filler file so that about `leave_bytes` stay free on `disk`."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(os.path.join(disk, "filler.%d" % len(os.listdir(disk))), "wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))
    os.sync()


def page_up(n):
    return (n + 4095) // 4096 * 4096


@scenario(may_skip=True)
def scenario_full_disk(a):
    if os.geteuid() != 0:
        print("SKIP: mounting a tmpfs needs root")
        return SKIP
    # The sizes of what a run writes, measured on a disk with room.
    normal = os.path.join(a.work, "normal")
    p = run([a.memstage, "run", "-q", "-o", normal, "--", a.program, "work", "5"])
    check(p.returncode == 5, "the run with room: %s" % p.stderr)
    size = {n: os.path.getsize(os.path.join(normal, n)) for n in os.listdir(normal)}
    trace = sum(v for n, v in size.items() if n.startswith("trace."))
    margin = 8 * 1024
    if not check(size["report.html"] > 4 * margin, "report.html is larger than the margin: %s" % size):
        return 1

    disk = os.path.join(a.work, "disk")
    os.makedirs(disk)
    mounted = run(["mount", "-t", "tmpfs", "-o", "size=%d" % (4 * 1024 * 1024 + page_up(size["report.html"])),
                   "memstage-outputs-test", disk])
    if mounted.returncode != 0:
        print("SKIP: cannot mount a tmpfs: %s" % mounted.stderr.decode(errors="replace").strip())
        return SKIP
    try:
        # Room for the trace, run.json and report.json, not for report.html.
        os.makedirs(os.path.join(disk, "run"))
        fill(disk, page_up(trace) + page_up(size["run.json"]) + page_up(size["report.json"]) + margin)
        out = os.path.join(disk, "run")
        p = run([a.memstage, "run", "-o", out, "--", a.program, "work", "5"])
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 5, "report.html does not fit: exit %d, not the program's 5: %s" % (p.returncode, err))
        check("peak heap" in err and "work" in err, "the summary is printed: %s" % err)
        check("cannot write %s/report.html: No space left on device" % out in err, "the failure is said: %s" % err)
        check(tmp_files(out) == [], "temporary files left: %s" % tmp_files(out))
        check(not os.path.exists(os.path.join(out, "report.html")), "no partial report.html")
        check(json.load(open(os.path.join(out, "report.json")))["exit_code"] == 5, "report.json is kept whole")

        # No room at all: not even the trace.
        fill(disk, 0)
        out = os.path.join(disk, "none")
        p = run([a.memstage, "run", "-o", out, "--", a.program, "work", "5"])
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 5, "a full disk: exit %d, not the program's 5: %s" % (p.returncode, err))
        check("Traceback" not in err and "terminate" not in err and "memstage: " in err, "said in lines: %s" % err)
        if os.path.isdir(out):
            check(tmp_files(out) == [], "temporary files left on a full disk: %s" % tmp_files(out))
    finally:
        run(["umount", disk])
    return 0


@scenario(may_skip=True)
def scenario_control_characters(a):
    # OSC (retitle the window) ended by BEL, then CSI as a UTF-8 C1 character and as a raw byte.
    name = b"\x1b]0;p\x07\xc2\x9b\x9b"
    out = os.path.join(a.work, "run")
    p = run([a.memstage.encode(), b"run", b"-o", out.encode(), b"--", a.program.encode(), name, b"0"])
    check(p.returncode == 0, "run: %s" % p.stderr)
    report = json.load(open(os.path.join(out, "report.json"), encoding="utf-8"))
    check(report["stages"][0]["name"].startswith("\x1b]0;p\x07\x9b"),
          "report.json keeps the name as the program gave it: %r" % report["stages"][0]["name"])

    def escaped(output, what, from_report_json=False):
        for raw in (b"\x1b", b"\x07", b"\xc2\x9b", b"\x9b"):
            check(raw not in output, "%s: %r reaches the terminal" % (what, raw))
        # report.json holds the byte that is not UTF-8 as U+FFFD, shown as it is.
        name = b"\\x1b]0;p\\x07\\u009b" + ("\ufffd".encode() if from_report_json else b"\\x9b")
        check(name in output, "%s shows the name escaped: %s" % (what, output))

    escaped(p.stderr, "run's summary")
    p = run([a.memstage, "report", out, "--format", "text"])
    check(p.returncode == 0, "report --format text")
    escaped(p.stdout, "the text report")
    # Tables that list stages: diff's, and the gate's against a baseline.
    p = run([a.memstage, "diff", out, out])
    check(p.returncode == 0, "diff: %s" % p.stderr)
    escaped(p.stdout, "diff's table", from_report_json=True)
    p = run([a.memstage, "gate", out, "--baseline", out, "--max-growth", "5%"])
    check(p.returncode == 0, "gate against itself: %s" % p.stderr)
    escaped(p.stdout, "the gate's table", from_report_json=True)
    # A command-line message quoting a path.
    p = run([a.memstage.encode(), b"report", b"/nonexistent/" + name])
    check(p.returncode == 2, "report of a missing path")
    escaped(p.stderr, "an error message")


def is_device(path):
    return stat.S_ISCHR(os.lstat(path).st_mode)


@scenario(may_skip=True)
def scenario_devices(a):
    out = os.path.join(a.work, "run")
    p = run([a.memstage, "run", "-q", "-o", out, "--", a.program, "work", "0"])
    check(p.returncode == 0, "run: %s" % p.stderr)
    budget = os.path.join(a.work, "budget.json")
    with open(budget, "w") as f:
        json.dump({"totals": {"peak_heap": "1GiB"}}, f)
    # Every output a user names, to /dev/null: written, and /dev/null is still the device.
    for args in (["report", out, "-o", "/dev/null"], ["report", out, "--format", "html", "-o", "/dev/null"],
                 ["diff", out, out, "--html", "/dev/null"], ["gate", out, "--budget", budget, "--junit", "/dev/null"]):
        p = run([a.memstage] + args)
        check(p.returncode == 0, "%s to /dev/null: exit %d %s" % (args[0], p.returncode, p.stderr))
        check(is_device("/dev/null"), "%s replaced /dev/null" % " ".join(args))
    # /dev/full: the write fails, said in one line, the device kept.
    for args in (["report", out, "-o", "/dev/full"], ["diff", out, out, "--html", "/dev/full"],
                 ["gate", out, "--budget", budget, "--junit", "/dev/full"]):
        p = run([a.memstage] + args)
        check(p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"No space left on device" in p.stderr,
              "%s to /dev/full: exit 2, one line (%d): %s" % (args[0], p.returncode, p.stderr))
        check(is_device("/dev/full"), "%s replaced /dev/full" % " ".join(args))
    # Standard output on a full device: not exit 0.
    with open("/dev/full", "wb") as full:
        p = subprocess.run([a.memstage, "report", out, "--format", "json"], stdout=full, stderr=subprocess.PIPE,
                           timeout=60)
    check(p.returncode != 0 and b"standard output" in p.stderr, "report > /dev/full: exit %d %s" % (p.returncode, p.stderr))
    # /dev/stdout with stdout a pipe: the report arrives there.
    p = run([a.memstage, "report", out, "--format", "json", "-o", "/dev/stdout"])
    check(p.returncode == 0 and json.loads(p.stdout)["stages"][0]["name"] == "work", "-o /dev/stdout: %s" % p.stderr)
    # A FIFO with a reader: the report comes through it, and the FIFO stays one.
    fifo = os.path.join(a.work, "fifo")
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
    p = run([a.memstage, "report", out, "--format", "json", "-o", fifo])
    received = reader.communicate(timeout=60)[0]
    check(p.returncode == 0 and json.loads(received)["stages"][0]["name"] == "work", "-o FIFO: %s" % p.stderr)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
    # A report or trace named as input that is a FIFO: refused at once.
    p = run([a.memstage, "report", fifo])
    check(p.returncode == 2 and p.stderr.count(b"\n") == 1, "report of a FIFO: exit 2, one line (%d): %s" % (p.returncode, p.stderr))


@scenario(may_skip=True)
def scenario_words(a):
    p = run([a.memstage, "bogus"])
    check(p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"unknown command 'bogus'" in p.stderr,
          "memstage bogus: %d %s" % (p.returncode, p.stderr))
    p = run([a.memstage, "help", "run"])
    check(p.returncode == 0 and b"memstage run" in p.stdout, "memstage help run: %d %s" % (p.returncode, p.stdout[:200]))
    p = run([a.memstage, "run", "--max-depth", "abc", "--", "/bin/true"])
    check(p.returncode == 2 and b"'abc' is not a whole number (expected 1..256)" in p.stderr
          and b"see memstage run --help" in p.stderr, "a word for a number: %d %s" % (p.returncode, p.stderr))
    out = os.path.join(a.work, "run")
    for args in (["-q", "-o", out, "/bin/echo", "hi", "--help"], ["-qo", out, "/bin/echo", "hi", "--help"],
                 ["-q", "-o", out, "--", "/bin/echo", "hi", "--help"]):
        p = run([a.memstage, "run"] + args)
        check(p.returncode == 0 and p.stdout == b"hi --help\n", "run %s: the command's own --help: %d %s %s"
              % (" ".join(args), p.returncode, p.stdout[:200], p.stderr[:200]))


@scenario(may_skip=True)
def scenario_earlier_runs(a):
    first = os.path.join(a.work, "first")
    p = run([a.memstage, "run", "-q", "-o", first, "--", a.program, "work", "0"])
    check(p.returncode == 0 and p.stderr == b"", "first run: %d %s" % (p.returncode, p.stderr))
    p = run([a.memstage, "run", "-q", "-o", first, "--", a.program, "work", "0"])
    check(p.returncode == 0 and b"removed 1 trace of an earlier run from " in p.stderr,
          "a second run into the folder says what it removed: %s" % p.stderr)
    time.sleep(1.5)
    second = os.path.join(a.work, "second")
    p = run([a.memstage, "run", "-q", "-o", second, "--", a.program, "work", "0"])
    check(p.returncode == 0, "second run: %s" % p.stderr)
    p = run([a.memstage, "report", first, second, "--format", "json"])
    check(p.returncode == 0 and b"not running at the same time" in p.stderr,
          "report of two runs apart warns: %d %s" % (p.returncode, p.stderr))
    if p.returncode == 0:
        warnings = json.loads(p.stdout)["warnings"]
        check(any("separate runs" in w for w in warnings), "the warning is in the report: %s" % warnings)
    p = run([a.memstage, "report", first, "--format", "json"])
    check(p.returncode == 0 and b"not running at the same time" not in p.stderr, "one run alone: no such warning")


def main():
    function, a = SCENARIOS.parse("outputs", __doc__.splitlines()[0],
                                  lambda parser: parser.add_argument("--program", required=True))
    a.program = os.path.abspath(a.program)
    a.work = fresh_folder(a.work)
    if function(a) == SKIP:
        return SKIP
    return CHECKS.summary()


if __name__ == "__main__":
    sys.exit(main())
