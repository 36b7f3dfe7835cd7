#!/usr/bin/env python3
"""scale.cli.*: `memstage scale` on tests/scale/programs/grow.cpp, whose peak heap is a
known function of n. The fitted family must be the one the program uses, and the n at
which the fitted peak heap reaches --ram within 2% of the n the formula gives."""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import SKIP, Scenarios, fresh_folder  # noqa: E402

MiB = 1024 * 1024
# Each scenario is one function, scenario_NAME under @scenario: test scale.cli.NAME; any may skip
# (a terminal needs tmux).
SCENARIOS = Scenarios(default_timeout_s=60)
scenario = SCENARIOS.register

# family -> (sizes, formula, n at which we want the crossing: a few times the largest size)
CASES = {
    "linear": ([1000, 2000, 4000, 8000], lambda n: 4096 * n + MiB, 32000),
    "quadratic": ([250, 500, 1000, 1500, 2000], lambda n: 16 * n * n, 6000),
    "power": ([1000, 2000, 4000, 8000, 12000], lambda n: 64 * n ** 1.5, 40000),
}


def scale(args, extra, family, expect_rc=0):
    out = os.path.join(args.work, "out")
    cmd = [args.memstage, "scale", "-o", out] + extra + ["--", args.grow, family, "{n}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=50)
    print(" ".join(cmd))
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    assert proc.returncode == expect_rc, f"exit code {proc.returncode}"
    with open(os.path.join(out, "scale.json")) as f:
        report = json.load(f)
    with open(os.path.join(out, "scale.html")) as f:
        html = f.read()
    assert html.count("<svg") >= 1 and "<script" not in html
    return report, proc.stdout, out


def family_case(args, family):
    sizes, formula, truth_n = CASES[family]
    ram = int(formula(truth_n))
    report, text, _ = scale(
        args,
        ["--sizes", ",".join(map(str, sizes)), "--ram", str(ram), "--metric", "heap", "--flat", "setup,build"],
        family,
    )
    assert [r["status"] for r in report["runs"]] == ["ok"] * len(sizes), report["runs"]
    chosen = report["totals"]["fits"]["heap"]["chosen"]
    model = chosen["model"]
    # 16·n² and 64·n^1.5 are also a·n^b with no constant: the monomial, with fewer
    # parameters, may explain them as well; then its exponent must be the family's.
    if model == "monomial" and family in ("quadratic", "power"):
        exponent = chosen["parameters"]["b"] if isinstance(chosen["parameters"], dict) else chosen["parameters"][1]
        expected = 2.0 if family == "quadratic" else 1.5
        assert abs(exponent - expected) < 0.02, f"monomial exponent {exponent} for {family}"
    else:
        assert model == family, f"chose {model} for {family}"
    crossing = report["crossing"]["n"]
    error = abs(crossing - truth_n) / truth_n
    print(f"{family}: crossing n {crossing:.1f}, truth {truth_n}, error {error:.4%}")
    assert error < 0.02
    assert report["crossing"]["first_stage"] == "build", report["crossing"]
    flagged = {f["stage"] for f in report["flags"]}
    assert flagged == {"build"}, flagged
    assert "passes" in text and "FLAG build" in text


@scenario(may_skip=True)
def scenario_linear(args):
    family_case(args, "linear")


@scenario(may_skip=True)
def scenario_quadratic(args):
    family_case(args, "quadratic")


@scenario(may_skip=True)
def scenario_power(args):
    family_case(args, "power")


@scenario(may_skip=True)
def scenario_skip(args):
    # The fit of the first three sizes predicts ~260 MB at 64000: over 128 MiB, not run.
    report, text, out = scale(args, ["--sizes", "1000,2000,4000,64000", "--ram", "128MiB"], "linear")
    statuses = [r["status"] for r in report["runs"]]
    assert statuses == ["ok", "ok", "ok", "skipped"], statuses
    assert report["runs"][3]["predicted_peak_rss_bytes"] > 128 * MiB
    assert not os.path.exists(os.path.join(out, "n64000"))
    assert "skipped: predicted" in text


@scenario(may_skip=True)
def scenario_stop(args):
    # Any traced process holds more than 2 MiB of RSS: the first run passes, the rest stop.
    report, text, out = scale(args, ["--sizes", "1000,2000,4000", "--ram", "2MiB"], "linear")
    statuses = [r["status"] for r in report["runs"]]
    assert statuses == ["ok", "not run", "not run"], statuses
    assert "stopped" in report["runs"][1]["reason"]


@scenario(may_skip=True)
def scenario_terminal(args):
    """In a terminal (tmux), where stdout and stderr are the screen, each run's line is said once:
    the progress line, not again in the summary."""
    if not shutil.which("tmux"):
        print("SKIP: tmux is not installed")
        sys.exit(SKIP)
    out = os.path.join(args.work, "out")
    session = "memstage-scale-%d" % os.getpid()
    command = " ".join([args.memstage, "scale", "-o", out, "--sizes", "1000,2000", "--ram", "1GiB", "--",
                        args.grow, "linear", "{n}"]) + "; echo scale-done"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", command + "; sleep 30"],
                   check=True)
    try:
        screen = ""
        for _ in range(400):
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                    text=True).stdout
            if "scale-done" in screen:
                break
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])
    print(screen)
    assert "scale-done" in screen, "scale did not finish in the terminal"
    for n in (1000, 2000):
        assert screen.count("n=%d" % n) == 1, "n=%d said %d times" % (n, screen.count("n=%d" % n))
    assert "Models of peak RSS" in screen


def main():
    function, args = SCENARIOS.parse("scale.cli", __doc__.splitlines()[0],
                                     lambda parser: parser.add_argument("--grow", required=True))
    args.work = fresh_folder(args.work)
    function(args)


if __name__ == "__main__":
    main()
