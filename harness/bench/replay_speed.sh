#!/usr/bin/env bash
# How long `memstage replay` takes (docs/performance.md, "replay"): torch_small.py's full-mode
# trace and the churn's (1 thread, 7.5 M iterations: 15 M malloc and free calls), each
# replayed under one allocator (--allocators glibc --repeat 1: the trace converted, one
# full-mode and one stats-mode replay, their reports, compare.json; with and without
# --heap-only, which skips the calibration replay), in interleaved rounds; and the replayer
# alone on the ops file, untraced. Prints the medians and the load.
#   harness/bench/replay_speed.sh [BUILD_DIR (build)] [ROUNDS (5)]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
rounds="${2:-5}"
memstage="$build/bin/memstage"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$memstage" run -q --mode full -o "$work/torch" -- /usr/bin/python3 "$here/torch_small.py" >/dev/null
"$memstage" run -q --mode full -o "$work/churn" -- "$build/bench/memstage_churn" 1 7500000 >/dev/null

seconds() {  # seconds COMMAND...: its wall time
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

for r in $(seq "$rounds"); do
  for name in torch churn; do
    rm -rf "$work/replay-$name"
    echo "$name replay $(seconds "$memstage" replay "$work/$name" --allocators glibc --repeat 1 -o "$work/replay-$name")"
    rm -rf "$work/replay-$name-heap"
    echo "$name heap-only $(seconds "$memstage" replay "$work/$name" --heap-only --allocators glibc --repeat 1 -o "$work/replay-$name-heap")"
    echo "$name replayer $(seconds "$build/bin/memstage-replayer" "$work/replay-$name/replay.ops")"
  done
done >"$work/times"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$work/times" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, what, s = line.split()
    rows.setdefault((name, what), []).append(float(s))
for (name, what), times in rows.items():
    label = {"replay": "memstage replay --allocators glibc --repeat 1",
             "heap-only": "memstage replay --heap-only --allocators glibc --repeat 1 (no calibration run)",
             "replayer": "memstage-replayer alone, untraced"}[what]
    print("%s, %s: median %.2f s (min %.2f, max %.2f, %d rounds)" % (name, label, statistics.median(times), min(times), max(times), len(times)))
PY
