#!/usr/bin/env bash
# Tracer overhead, whole-process and per call. Build first (scripts/build.sh).
#  1. Google Benchmark: a malloc/free pair untraced, under --mode stats and --mode full.
#  2. The churn program (2 threads, millions of small malloc/free), 5 rounds interleaved:
#     untraced, memstage run --mode full, memstage run --mode stats, heaptrack.
#     Prints median wall times, their ratios and the trace sizes.
# Usage: harness/bench/overhead.sh [ITERATIONS_PER_THREAD] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=${1:-10000000}
rounds=${2:-5}
bin=build/bin/memstage
churn=build/bench/memstage_churn
bench=build/bench/memstage_bench_traced_malloc
preload=$(find build -name libmemstage_preload.so -path "*memstage/*" | head -n1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== per call (Google Benchmark), ns per malloc/free pair"
for mode in untraced stats full; do
  rm -rf "$work/gb" && mkdir -p "$work/gb"
  if [ "$mode" = untraced ]; then
    "$bench" --benchmark_format=csv 2>/dev/null > "$work/gb.$mode.csv"
  else
    MEMSTAGE_OUTPUT="$work/gb" MEMSTAGE_MODE=$mode LD_PRELOAD="$preload" \
      "$bench" --benchmark_format=csv 2>/dev/null > "$work/gb.$mode.csv"
  fi
done
python3 - "$work" <<'PY'
import csv, sys
work = sys.argv[1]
rows = {}
for mode in ("untraced", "stats", "full"):
    with open(f"{work}/gb.{mode}.csv") as f:
        lines = [l for l in f if l.startswith('"') or l.startswith("name")]
    for r in csv.DictReader(lines):
        rows.setdefault(r["name"], {})[mode] = float(r["cpu_time"])
print(f"  {'benchmark':<40} {'untraced':>9} {'stats':>9} {'full':>9}")
for name, t in rows.items():
    print(f"  {name:<40} {t['untraced']:9.1f} {t['stats']:9.1f} {t['full']:9.1f}")
PY

echo
echo "== whole process: churn, 2 threads x $iterations malloc/free, $rounds rounds interleaved"
for r in $(seq "$rounds"); do
  for variant in untraced full stats heaptrack; do
    rm -rf "$work/$variant" && mkdir -p "$work/$variant"
    start=$(date +%s.%N)
    case $variant in
      untraced) "$churn" 2 "$iterations" > /dev/null ;;
      full) "$bin" run -q -o "$work/full" -- "$churn" 2 "$iterations" > /dev/null ;;
      stats) "$bin" run -q --mode stats -o "$work/stats" -- "$churn" 2 "$iterations" > /dev/null ;;
      heaptrack) heaptrack -o "$work/heaptrack/trace" "$churn" 2 "$iterations" > /dev/null 2>&1 ;;
    esac
    end=$(date +%s.%N)
    echo "$variant $(echo "$end - $start" | bc)" >> "$work/times"
  done
  du -b "$work"/full/trace.*.mst | awk '{s+=$1} END {print "full_trace", s}' >> "$work/sizes"
  du -b "$work"/heaptrack/trace* | awk '{s+=$1} END {print "heaptrack_trace", s}' >> "$work/sizes"
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
times = {}
for line in open(f"{work}/times"):
    k, v = line.split(); times.setdefault(k, []).append(float(v))
sizes = {}
for line in open(f"{work}/sizes"):
    k, v = line.split(); sizes.setdefault(k, []).append(int(v))
med = {k: statistics.median(v) for k, v in times.items()}
for k, v in times.items():
    print(f"  {k:<10} median {med[k]:7.3f} s  (min {min(v):.3f}, max {max(v):.3f})")
print(f"  full / heaptrack   = {med['full'] / med['heaptrack']:.2f}   (target <= 0.5)")
print(f"  stats / untraced   = {med['stats'] / med['untraced']:.2f}   (target <= 1.15)")
print(f"  full / untraced    = {med['full'] / med['untraced']:.2f}")
fs, hs = statistics.median(sizes['full_trace']), statistics.median(sizes['heaptrack_trace'])
print(f"  trace size: memstage {fs/2**20:.1f} MiB, heaptrack {hs/2**20:.1f} MiB, ratio {fs/hs:.2f} (target <= 0.5)")
PY
