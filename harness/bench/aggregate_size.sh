#!/usr/bin/env bash
# Aggregate mode's capture size against the run's length: the churn program (2 threads)
# under `memstage run --mode aggregate` at four lengths, its trace bytes and wall time
# each, a least-squares line bytes = a + b * seconds, and that line at one hour.
# Usage: [MEMSTAGE_BUILD=build] harness/bench/aggregate_size.sh [ITERATIONS_PER_THREAD,...]
set -euo pipefail
cd "$(dirname "$0")/../.."
lengths=${1:-1000000,4000000,16000000,64000000}
build=${MEMSTAGE_BUILD:-build}
bin=$build/bin/memstage
churn=$build/bench/memstage_churn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for n in ${lengths//,/ }; do
  out="$work/$n"
  start=$(date +%s.%N)
  "$bin" run -q --mode aggregate -o "$out" -- "$churn" 2 "$n" > /dev/null 2>&1
  end=$(date +%s.%N)
  bytes=$(du -cb "$out"/trace.*.mst | tail -n1 | cut -f1)
  echo "$n $(echo "$end - $start" | bc) $bytes" | tee -a "$work/points"
done
python3 - "$work/points" <<'PY'
import sys
rows = [tuple(float(x) for x in line.split()) for line in open(sys.argv[1])]
ts = [r[1] for r in rows]; bs = [r[2] for r in rows]
n = len(rows); mt = sum(ts) / n; mb = sum(bs) / n
slope = sum((t - mt) * (b - mb) for t, b in zip(ts, bs)) / sum((t - mt) ** 2 for t in ts)
intercept = mb - slope * mt
print(f"  calls per thread, seconds, capture bytes: {[(int(r[0]), round(r[1], 2), int(r[2])) for r in rows]}")
print(f"  fit: {intercept:.0f} bytes + {slope:.0f} bytes/s; one hour: {(intercept + slope * 3600) / 1e6:.1f} MB")
PY
