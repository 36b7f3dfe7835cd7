#!/usr/bin/env bash
# Two builds of memstage side by side on the same work, ROUNDS rounds with both run in each
# round (in turn, A first), so that a noisy machine slows both alike; prints each build's
# median wall time and CPU time (user and system, its children's included) and the medians
# of the per-round ratios B / A, with how many rounds B won (and for `report`, each build's
# median maximum RSS, /usr/bin/time's). On a shared machine the CPU time's ratio is the
# steadier one: a slow phase of the host stretches the wall time more.
# A build is a folder laid out as build/ is (bin/memstage, lib/memstage/...): copy build/
# aside before a change to keep the "before".
#
#   ab_builds.sh run A B ROUNDS [RUN_FLAGS...] -- CMD [ARGS...]
#       `memstage run -q RUN_FLAGS -o TMP -- CMD ARGS`
#   ab_builds.sh report A B ROUNDS DIR
#       `memstage report DIR -f json`; also says whether both builds wrote the same JSON
#   ab_builds.sh preload A B ROUNDS MODE -- CMD [ARGS...]
#       CMD under the build's lib/memstage/libmemstage_preload.so alone, in MODE (full,
#       stats, aggregate, sample), its Python bootstrap on PYTHONPATH as `memstage run`
#       puts it: what the traced program pays, without `memstage run`'s reading of the
#       trace beside it (which shares the cores)
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
      PYTHONPATH="$build/lib/memstage/python${PYTHONPATH:+:$PYTHONPATH}" MEMSTAGE_OUTPUT="$work/out" \
        MEMSTAGE_MODE="$mode" LD_PRELOAD="$build/lib/memstage/libmemstage_preload.so" "$@" > /dev/null 2>&1 || true
    }
    ;;
  *) usage ;;
esac

# Bash's `time`: the wall, user and system seconds of `one`, its children's included.
TIMEFORMAT='%R %U %S'
for r in $(seq "$rounds"); do
  for side in a b; do
    build=$a
    [ $side = b ] && build=$b
    rm -rf "$work/out"
    if [ "$what" = report ]; then
      { time one "$build" "$side" 2> /dev/null; } 2> "$work/usage"
    else
      { time one "$build" "$@"; } 2> "$work/usage"
    fi
    echo "$r $side $(tail -1 "$work/usage") $(cat "$work/rss" 2>/dev/null || echo 0)" >> "$work/times"
  done
done
python3 - "$work/times" "$a" "$b" <<'PY'
import statistics, sys
wall, cpu, rss_kib = {}, {}, {}
for line in open(sys.argv[1]):
    r, side, t, user, system, rss = line.split()
    wall.setdefault(r, {})[side] = float(t)
    cpu.setdefault(r, {})[side] = float(user) + float(system)
    rss_kib.setdefault(side, []).append(int(rss))
for side, build in (("a", sys.argv[2]), ("b", sys.argv[3])):
    print(f"{side.upper()} {build}: median {statistics.median(t[side] for t in wall.values()):.3f} s, "
          f"CPU {statistics.median(t[side] for t in cpu.values()):.3f} s")
if all(rss_kib["a"]) and all(rss_kib["b"]):
    print(f"max RSS: A median {statistics.median(rss_kib['a']) / 1024:.1f} MiB, B median {statistics.median(rss_kib['b']) / 1024:.1f} MiB")
for name, times in (("wall", wall), ("CPU", cpu)):
    ratios = [t["b"] / t["a"] for t in times.values()]
    print(f"B / A, {name}: median of per-round ratios {statistics.median(ratios):.3f}, B lower in {sum(x < 1 for x in ratios)} of {len(ratios)} rounds")
PY
if [ "$what" = report ]; then
  if cmp -s "$work/a.json" "$work/b.json"; then echo "the same JSON"; else echo "the JSON differs"; fi
fi
