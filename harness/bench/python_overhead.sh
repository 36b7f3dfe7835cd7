#!/usr/bin/env bash
# Tracer overhead on a Python program: the naive pipeline of examples/python_pipeline
# (sklearn TF-IDF, dense matrices, a torch model), R rounds interleaved:
#   untraced                 /usr/bin/python3 train_naive.py
#   traced, Python frames    the tracer preloaded, memstage's bootstrap on PYTHONPATH
#   traced, native frames    the tracer preloaded, no bootstrap
# The process's wall time only (the report is written afterwards, offline). Prints the
# median of each and the ratios to untraced, and the trace sizes.
# Usage: harness/bench/python_overhead.sh [ROWS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rows=${1:-3000}
rounds=${2:-5}
preload=$(readlink -f build/lib/memstage/libmemstage_preload.so)
bootstrap=$(readlink -f build/lib/memstage/python)
script=examples/python_pipeline/train_naive.py
args=(--rows "$rows" --epochs 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wall() {  # prints the wall seconds of "$@"
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s%N)
  printf '%d.%09d\n' $(((end - start) / 1000000000)) $(((end - start) % 1000000000))
}

for round in $(seq "$rounds"); do
  echo "untraced $(wall /usr/bin/python3 "$script" "${args[@]}")" >> "$work/times"
  rm -rf "$work/py" && mkdir "$work/py"
  echo "python_frames $(wall env LD_PRELOAD="$preload" MEMSTAGE_OUTPUT="$work/py" PYTHONPATH="$bootstrap" \
    /usr/bin/python3 "$script" "${args[@]}")" >> "$work/times"
  rm -rf "$work/native" && mkdir "$work/native"
  echo "native_frames $(wall env LD_PRELOAD="$preload" MEMSTAGE_OUTPUT="$work/native" \
    /usr/bin/python3 "$script" "${args[@]}")" >> "$work/times"
  echo "round $round: $(tail -n 3 "$work/times" | tr '\n' ' ')" >&2
done
python_frames_trace=$(du -b "$work"/py/trace.*.mst | awk '{s += $1} END {print s}')
native_trace=$(du -b "$work"/native/trace.*.mst | awk '{s += $1} END {print s}')
/usr/bin/python3 - "$work/times" "$rows" "$rounds" "$python_frames_trace" "$native_trace" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    name, seconds = line.split()
    times.setdefault(name, []).append(float(seconds))
base = statistics.median(times["untraced"])
print(f"train_naive.py --rows {sys.argv[2]} --epochs 1, {sys.argv[3]} rounds interleaved, median wall seconds")
for name in ("untraced", "python_frames", "native_frames"):
    m = statistics.median(times[name])
    print(f"  {name:<15} {m:7.2f} s   x{m / base:.2f}")
print(f"  trace: {int(sys.argv[4]) / 2**20:.1f} MiB with Python frames, {int(sys.argv[5]) / 2**20:.1f} MiB native only")
PY
