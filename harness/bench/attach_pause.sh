#!/usr/bin/env bash
# What `memstage attach` costs the process it visits: wall time of tests/e2e's
# attach_target (ROUNDS rounds of 20 ms) alone, then with `memstage attach PID --duration 1`
# in its middle, PAIRS times interleaved. gdb holds every thread while it is attached, so
# the difference is mostly its two visits.
# usage: harness/bench/attach_pause.sh [PAIRS] [ROUNDS]   (MEMSTAGE_BUILD: build folder, default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${MEMSTAGE_BUILD:-build}
pairs=${1:-3}
rounds=${2:-300}
program=$build/tests/e2e/programs/attach_target
memstage=$build/bin/memstage
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
for ((i = 1; i <= pairs; ++i)); do
  start=$(now)
  "$program" "$work/truth.json" "$work/ready" "$rounds" >/dev/null || true
  alone=$(echo "$(now) - $start" | bc)
  rm -f "$work/ready"
  start=$(now)
  "$program" "$work/truth.json" "$work/ready" "$rounds" >/dev/null &
  target=$!
  while [ ! -f "$work/ready" ]; do sleep 0.01; done
  attach_start=$(now)
  "$memstage" attach "$target" -q -o "$work/out" --duration 1
  attach_s=$(echo "$(now) - $attach_start" | bc)
  wait "$target" || true
  attached=$(echo "$(now) - $start" | bc)
  rm -f "$work/ready"
  printf 'pair %d: alone %.2f s, attached %.2f s (+%.2f s); memstage attach took %.2f s\n' \
    "$i" "$alone" "$attached" "$(echo "$attached - $alone" | bc)" "$attach_s"
done
