#!/usr/bin/env python3
"""The stage names of the documentation are callable without the header or the Python
module: a C program that declares them itself and a ctypes script, both under
`memstage run`, get their stages with the bytes they allocated in them.

usage: check_stage_abi.py MEMSTAGE C_PROGRAM PY_SCRIPT WORK_DIR"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, fresh_folder  # noqa: E402

memstage, program, script, work = sys.argv[1:5]
work = fresh_folder(work)
CHECKS = Checks(show_passes=True)
check = CHECKS.check


def traced(name, command):
    out = os.path.join(work, name)
    proc = subprocess.run([memstage, "run", "-q", "-o", out, "--"] + command,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check(proc.returncode == 0, "%s: exit 0 under memstage run (got %d; %s)"
          % (name, proc.returncode, proc.stderr.decode(errors="replace").strip()[-400:]))
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), proc.stdout.decode()


def stages(report):
    return {s["path"]: s for s in report["stages"]}


# Untraced, the weak references are null and the program says so: the names come from
# the tracer, not from anything linked into the program.
untraced = subprocess.run([program], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
check(untraced.returncode == 3, "C program untraced: the names are absent (exit 3, got %d)" % untraced.returncode)

report, out = traced("c", [program])
check(out == "stage_abi: 1\n", "C program output unchanged: %r" % out)
by_path = stages(report)
check(sorted(by_path) == ["load", "work"], "C program stages: %r" % sorted(by_path))
if "load" in by_path and "work" in by_path:
    check(by_path["load"]["bytes_allocated"] == 3000000 and by_path["load"]["allocations"] == 1,
          "load: one allocation of 3,000,000 bytes (got %d, %d)"
          % (by_path["load"]["allocations"], by_path["load"]["bytes_allocated"]))
    check(by_path["load"]["retained_bytes"] == 3000000, "load retains 3,000,000 bytes (got %d)"
          % by_path["load"]["retained_bytes"])
    check(by_path["work"]["bytes_allocated"] == 5000000 and by_path["work"]["retained_bytes"] == 0,
          "work: 5,000,000 bytes allocated, none retained (got %d, %d)"
          % (by_path["work"]["bytes_allocated"], by_path["work"]["retained_bytes"]))

report, out = traced("ctypes", [sys.executable, script])
check(out == "stage_abi.py: 8000000\n", "ctypes script output unchanged: %r" % out)
by_path = stages(report)
check(list(by_path) == ["hold"], "ctypes script stages: %r" % list(by_path))
if "hold" in by_path:
    # The bytearray's block, plus whatever small objects the interpreter made meanwhile.
    retained = by_path["hold"]["retained_bytes"]
    check(8000000 <= retained < 8000000 + 65536, "hold retains the 8,000,000-byte bytearray (got %d)" % retained)

sys.exit(CHECKS.summary())
