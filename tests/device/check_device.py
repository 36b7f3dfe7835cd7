"""Runs tests/device/device_program under `memstage run` (against the fake CUDA driver and
runtime) and checks the report's device figures against what the program did
(device_program.c), in each of the four modes: each path is recorded once, per-stage device peaks and retained bytes,
the device leaks with the stacks that made them, and a budget on peak_device.

Then runs cache_markers.py (a stand-in for torch.cuda) under memstage: the caching
allocator's reserved and allocated bytes at each stage's end.

Per stage, the device stacks held at the stage's device peak. And the runtime reached only
through a library loaded RTLD_LOCAL (device_local_runtime.c): the tracer still finds the
real cudaMalloc and records the block.

Usage: check_device.py MEMSTAGE DEVICE_PROGRAM CACHE_MARKERS_PY WORK_DIR LOCAL_RUNTIME_PROGRAM"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, fresh_folder, read_report  # noqa: E402

memstage, program, cache_markers, work, local_runtime_program = sys.argv[1:6]
MiB = 1 << 20
work = fresh_folder(work)
CHECKS = Checks(show_passes=True)
check = CHECKS.check


plain = subprocess.run([program], capture_output=True, text=True)
check(plain.returncode == 0, "untraced: exit %d %s" % (plain.returncode, plain.stderr.strip()))

for mode in ("full", "stats", "sample", "aggregate"):  # device memory is exact in every mode
    out = os.path.join(work, mode)
    done = subprocess.run([memstage, "run", "-q", "--mode", mode, "-o", out, "--", program], capture_output=True, text=True)
    check(done.returncode == 0, "%s mode: exit %d (dlsym(RTLD_NEXT) from a library still finds the next definition) %s"
          % (mode, done.returncode, done.stderr.strip()[-500:]))
    report = read_report(os.path.join(out, "report.json"))
    device = report["device"]
    check(device is not None, "%s mode: the report has device figures" % mode)
    if device is None:
        continue
    stages = {s["path"]: s for s in report["stages"]}
    # (peak, retained, allocations) per stage, from device_program.c.
    expected = {
        "direct": (3 * MiB, 2 * MiB, 2),
        "proc_address": (6 * MiB, 0, 1),
        "runtime": (10 * MiB, 0, 1),
        "async": (10 * MiB, 0, 2),
        "vmm": (18 * MiB, 1 * MiB, 2),
        "leak": (4 * MiB, 1 * MiB, 1),
    }
    for path, (peak, retained, allocations) in expected.items():
        d = stages[path]["device"]
        got = (d["peak_bytes"], d["retained_bytes"], d["allocations"])
        check(got == (peak, retained, allocations),
              "%s mode: %s device peak, retained, allocations %s == %s" % (mode, path, got, (peak, retained, allocations)))
        check(stages[path]["peak_device_bytes"] == peak, "%s mode: %s peak_device_bytes" % (mode, path))
    check(device["peak_bytes"] == 18 * MiB and device["allocations"] == 9 and device["frees"] == 6,
          "%s mode: run device peak %d (18 MiB), %d allocations (9), %d frees (6)"
          % (mode, device["peak_bytes"], device["allocations"], device["frees"]))
    check(report["totals"]["peak_device_bytes"] == 18 * MiB, "%s mode: totals.peak_device_bytes" % mode)
    # Held at each stage's device peak, by stack (each block has a call site of its own):
    # the stage's blocks and direct's 2 MiB, which lives to the end.
    held = {"direct": [2 * MiB, 1 * MiB], "runtime": [8 * MiB, 2 * MiB], "async": [5 * MiB, 3 * MiB, 2 * MiB],
            "vmm": [16 * MiB, 2 * MiB], "leak": [2 * MiB, 1 * MiB, 1 * MiB]}
    for path, sizes in held.items():
        tops = stages[path]["device"]["top_stacks_at_peak"]
        got = [t["bytes"] for t in tops]
        check(got == sizes and all(any("main" in f["function"] for f in t["stack"]) for t in tops),
              "%s mode: %s holds %s at its device peak, each through main (%s)" % (mode, path, got, sizes))
    leaks = {l["stage"]: l["bytes"] for l in device["leaks"]}
    check(device["leaked_bytes"] == 4 * MiB and leaks == {"direct": 2 * MiB, "vmm": 1 * MiB, "leak": 1 * MiB},
          "%s mode: device leaks %d bytes by stage %s" % (mode, device["leaked_bytes"], leaks))
    check(report["totals"]["peak_heap_bytes"] < 1 * MiB,
          "%s mode: the fake device's memory is not in the heap figures (peak heap %d)"
          % (mode, report["totals"]["peak_heap_bytes"]))
    if mode == "full":
        top = device["top_stacks_at_peak"]
        check(bool(top) and top[0]["bytes"] == 16 * MiB
              and any("main" in f["function"] for f in top[0]["stack"]),
              "the stack at the device peak (cuMemCreate's 16 MiB) goes through main: %s"
              % [f["function"] for f in (top[0]["stack"] if top else [])][:6])
        text = subprocess.run([memstage, "report", out, "--format", "text"], capture_output=True, text=True).stdout
        check("device memory by stage" in text and "device leaks (4.00 MiB in 3 blocks)" in text,
              "the text report shows device memory by stage and the device leaks")
        budget = os.path.join(work, "budget.json")
        for limit, verdict in (("17MiB", 1), ("18MiB", 0)):
            with open(budget, "w") as f:
                json.dump({"totals": {"peak_device": limit}, "stages": {"vmm": {"peak_device": limit}}}, f)
            gate = subprocess.run([memstage, "gate", out, "--budget", budget], capture_output=True, text=True)
            check(gate.returncode == verdict, "gate: peak_device %s -> exit %d (expected %d)"
                  % (limit, gate.returncode, verdict))
out = os.path.join(work, "cache")
done = subprocess.run([memstage, "run", "-q", "-o", out, "--", "/usr/bin/python3", cache_markers],
                      capture_output=True, text=True)
check(done.returncode == 0, "cache markers: exit %d %s" % (done.returncode, done.stderr.strip()[-500:]))
if done.returncode == 0:
    report = read_report(os.path.join(out, "report.json"))
    stages = {s["path"]: s["device"] for s in report["stages"]}
    check(stages["before_cuda"] is not None and stages["before_cuda"]["cache"] is None,
          "cache: nothing read before torch.cuda is initialised: %s" % stages["before_cuda"])
    forward, emptied = stages["forward"]["cache"], stages["empty_cache"]["cache"]
    check(forward == {"reserved_bytes": 60 * MiB, "allocated_bytes": 32 * MiB, "cached_bytes": 28 * MiB,
                      "peak_reserved_bytes": 60 * MiB, "peak_allocated_bytes": 32 * MiB},
          "cache: forward ends with 60 MiB reserved, 32 MiB allocated, both devices: %s" % forward)
    check(emptied == {"reserved_bytes": 32 * MiB, "allocated_bytes": 32 * MiB, "cached_bytes": 0,
                      "peak_reserved_bytes": 60 * MiB, "peak_allocated_bytes": 32 * MiB},
          "cache: empty_cache gives back the 28 MiB cached: %s" % emptied)
    check(report["device"]["peak_bytes"] == 0 and report["device"]["cache"]["reserved_bytes"] == 32 * MiB,
          "cache: no driver allocations seen, the run's last cache sample: %s" % report["device"]["cache"])

out = os.path.join(work, "local_runtime")
done = subprocess.run([memstage, "run", "-q", "-o", out, "--", local_runtime_program], capture_output=True, text=True)
check(done.returncode == 0, "runtime loaded RTLD_LOCAL: the program's cudaMalloc succeeds under the tracer: exit %d %s"
      % (done.returncode, done.stderr.strip()[-500:]))
if done.returncode == 0:
    report = read_report(os.path.join(out, "report.json"))
    stage = {s["path"]: s for s in report["stages"]}["local_runtime"]["device"]
    check(stage["peak_bytes"] == 6 * MiB and stage["allocations"] == 1 and report["device"]["frees"] == 1,
          "runtime loaded RTLD_LOCAL: the 6 MiB block recorded once, and its free: %s" % stage)

sys.exit(CHECKS.summary())
