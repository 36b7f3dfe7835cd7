#!/usr/bin/env bash
# One mode of a build against another mode of another build, on the same work: the command
# untraced and under `memstage run --mode M` of build A (a baseline: the commit an issue
# measured its targets on, say) and of build B, every variant once a round in the order
# given, ROUNDS rounds, so that a noisy machine slows all alike. Prints each variant's
# median wall time and its median per-round ratio to the untraced run, then each of B's
# variants against each of A's: the median of per-round ratios, and in how many rounds B's
# was faster. For a target set as a ratio to the untraced run on another machine, B's mode
# against A's on this one says whether it holds where the baseline ran as the issue says.
# Memory too, medians: max RSS (/usr/bin/time's %M: for a traced run the larger of the
# program and memstage's own analysis), and of a traced run its report's peak RSS of the
# program and the tracer's share of it (totals.peak_rss_bytes, totals.tracer_peak_bytes).
#
#   ab_modes.sh A B ROUNDS "VARIANT ..." -- CMD [ARGS...]
#       VARIANT: untraced, A:MODE or B:MODE (full, stats, aggregate, sample)
#
# Example: git worktree add /tmp/base 4a12bbe
#          cmake -S /tmp/base -B /tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
#          ninja -C /tmp/base/build memstage memstage_preload
#          harness/bench/ab_modes.sh /tmp/base/build build 21 "untraced A:stats B:stats B:sample" \
#            -- build/bench/memstage_churn 2 7500000
set -euo pipefail
usage() {
  sed -n '2,18p' "$0" >&2
  exit 2
}
[ $# -ge 6 ] && [ "$5" = "--" ] || usage
a=$1 b=$2 rounds=$3 variants=$4
shift 5
for build in "$a" "$b"; do
  [ -x "$build/bin/memstage" ] || { echo "ab_modes.sh: no $build/bin/memstage" >&2; exit 2; }
done
case $rounds in '' | *[!0-9]*) echo "ab_modes.sh: ROUNDS must be a number: $rounds" >&2; exit 2 ;; esac
for v in $variants; do
  case $v in
    untraced | [AB]:full | [AB]:stats | [AB]:aggregate | [AB]:sample) ;;
    *) echo "ab_modes.sh: unknown variant $v (untraced, A:MODE or B:MODE)" >&2; exit 2 ;;
  esac
done
case " $variants " in *" untraced "*) ;; *) echo "ab_modes.sh: the variants need untraced (the ratios' base)" >&2; exit 2 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for r in $(seq "$rounds"); do
  for v in $variants; do
    rm -rf "$work/out"
    timed=(/usr/bin/time -f %M -o "$work/max_rss_kib")
    start=$(date +%s.%N)
    case $v in
      untraced) "${timed[@]}" "$@" > /dev/null 2>&1 || true ;;
      A:*) "${timed[@]}" "$a/bin/memstage" run -q --mode "${v#A:}" -o "$work/out" -- "$@" > /dev/null 2>&1 || true ;;
      B:*) "${timed[@]}" "$b/bin/memstage" run -q --mode "${v#B:}" -o "$work/out" -- "$@" > /dev/null 2>&1 || true ;;
    esac
    end=$(date +%s.%N)
    report=$(python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t.get("peak_rss_bytes") or 0, t.get("tracer_peak_bytes") or 0)' "$work/out/report.json" 2> /dev/null || echo "0 0")
    echo "$r $v $(echo "$end - $start" | bc) $(tail -1 "$work/max_rss_kib") $report" >> "$work/times"
  done
done
python3 - "$work/times" "$a" "$b" <<'PY'
import statistics, sys
times, memory = {}, {}
for line in open(sys.argv[1]):
    r, v, t, max_rss_kib, peak_rss, tracer = line.split()
    times.setdefault(v, {})[r] = float(t)
    memory.setdefault(v, []).append((int(max_rss_kib) / 1024, int(peak_rss) / 2**20, int(tracer) / 2**20))
rounds = sorted(times["untraced"])
print(f"A: {sys.argv[2]}   B: {sys.argv[3]}   ({len(rounds)} rounds)")
for v, t in times.items():
    ratio = statistics.median(t[r] / times["untraced"][r] for r in rounds)
    print(f"  {v:<12} median {statistics.median(t.values()):.3f} s   {ratio:.3f} x untraced")
for v, m in memory.items():
    line = f"  {v:<12} max RSS median {statistics.median(x[0] for x in m):.1f} MiB"
    if v != "untraced":
        line += (f"   program's peak RSS {statistics.median(x[1] for x in m):.1f} MiB,"
                 f" tracer's {statistics.median(x[2] for x in m):.1f} MiB")
    print(line)
for va in (v for v in times if v.startswith("A:")):
    for vb in (v for v in times if v.startswith("B:")):
        ratios = [times[vb][r] / times[va][r] for r in rounds]
        print(f"  {vb} / {va}: {statistics.median(ratios):.3f}, B faster in {sum(x < 1 for x in ratios)} of {len(ratios)} rounds")
PY
