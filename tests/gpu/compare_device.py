"""Compares memstage's device figures with what the programs measured themselves
(device_check.sh runs both): per stage, memstage's device peak against cudaMemGetInfo's
rise (cuda_stages) and torch.cuda.max_memory_reserved (torch_stages), within 1 % or 2 MiB;
the caching allocator's reserved and allocated bytes at each stage's end exactly.

Usage: compare_device.py cuda|torch REPORT.json EXPECTED.json"""
import json
import sys

kind, report_path, expected_path = sys.argv[1:4]
report = json.load(open(report_path))
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
    else:
        check(close(peak, want["max_reserved_bytes"]),
              "torch %s: device peak %d vs torch.cuda.max_memory_reserved %d (%+.2f MiB)"
              % (name, peak, want["max_reserved_bytes"], (peak - want["max_reserved_bytes"]) / MiB))
        cache = device.get("cache") or {}
        check(cache.get("reserved_bytes") == want["reserved_bytes"] and cache.get("allocated_bytes") == want["allocated_bytes"],
              "torch %s: cache at the end reserved %s allocated %s vs torch's %d %d"
              % (name, cache.get("reserved_bytes"), cache.get("allocated_bytes"), want["reserved_bytes"], want["allocated_bytes"]))
sys.exit(1 if failures else 0)
