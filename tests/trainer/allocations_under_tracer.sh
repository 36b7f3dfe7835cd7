#!/usr/bin/env bash
# Under the tracer: the optimized pipeline's `train` stage makes as many allocations for
# 4 epochs (152 batches) as for 1 epoch (38 batches): nothing is allocated per batch once
# the buffers are warm. Reads stages[].allocations from `memstage run`'s report.json.
#
# usage: allocations_under_tracer.sh MEMSTAGE TRAINER DATA_DIR
# Exits 77 (CTest skip) when MEMSTAGE is empty or not built.
set -euo pipefail
memstage=$1
trainer=$2
data=$3

if [ -z "$memstage" ] || [ ! -x "$memstage" ]; then
  echo "SKIP: the memstage command is not built (${memstage:-no target})"
  exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

train_allocations() {
  local epochs=$1 out="$work/epochs$1"
  if ! "$memstage" run -q -o "$out" -- "$trainer" --pipeline optimized \
      --data "$data/spam_assassin.train.csv.gz" --test "$data/spam_assassin.test.csv.gz" \
      --max-rows 600 --max-test-rows 100 --batch 16 --hidden 8 --epochs "$epochs" --quiet \
      >"$out.log" 2>&1; then
    echo "FAIL: memstage run failed for $epochs epoch(s):" >&2
    cat "$out.log" >&2
    exit 1
  fi
  python3 - "$out/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
train = [s for s in report["stages"] if s["name"] == "train"]
if len(train) != 1:
    sys.exit(f"FAIL: expected one 'train' stage in {sys.argv[1]}, found {len(train)}")
print(train[0]["allocations"])
PY
}

one=$(train_allocations 1)
four=$(train_allocations 4)
echo "train stage allocations: 1 epoch (38 batches) $one, 4 epochs (152 batches) $four"
if [ "$four" -gt "$one" ]; then
  echo "FAIL: the train stage's allocations grow with the number of batches" >&2
  exit 1
fi
echo "PASS"
