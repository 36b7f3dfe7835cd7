#!/usr/bin/env bash
# The main job: the reference trainer's naive and optimized pipelines traced side by
# side on real data, reports written to out/. Run scripts/setup.sh first (root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
memstage=build/bin/memstage
trainer=build/reference_trainer/memstage-trainer
data=../shared/data
mkdir -p out
rows=${MEMSTAGE_DEMO_ROWS:-2000}
if [ -x "$trainer" ] && [ -f "$data/debian_descriptions.train.csv.gz" ]; then
  for pipeline in naive optimized; do
    echo "== $pipeline pipeline, $rows rows of the Debian package descriptions"
    "$memstage" run -o "out/$pipeline" -- "$trainer" --pipeline "$pipeline" \
      --data "$data/debian_descriptions.train.csv.gz" --test "$data/debian_descriptions.test.csv" \
      --max-rows "$rows" --max-test-rows 1000 --epochs 2
  done
  echo
  echo "peak heap, naive vs optimized:"
  for pipeline in naive optimized; do
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"  {sys.argv[2]:<10} {r['totals']['peak_heap_bytes']/2**20:8.1f} MiB heap, {r['totals']['peak_rss_bytes']/2**20:8.1f} MiB RSS\")" "out/$pipeline/report.json" "$pipeline"
  done
else
  echo "== example program (the trainer or the data set is missing)"
  "$memstage" run -o out/example -- build/tests/e2e/programs/stages 2>/dev/null || \
    "$memstage" run -o out/example -- ls -la
fi
echo
echo "reports: $(ls -d out/*/report.html | tr '\n' ' ')"
