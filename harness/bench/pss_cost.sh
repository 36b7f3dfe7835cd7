#!/usr/bin/env bash
# The cost of stats mode's PSS samples (/proc/self/smaps_rollup, whose read time grows with
# the resident set): a malloc/free loop beside a small and a large resident set, untraced and
# under --mode stats (the preload alone, no report), ROUNDS rounds interleaved; prints medians
# and the ratio per resident size. Build first (scripts/build.sh).
# Usage: [MEMSTAGE_BUILD=build] harness/bench/pss_cost.sh [ROUNDS] [ITERATIONS] [SMALL_MIB] [LARGE_MIB]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
iterations=${2:-60000000}
sizes="${3:-16} ${4:-3072}"
build=${MEMSTAGE_BUILD:-build}
program=$build/bench/memstage_resident_churn
preload=$build/lib/memstage/libmemstage_preload.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for r in $(seq "$rounds"); do
  for mib in $sizes; do
    for variant in untraced stats; do
      rm -rf "$work/out" && mkdir -p "$work/out"
      start=$(date +%s.%N)
      if [ "$variant" = untraced ]; then
        "$program" "$mib" "$iterations" > /dev/null
      else
        MEMSTAGE_OUTPUT="$work/out" MEMSTAGE_MODE=stats LD_PRELOAD="$preload" "$program" "$mib" "$iterations" > /dev/null
      fi
      end=$(date +%s.%N)
      echo "$mib $variant $(echo "$end - $start" | bc)" >> "$work/times"
    done
  done
done
python3 - "$work/times" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    mib, variant, t = line.split()
    times.setdefault(int(mib), {}).setdefault(variant, []).append(float(t))
for mib, v in sorted(times.items()):
    u, s = statistics.median(v["untraced"]), statistics.median(v["stats"])
    print(f"resident {mib} MiB: untraced {u:.3f} s, stats {s:.3f} s, ratio {s / u:.3f}")
PY
