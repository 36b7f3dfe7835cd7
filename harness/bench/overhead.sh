#!/usr/bin/env bash
# Tracer overhead, per call and whole-process. Build first (scripts/build.sh).
#  1. Google Benchmark: a malloc/free pair untraced, under --mode stats, full and sample.
#  2. Whole programs, ROUNDS rounds with every variant interleaved inside each round, so
#     that a noisy machine slows all variants alike; prints median wall times and the
#     ratio of each median to the untraced median of the same rounds:
#       churn   the churn program, 2 threads x ITERATIONS malloc/free
#               (untraced, memstage run --mode full, --mode stats, --mode aggregate,
#               --mode sample at the default rate and at each rate of SAMPLE_RATES,
#               heaptrack, Valgrind's massif; CHURN_VARIANTS picks a subset, e.g.
#               "untraced full aggregate")
#       sqlite  sqlite3 :memory:, 200k inserts and 2 indexes (untraced, full, heaptrack,
#               massif)
#       threads the churn's work on 32 threads at once, ITERATIONS / 16 each (untraced, full,
#               heaptrack, massif): a pool of threads that allocate, more of them than cores
#       torch   python3 torch_small.py: import torch, 10 backward passes of a small MLP
#               (untraced, full, heaptrack, massif: ~40 s a run); also the tracer's own
#               memory (tracer_bytes, the highest the trace recorded) and the untraced
#               run's max RSS
#     and the trace sizes of the churn (memstage's full and aggregate / heaptrack's).
# Usage: [MEMSTAGE_BUILD=build] [SAMPLE_RATES=64KiB,1MiB] harness/bench/overhead.sh [ITERATIONS_PER_THREAD] [ROUNDS] [WORKLOADS]
#   WORKLOADS: comma-separated subset of churn,sqlite,torch,threads (default churn,sqlite,torch)
#   SAMPLE_RATES: more --sample-rate values to run the churn at (variants sample@RATE)
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=${1:-7500000}
rounds=${2:-5}
workloads=${3:-churn,sqlite,torch}
build=${MEMSTAGE_BUILD:-build}  # the build folder to measure
bin=$build/bin/memstage
churn=$build/bench/memstage_churn
bench=$build/bench/memstage_bench_traced_malloc
here=harness/bench
preload=$build/lib/memstage/libmemstage_preload.so  # what memstage run preloads (not the test install copy)
python=/usr/bin/python3  # Debian's, where python3-torch is installed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== per call (Google Benchmark), ns per malloc/free pair"
for mode in untraced stats full sample; do
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
modes = ("untraced", "stats", "full", "sample")
for mode in modes:
    with open(f"{work}/gb.{mode}.csv") as f:
        lines = [l for l in f if l.startswith('"') or l.startswith("name")]
    for r in csv.DictReader(lines):
        rows.setdefault(r["name"], {})[mode] = float(r["cpu_time"])
print(f"  {'benchmark':<40}" + "".join(f" {m:>9}" for m in modes))
for name, t in rows.items():
    print(f"  {name:<40}" + "".join(f" {t[m]:9.1f}" for m in modes))
PY

