#!/usr/bin/env bash
# `memstage run`'s time after the program's exit: the command's wall time less run.json's
# duration_s (the program's own run, spawn to reap), ROUNDS rounds with the builds run in
# turn in each round (a noisy machine slows them alike); prints each round's figures and,
# per build, the medians of the after-exit time and of the program's duration.
# A build is a folder laid out as build/ is (bin/memstage, lib/memstage/...).
#
#   after_exit.sh ROUNDS BUILD [BUILD...] [-- CMD ARGS...]
#       CMD defaults to `/usr/bin/python3 harness/bench/torch_small.py` (a full-mode run)
#       RUN_FLAGS (environment, default "--mode full"): more flags for `memstage run`
#
# Example: harness/bench/after_exit.sh 7 /work/base-b8dc9fd build
set -euo pipefail
usage() {
  sed -n '2,12p' "$0" >&2
  exit 2
}
[ $# -ge 2 ] || usage
rounds=$1
shift
builds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do builds+=("$1"); shift; done
[ ${#builds[@]} -ge 1 ] || usage
if [ $# -gt 0 ]; then shift; fi
command=("$@")
[ ${#command[@]} -gt 0 ] || command=(/usr/bin/python3 "$(dirname "$0")/torch_small.py")
for build in "${builds[@]}"; do
  [ -x "$build/bin/memstage" ] || { echo "after_exit.sh: no $build/bin/memstage" >&2; exit 2; }
done
read -r -a run_flags <<< "${RUN_FLAGS:---mode full}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: prints "AFTER_S DURATION_S" (wall time from the shell's clock, in seconds).
one() {
  local build=$1
  rm -rf "$work/out"
  local start end
  start=$(date +%s.%N)
  "$build/bin/memstage" run -q "${run_flags[@]}" -o "$work/out" -- "${command[@]}" > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  python3 - "$start" "$end" "$work/out/run.json" <<'PY'
import json, sys
start, end, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
duration = json.load(open(path))["duration_s"]
print(f"{end - start - duration:.3f} {duration:.3f}")
PY
}

for ((round = 1; round <= rounds; round++)); do
  line="round $round:"
  for i in "${!builds[@]}"; do
    read -r after duration < <(one "${builds[$i]}")
    echo "$after $duration" >> "$work/build$i"
    line+=" ${builds[$i]} after ${after} s (program ${duration} s);"
  done
  echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
done
# With two builds or more: each against the first, the median of the per-round ratios.
for i in "${!builds[@]}"; do
  python3 - "${builds[$i]}" "$work/build$i" "$work/build0" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
print(f"{sys.argv[1]}: after exit median {statistics.median(r[0] for r in rows):.3f} s "
      f"(min {min(r[0] for r in rows):.3f}, max {max(r[0] for r in rows):.3f}), "
      f"program median {statistics.median(r[1] for r in rows):.3f} s, {len(rows)} runs")
if sys.argv[2] != sys.argv[3]:
    first = [tuple(map(float, l.split())) for l in open(sys.argv[3])]
    ratios = [b[0] / a[0] for a, b in zip(first, rows)]
    print(f"  against the first: median of per-round ratios {statistics.median(ratios):.3f}, "
          f"faster in {sum(r < 1 for r in ratios)} of {len(ratios)}")
PY
done
