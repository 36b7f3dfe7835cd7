#!/usr/bin/env bash
# Analysis at scale: memstage's analyzer against heaptrack_print on the same workload
# (the churn program, 2 threads, ITERATIONS malloc/free pairs each: 4 x ITERATIONS
# events). Records once with each tracer, then times the analyses in interleaved rounds
# and prints events per second and peak RSS (/usr/bin/time's maximum resident set).
# Usage: harness/bench/analysis.sh [ITERATIONS_PER_THREAD] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=${1:-12500000}
rounds=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
churn=build/bench/memstage_churn
events=$((4 * iterations))

build/bin/memstage run -q -o "$work/ms" -- "$churn" 2 "$iterations" > /dev/null
heaptrack -o "$work/ht" "$churn" 2 "$iterations" > /dev/null 2>&1
ht_file=$(ls "$work"/ht*.zst | head -n1)
echo "trace sizes: memstage $(du -h "$work"/ms/trace.*.mst | cut -f1), heaptrack $(du -h "$ht_file" | cut -f1); $events events"

for r in $(seq "$rounds"); do
  /usr/bin/time -f "memstage %e %M" build/bin/memstage report "$work/ms" --format json -o "$work/r.json" 2>> "$work/times"
  /usr/bin/time -f "heaptrack_print %e %M" heaptrack_print "$ht_file" > /dev/null 2>> "$work/times"
done
python3 - "$work/times" "$events" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3 and parts[0] in ("memstage", "heaptrack_print"):
        rows.setdefault(parts[0], []).append((float(parts[1]), int(parts[2])))
events = int(sys.argv[2])
med = {}
for name, runs in rows.items():
    t = statistics.median(r[0] for r in runs)
    rss = statistics.median(r[1] for r in runs) / 1024
    med[name] = (t, rss)
    print(f"  {name:<16} median {t:6.2f} s  {events / t / 1e6:6.1f} M events/s  peak RSS {rss:7.1f} MiB")
m, h = med["memstage"], med["heaptrack_print"]
print(f"  time ratio memstage / heaptrack_print = {m[0] / h[0]:.2f} (target < 1)")
print(f"  RSS ratio  memstage / heaptrack_print = {m[1] / h[1]:.2f} (target <= 0.5)")
PY
