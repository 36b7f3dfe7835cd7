#!/usr/bin/env bash
# Two builds of memstage side by side on the same work, ROUNDS rounds with both run in each
# round (in turn, A first), so that a noisy machine slows both alike; prints each build's
# median wall time and the median of the per-round ratios B / A, with how many rounds B won
# (and for `report`, each build's median maximum RSS, /usr/bin/time's).
# A build is a folder laid out as build/ is (bin/memstage, lib/memstage/...): copy build/
# aside before a change to keep the "before".
#
#   ab_builds.sh run A B ROUNDS [RUN_FLAGS...] -- CMD [ARGS...]
#       `memstage run -q RUN_FLAGS -o TMP -- CMD ARGS`
#   ab_builds.sh report A B ROUNDS DIR
#       `memstage report DIR -f json`; also says whether both builds wrote the same JSON
#   ab_builds.sh preload A B ROUNDS MODE -- CMD [ARGS...]
#       CMD under the build's lib/memstage/libmemstage_preload.so alone, in MODE (full,
#       stats, aggregate, sample): what the traced program pays, without `memstage run`'s
#       reading of the trace beside it (which shares the cores)
#
# Example: cp -r build /tmp/before; (change, build); harness/bench/ab_builds.sh run /tmp/before build 11
#          --mode full -- build/bench/memstage_churn 2 7500000
set -euo pipefail
usage() {
  sed -n '2,16p' "$0" >&2
  exit 2
}
[ $# -ge 4 ] || usage
what=$1 a=$2 b=$3 rounds=$4
shift 4
for build in "$a" "$b"; do
  [ -x "$build/bin/memstage" ] || { echo "ab_builds.sh: no $build/bin/memstage" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case $what in
  run)
    flags=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
    [ $# -gt 1 ] || usage
    shift
    one() {
      local build=$1
      shift
      "$build/bin/memstage" run -q "${flags[@]}" -o "$work/out" -- "$@" > /dev/null 2>&1 || true
    }
    ;;
  report)
    [ $# -eq 1 ] || usage
    dir=$1
    one() { /usr/bin/time -f %M -o "$work/rss" "$1/bin/memstage" report "$dir" -f json -o "$work/$2.json"; }
    ;;
  preload)
    [ $# -gt 2 ] && [ "$2" = "--" ] || usage
    mode=$1
    shift 2
    one() {
      local build=$1
      shift
      mkdir -p "$work/out"
      MEMSTAGE_OUTPUT="$work/out" MEMSTAGE_MODE="$mode" LD_PRELOAD="$build/lib/memstage/libmemstage_preload.so" \
        "$@" > /dev/null 2>&1 || true
    }
    ;;
  *) usage ;;
esac

for r in $(seq "$rounds"); do
  for side in a b; do
    build=$a
    [ $side = b ] && build=$b
    rm -rf "$work/out"
    start=$(date +%s.%N)
    if [ "$what" = report ]; then one "$build" "$side"; else one "$build" "$@"; fi
    end=$(date +%s.%N)
    echo "$r $side $(echo "$end - $start" | bc) $(cat "$work/rss" 2>/dev/null || echo 0)" >> "$work/times"
  done
done
python3 - "$work/times" "$a" "$b" <<'PY'
import statistics, sys
times, rss_kib = {}, {}
for line in open(sys.argv[1]):
    r, side, t, rss = line.split()
    times.setdefault(r, {})[side] = float(t)
    rss_kib.setdefault(side, []).append(int(rss))
ratios = [t["b"] / t["a"] for t in times.values()]
print(f"A {sys.argv[2]}: median {statistics.median(t['a'] for t in times.values()):.3f} s")
print(f"B {sys.argv[3]}: median {statistics.median(t['b'] for t in times.values()):.3f} s")
if all(rss_kib["a"]) and all(rss_kib["b"]):
    print(f"max RSS: A median {statistics.median(rss_kib['a']) / 1024:.1f} MiB, B median {statistics.median(rss_kib['b']) / 1024:.1f} MiB")
print(f"B / A: median of per-round ratios {statistics.median(ratios):.3f}, B faster in {sum(x < 1 for x in ratios)} of {len(ratios)} rounds")
PY
if [ "$what" = report ]; then
  if cmp -s "$work/a.json" "$work/b.json"; then echo "the same JSON"; else echo "the JSON differs"; fi
fi
