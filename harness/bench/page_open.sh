#!/usr/bin/env bash
# The HTML report's two big inputs, made again, and how fast each page opens and moves
# (page_open.mjs; figures in docs/performance.md):
#   harness/bench/page_open.sh [WORK_DIR] [ROUNDS]
# - long: memstage_long_stages (a stage per batch, 3,000 stage names, nested load/step)
#   for 75 s in aggregate mode, every 2 ms tick kept (MEMSTAGE_TIMELINE_TICKS=0): more
#   timeline ticks than an hour's at the default 10 ms (docs/architecture.md), and 75,000
#   stage instances in ~18,000 rows;
# - torch: torch_small.py in full mode: ~700,000 distinct stacks, whose call tree the
#   renderer prunes for the page (the figures say how many nodes the page received).
# Set REUSE=1 to measure pages already in WORK_DIR instead of running the programs again.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-/tmp/memstage-page-open}"
rounds="${2:-5}"
memstage="$root/build/bin/memstage"
mkdir -p "$work"
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$work/long" "$work/torch"
  MEMSTAGE_TIMELINE_TICKS=0 "$memstage" run -q --mode aggregate --sample-interval 2 -o "$work/long" -- \
    "$root/build/bench/memstage_long_stages" 75 3000
  "$memstage" run -q --mode full -o "$work/torch" -- /usr/bin/python3 "$root/harness/bench/torch_small.py"
else
  # The pages again from the traces, by the renderer built now.
  for page in long torch; do
    "$memstage" report -f html -o "$work/$page/report.html" "$work/$page"
  done
fi
for page in long torch; do
  node "$root/harness/bench/page_open.mjs" "$work/$page/report.html" "$rounds"
done