# One timed run: WORKLOAD VARIANT. Appends "workload variant seconds" to $work/times.
run_one() {
  local workload=$1 variant=$2 out="$work/$1.$2"
  local -a cmd
  case $workload in
    churn) cmd=("$churn" 2 "$iterations") ;;
    threads) cmd=("$churn" 32 "$((iterations / 16))") ;;
    sqlite) cmd=(sqlite3 :memory: ".read $here/sqlite_inserts.sql") ;;
    torch) cmd=("$python" "$here/torch_small.py") ;;
  esac
  rm -rf "$out" && mkdir -p "$out"
  local start end
  start=$(date +%s.%N)
  case $variant in
    untraced) /usr/bin/time -f "%M" -o "$out/maxrss_kb" "${cmd[@]}" > /dev/null 2>&1 ;;
    full) "$bin" run -q -o "$out" -- "${cmd[@]}" > /dev/null 2>&1 ;;
    stats) "$bin" run -q --mode stats -o "$out" -- "${cmd[@]}" > /dev/null 2>&1 ;;
    aggregate) "$bin" run -q --mode aggregate -o "$out" -- "${cmd[@]}" > /dev/null 2>&1 ;;
    sample) "$bin" run -q --mode sample -o "$out" -- "${cmd[@]}" > /dev/null 2>&1 ;;
    sample@*) "$bin" run -q --mode sample --sample-rate "${variant#sample@}" -o "$out" -- "${cmd[@]}" > /dev/null 2>&1 ;;
    heaptrack) heaptrack -o "$out/trace" "${cmd[@]}" > /dev/null 2>&1 ;;
    massif) valgrind --tool=massif --massif-out-file="$out/massif.out" "${cmd[@]}" > /dev/null 2>&1 ;;
  esac
  end=$(date +%s.%N)
  echo "$workload $variant $(echo "$end - $start" | bc)" >> "$work/times"
  cp "$work/times" "${OVERHEAD_TIMES:-/dev/null}" 2>/dev/null || true  # survives an interrupted run
  if [ "$workload" = churn ] && [ "$variant" = full ]; then
    du -cb "$out"/trace.*.mst | tail -n1 | awk '{print "full_trace", $1}' >> "$work/sizes"
  fi
  if [ "$workload" = churn ] && [ "$variant" = aggregate ]; then
    du -cb "$out"/trace.*.mst | tail -n1 | awk '{print "aggregate_trace", $1}' >> "$work/sizes"
  fi
  if [ "$workload" = churn ] && [ "$variant" = heaptrack ]; then
    du -cb "$out"/trace* | tail -n1 | awk '{print "heaptrack_trace", $1}' >> "$work/sizes"
  fi
  if [ "$variant" = full ]; then
    python3 -c 'import json,sys; print(sys.argv[2], json.load(open(sys.argv[1]))["totals"]["rss_breakdown"]["tracer_bytes"])' \
      "$out/report.json" "$workload" >> "$work/tracer_bytes" 2>/dev/null || true
  fi
  if [ "$variant" = untraced ]; then echo "$workload $(cat "$out/maxrss_kb")" >> "$work/maxrss"; fi
}

# Without Valgrind (scripts/setup.sh installs it), no massif column rather than a failed run timed.
massif=$(command -v valgrind >/dev/null 2>&1 && echo " massif" || true)

echo
echo "== whole process, $rounds rounds interleaved ($workloads; churn: 2 threads x $iterations malloc/free)"
touch "$work/times" "$work/sizes" "$work/tracer_bytes" "$work/maxrss"
for r in $(seq "$rounds"); do
  for workload in ${workloads//,/ }; do
    case $workload in
      churn)
        variants=${CHURN_VARIANTS:-untraced full stats aggregate sample heaptrack$massif}
        for rate in ${SAMPLE_RATES:+${SAMPLE_RATES//,/ }}; do variants+=" sample@$rate"; done
        ;;
      *) variants="untraced full heaptrack$massif" ;;
    esac
    for variant in $variants; do run_one "$workload" "$variant"; done
  done
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
times = {}
for line in open(f"{work}/times"):
    w, v, t = line.split(); times.setdefault(w, {}).setdefault(v, []).append(float(t))
for w, variants in times.items():
    base = statistics.median(variants["untraced"])
    print(f"  {w}")
    for v, ts in variants.items():
        m = statistics.median(ts)
        print(f"    {v:<10} median {m:7.3f} s  (min {min(ts):.3f}, max {max(ts):.3f})  ratio to untraced {m / base:5.2f}")
tracer = {}
for line in open(f"{work}/tracer_bytes"):
    w, b = line.split(); tracer.setdefault(w, []).append(int(b))
for w, bs in tracer.items():
    print(f"  {w}: tracer's own memory (tracer_bytes at the report's RSS peak) median {statistics.median(bs)/2**20:.1f} MiB")
rss = {}
for line in open(f"{work}/maxrss"):
    w, kb = line.split(); rss.setdefault(w, []).append(int(kb))
for w, kbs in rss.items():
    print(f"  {w}: untraced max RSS median {statistics.median(kbs)/1024:.0f} MiB")
sizes = {}
for line in open(f"{work}/sizes"):
    k, v = line.split(); sizes.setdefault(k, []).append(int(v))
if "full_trace" in sizes and "aggregate_trace" in sizes:
    fs, ags = statistics.median(sizes["full_trace"]), statistics.median(sizes["aggregate_trace"])
    print(f"  churn trace size: full {fs/2**20:.1f} MiB, aggregate {ags/2**10:.1f} KiB")
if "full_trace" in sizes and "heaptrack_trace" in sizes:
    fs, hs = statistics.median(sizes["full_trace"]), statistics.median(sizes["heaptrack_trace"])
    print(f"  churn trace size: memstage {fs/2**20:.1f} MiB, heaptrack {hs/2**20:.1f} MiB, ratio {fs/hs:.2f}")
PY
