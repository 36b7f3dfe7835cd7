"""Compares memstage's device figures with what the programs measured themselves
(device_check.sh runs both): per stage, memstage's device peak against cudaMemGetInfo's
rise (cuda_stages) and torch.cuda.max_memory_reserved (torch_stages), within 1 % or 2 MiB,
where torch's figure is completed by what cuBLAS allocates itself (torch does not count it);
the caching allocator's reserved and allocated bytes at each stage's end exactly.

Usage: compare_device.py cuda|torch REPORT.json EXPECTED.json"""
import json
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import read_report  # noqa: E402

kind, report_path, expected_path = sys.argv[1:4]
report = read_report(report_path)
expected = json.load(open(expected_path))
stages = {s["path"]: s for s in report["stages"]}
MiB = 1 << 20
failures = 0


def close(a, b):
    return abs(a - b) <= max(2 * MiB, 0.01 * max(a, b))


def check(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    failures += not ok


check(report.get("device") is not None, "%s: the report has device figures" % kind)
device_run = report.get("device") or {}
timeline = device_run.get("timeline") or []


def level_at(t_s):
    """Device bytes live at t_s, by memstage's device timeline."""
    level = 0
    for point in timeline:
        if point["t_s"] > t_s:
            break
        level = point["bytes"]
    return level


def in_cublas(stack):
    return any("libcublas" in frame.get("module", "") for frame in stack)


# What cuBLAS allocated itself (its handle, at the first matrix product), beside the caching
# allocator: torch's figures leave it out, memstage's driver-level peak has it. Read off the
# stacks held at the run's device peak (the handle lives to the end).
cublas_bytes = sum(s["bytes"] for s in device_run.get("top_stacks_at_peak") or [] if in_cublas(s["stack"]))
if kind == "torch":
    print("info  torch: cuBLAS's own device memory at the device peak: %d bytes (%.2f MiB)" % (cublas_bytes, cublas_bytes / MiB))

for name, want in expected.items():
    stage = stages.get(name)
    device = stage and stage.get("device")
    if not device:
        check(False, "%s: stage %s has device figures" % (kind, name))
        continue
    peak = device["peak_bytes"]
    if kind == "cuda":
        check(close(peak, want), "cuda %s: device peak %d vs cudaMemGetInfo rise %d (%+.2f MiB)"
              % (name, peak, want, (peak - want) / MiB))
        continue
    # The stage's rise: memstage's peak over the level at the stage's start, against torch's
    # reserved peak over what it had reserved at the start. cuBLAS's handle comes on top in
    # the stage that makes it.
    rise = peak - level_at(stage["start_s"])
    torch_rise = want["max_reserved_bytes"] - want["reserved_at_start_bytes"]
    outside = cublas_bytes if name == "blas_handle" else 0
    check(close(rise, torch_rise + outside),
          "torch %s: device rise %d vs torch.cuda.max_memory_reserved's rise %d + cuBLAS's own %d (%+.2f MiB)"
          % (name, rise, torch_rise, outside, (rise - torch_rise - outside) / MiB))
    # The level: torch's reserved peak plus cuBLAS's own (made in the first stage, held to the end).
    check(close(peak, want["max_reserved_bytes"] + cublas_bytes),
          "torch %s: device peak %d vs torch.cuda.max_memory_reserved %d + cuBLAS's own %d (%+.2f MiB)"
          % (name, peak, want["max_reserved_bytes"], cublas_bytes,
             (peak - want["max_reserved_bytes"] - cublas_bytes) / MiB))
    # The driver's view: what it handed out in the stage beyond torch's reserve is at least
    # cuBLAS's own (it also loads kernel images, which no allocation call makes).
    driver_rise = want["used_at_end_bytes"] - want["used_at_start_bytes"]
    reserved_rise = want["reserved_bytes"] - want["reserved_at_start_bytes"]
    print("info  torch %s: cudaMemGetInfo rise %+d, torch reserved rise %+d, memstage level rise %+d"
          % (name, driver_rise, reserved_rise, level_at(stage["end_s"]) - level_at(stage["start_s"])))
    if name == "blas_handle":
        check(cublas_bytes > 0 and cublas_bytes <= driver_rise - reserved_rise + 2 * MiB,
              "torch blas_handle: cuBLAS's own %d bytes seen, within the driver's rise beyond torch's reserve %d"
              % (cublas_bytes, driver_rise - reserved_rise))
    # The stacks held at the stage's device peak: cuBLAS's own from the stage that makes
    # them on; the 512 MiB tensor, from the script's line (Python frames in full mode).
    held = device.get("top_stacks_at_peak") or []
    cublas_held = sum(h["bytes"] for h in held if in_cublas(h["stack"]))
    check(cublas_held == cublas_bytes, "torch %s: cuBLAS's own %d bytes among the stacks held at the stage's device peak"
          % (name, cublas_held))
    if name == "alloc":
        tensor = held[0] if held else {"bytes": 0, "stack": []}
        python = [f["function"] for f in tensor["stack"] if f.get("kind") == "python"]
        check(tensor["bytes"] == 512 * MiB and (not python or "allocate" in python),
              "torch alloc: the largest stack held at its device peak is the 512 MiB tensor (%d), made in %s"
              % (tensor["bytes"], python[:2] or "native frames (stats mode)"))
    cache = device.get("cache") or {}
    check(cache.get("reserved_bytes") == want["reserved_bytes"] and cache.get("allocated_bytes") == want["allocated_bytes"],
          "torch %s: cache at the end reserved %s allocated %s vs torch's %d %d"
          % (name, cache.get("reserved_bytes"), cache.get("allocated_bytes"), want["reserved_bytes"], want["allocated_bytes"]))
sys.exit(1 if failures else 0)
