"""memstage run --ram-limit: stop (default) and record."""
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import read_report  # noqa: E402

memstage, program = sys.argv[1], sys.argv[2]

with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([memstage, "run", "-o", out, "--ram-limit", "64MiB", "--", program],
                         capture_output=True, text=True)
    assert run.returncode == 137, (run.returncode, run.stderr)  # stopped as by the OOM killer
    assert "finished" not in run.stdout
    assert "would not fit in 64.0 MiB: passed at stage grow" in run.stderr, run.stderr
    report = read_report(f"{out}/report.json")
    limit = report["ram_limit"]
    assert limit["limit_bytes"] == 64 << 20 and limit["rss_bytes"] > 64 << 20, limit
    assert limit["stage"] == "grow", limit
    functions = [f["function"] for s in limit["top_stacks"] for f in s["stack"]]
    assert "grow_block(unsigned long)" in functions or "grow_block" in functions, functions
    held = sum(s["bytes"] for s in limit["top_stacks"])
    assert held >= 48 << 20, held  # most of what passed the limit was grow_block's

with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([memstage, "run", "-q", "-o", out, "--ram-limit", "64MiB", "--ram-limit-action", "record",
                          "--", program], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "finished\n", (run.returncode, run.stdout, run.stderr)
    report = read_report(f"{out}/report.json")
    assert report["ram_limit"]["stage"] == "grow"
    assert report["totals"]["peak_heap_bytes"] >= 256 << 20

# The limit is the program's: the tracer's own resident memory (part of RSS) is left out.
# A run without a limit gives the program's own peak and the tracer's; a limit between
# the program's peak and the program's plus the tracer's must not stop it.
with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([memstage, "run", "-q", "-o", out, "--", program], capture_output=True, text=True)
    assert run.returncode == 0, (run.returncode, run.stderr)
    totals = read_report(f"{out}/report.json")["totals"]
    program_peak, tracer = totals["peak_program_rss_bytes"], totals["tracer_peak_bytes"]
    assert tracer >= 256 << 10, totals  # enough to tell the two apart (the tracer of this small program holds ~350 KiB)
    assert totals["peak_rss_bytes"] > program_peak, totals
limit = program_peak + tracer // 2
with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([memstage, "run", "-o", out, "--ram-limit", str(limit), "--", program],
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "finished\n", (limit, run.returncode, run.stderr)
    report = read_report(f"{out}/report.json")
    assert report["ram_limit"] is None, report["ram_limit"]
    assert report["totals"]["peak_program_rss_bytes"] <= limit, (limit, report["totals"])
    assert report["totals"]["peak_rss_bytes"] > limit, (limit, report["totals"])  # with the tracer it passed
    assert "the tracer's own memory up to" in run.stderr, run.stderr  # the summary shows its share apart

# A limit the program came near without passing: the report gives it and warns past 90 %.
near = program_peak * 100 // 95
with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([memstage, "run", "-q", "-o", out, "--ram-limit", str(near), "--", program],
                         capture_output=True, text=True)
    assert run.returncode == 0, (near, run.returncode, run.stderr)
    report = read_report(f"{out}/report.json")
    assert report["ram_limit"] is None and report["ram_limit_bytes"] == near, (near, report["ram_limit_bytes"])
    assert any("of the RAM limit" in w for w in report["warnings"]), report["warnings"]
with tempfile.TemporaryDirectory() as out:  # far below it: no warning
    run = subprocess.run([memstage, "run", "-q", "-o", out, "--ram-limit", str(program_peak * 2), "--", program],
                         capture_output=True, text=True)
    report = read_report(f"{out}/report.json")
    assert not any("of the RAM limit" in w for w in report["warnings"]), report["warnings"]

bad = subprocess.run([memstage, "run", "--ram-limit", "lots", "--", program], capture_output=True, text=True)
assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--ram-limit" in bad.stderr, bad.stderr
print("ram limit: ok")
