#!/usr/bin/env bash
# A service traced for days, shown in minutes: leaky_service (tests/serve: 64 KiB leaked every
# 20 ms, 3.2 MB/s; it stops itself after 120 s) and memstage_steady_service (a level heap
# that churns, harness/bench/steady_service.cpp) under `memstage run --mode sample --serve`
# with a tick every TICK_MS (1: ten times the default's ticks, an hour's timeline in 6
# minutes). Every INTERVAL_S, memstage_refresh_cost beside each: the capture's bytes and
# what it grew by, a refresh of the run so far from the traces' followers (the endpoint's
# source) and a whole analysis of the traces (its source before), in ms, the tracer's own
# resident bytes, memstage's and the program's RSS. `MEMSTAGE_TIMELINE_TICKS=0` in the
# environment keeps every tick (the capture before the timeline aged in sample mode). Each
# capture's records per kind at its end (memstage_trace_kinds).
# Usage: [MEMSTAGE_BUILD=build] harness/bench/serve_days.sh [STEADY_S [INTERVAL_S [TICK_MS]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
steady_s=${1:-240}
interval_s=${2:-15}
tick_ms=${3:-1}
build=${MEMSTAGE_BUILD:-build}
bin=$build/bin/memstage
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# measure NAME SECONDS CMD...: CMD under memstage (its endpoint on a port of its own),
# measured every interval until it ends, the lines prefixed with NAME.
measure() {
  local name=$1 seconds=$2
  shift 2
  "$bin" run -q --mode sample --sample-interval "$tick_ms" --serve 127.0.0.1:0 -o "$work/$name" -- "$@" > /dev/null &
  local memstage_pid=$!
  local program_pid=""
  while [ -z "$program_pid" ]; do
    sleep 0.1
    program_pid=$(pgrep -P "$memstage_pid" | head -n1 || true)
  done
  local count
  count=$(awk -v s="$seconds" -v i="$interval_s" 'BEGIN { print int(s / i) }')
  "$build/bench/memstage_refresh_cost" "$work/$name" "$interval_s" "$count" "$memstage_pid" "$program_pid" |
    awk -v name="$name" 'NR == 1 { print name, $0, "grew_bytes"; next }
                         { print name, $0, $2 - last; last = $2 }'
  wait "$memstage_pid"
  "$build/bench/memstage_trace_kinds" "$work/$name"/trace.*.mst | sed "s/^/$name /"
}

touch "$work/go"
measure leaky_service 120 "$build/tests/serve/programs/leaky_service" "$work/ready" "$work/go" "$work/stop" "$work/rate" &
measure steady_service "$steady_s" "$build/bench/memstage_steady_service" "$steady_s" &
wait
