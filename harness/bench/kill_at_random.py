#!/usr/bin/env python3
"""Kills tests/e2e/programs/kill_schedule under `memstage run` at N random instants and says how
many reports had the peak heap the program held at its death (its own count, docs/modes.md).

  kill_at_random.py MEMSTAGE PROGRAM MODE N [threaded] [SEED]

`threaded`: the program makes a second thread first, so the tracer's writer thread writes what it
records (e2e.sigkill_random checks the one-thread case, exact at every instant).
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

FIELDS = ("pid", "block_size", "usable_size", "blocks", "asked", "held", "finished", "rss_high_water_bytes")


def kill_once(memstage, program, mode, extra, delay_s, work):
    out = os.path.join(work, "run")
    shutil.rmtree(out, ignore_errors=True)
    progress = os.path.join(work, "progress")
    with open(progress, "wb") as f:
        f.write(bytes(8192))
    read = lambda: dict(zip(FIELDS, struct.unpack_from("<8q", open(progress, "rb").read())))
    proc = subprocess.Popen([memstage, "run", "-q", "-o", out, "--mode", mode, "--", program, progress] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while read()["pid"] == 0 and proc.poll() is None:
        time.sleep(0.0005)
    time.sleep(delay_s)
    os.kill(read()["pid"], 9)
    proc.wait()
    t = read()
    size = t["block_size"] if mode in ("full", "aggregate") else t["usable_size"]
    report = os.path.join(out, "report.json")
    peak = 0  # no report at all: nothing the trace held could be read
    if os.path.exists(report):
        with open(report) as f:
            peak = json.load(f)["totals"]["peak_heap_bytes"]
    return peak in (t["held"] * size, t["asked"] * size), (t["held"] * size - peak) / t["block_size"]


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    memstage, program, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    extra = ["threaded"] if "threaded" in sys.argv[5:] else []
    seeds = [a for a in sys.argv[5:] if a != "threaded"]
    rng = random.Random(int(seeds[0]) if seeds else 1)
    work = tempfile.mkdtemp()
    try:
        results = [kill_once(memstage, program, mode, extra, rng.uniform(0, 0.2), work) for _ in range(n)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lost = [round(blocks, 2) for exact, blocks in results if not exact]
    print("%s%s: peak heap exact in %d of %d kills; blocks missing in the others: %s"
          % (mode, " threaded" if extra else "", n - len(lost), n, lost))


if __name__ == "__main__":
    main()
