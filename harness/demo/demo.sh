#!/usr/bin/env bash
# The main job, end to end (README's first command, after scripts/setup.sh):
#  1. builds memstage and the reference trainer;
#  2. builds a real corpus from this machine's apt package descriptions;
#  3. traces the trainer's naive and optimized pipelines side by side;
#  4. `memstage scale` on the naive pipeline at small sizes: where does it pass 16 GiB?
#  5. compares glibc, jemalloc, tcmalloc and mimalloc on the optimized pipeline;
#  6. traces the Python pipeline (scikit-learn, torch; examples/python_pipeline), naive
#     vs streaming, with Python frames (docs/python.md);
#  7. traces examples/several_models: three torch models, each fp32 and int8, inference with
#     and without no_grad, pruning, the del/gc.collect cleanup (docs/models.md);
#  8. writes out/index.html linking every report, and prints a one-screen summary.
# Data: the Debian descriptions of ../shared/data when present (long descriptions),
# else the corpus built in step 2.
# Settings (environment): MEMSTAGE_DEMO_OUT (out), MEMSTAGE_DEMO_ROWS (2000, side by
# side), MEMSTAGE_DEMO_SCALE_SIZES (500,1000,2000,4000), MEMSTAGE_DEMO_ALLOCATOR_ROWS (10000),
# MEMSTAGE_DEMO_PYTHON_ROWS (3000), MEMSTAGE_DEMO_MODELS (1; 0 skips step 7), MEMSTAGE_DEMO_BUILD (build folder, build),
# MEMSTAGE_DEMO_SKIP_BUILD=1 (use it as is).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${MEMSTAGE_DEMO_OUT:-out}
rows=${MEMSTAGE_DEMO_ROWS:-2000}
scale_sizes=${MEMSTAGE_DEMO_SCALE_SIZES:-500,1000,2000,4000}
allocator_rows=${MEMSTAGE_DEMO_ALLOCATOR_ROWS:-10000}
python_rows=${MEMSTAGE_DEMO_PYTHON_ROWS:-3000}
build=${MEMSTAGE_DEMO_BUILD:-build}

step() { printf '\n== %s\n' "$*"; }

if [ "${MEMSTAGE_DEMO_SKIP_BUILD:-0}" != 1 ]; then
  step "build (memstage, tracer, trainer)"
  cmake -S . -B "$build" -G Ninja -DMEMSTAGE_SKIP_PARTS="" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target memstage memstage_preload memstage-trainer memstage-corpus-gen | tail -n 1
fi
memstage=$(realpath "$build/bin/memstage")
trainer=$(realpath "$build/reference_trainer/memstage-trainer")
rm -rf "$out" && mkdir -p "$out"

step "corpus from this machine's apt package descriptions"
python3 reference_trainer/scripts/debian_corpus.py --out "$out/corpus"
if [ -f ../shared/data/debian_descriptions.train.csv.gz ]; then
  train=$(realpath ../shared/data/debian_descriptions.train.csv.gz)
  echo "using the shared Debian descriptions set (with long descriptions)"
else
  train=$(realpath "$out/corpus/debian_local.train.csv")
fi
# A tenth of the rows held out for testing: a small slice of the training file may
# lack labels that a separate test file has.
common="--data $train --split 0.1 --epochs 2"

step "naive vs optimized, $rows rows, traced side by side"
"$memstage" compare -o "$out/pipelines" --repeat 1 \
  --variant "naive=$trainer --pipeline naive $common --max-rows $rows" \
  --variant "optimized=$trainer --pipeline optimized $common --max-rows $rows"

step "scale: the naive pipeline at $scale_sizes rows; where does it pass 16 GiB?"
"$memstage" scale -o "$out/scale" --sizes "$scale_sizes" --ram 16GiB --flat train,evaluate -- \
  "$trainer" --pipeline naive --data "$train" --split 0.1 --epochs 1 --max-rows '{n}'

step "allocators on the optimized pipeline"
"$memstage" compare -o "$out/allocators" --repeat 1 --allocators glibc,jemalloc,tcmalloc,mimalloc -- \
  "$trainer" --pipeline optimized --data "$train" --split 0.1 --epochs 1 --max-rows "$allocator_rows"

step "the Python pipeline (scikit-learn, torch), naive vs streaming, $python_rows rows"
if /usr/bin/python3 -c "import sklearn" 2>/dev/null; then
  python_common="--data $train --rows $python_rows --epochs 1"
  "$memstage" compare -o "$out/python" --repeat 1 \
    --variant "naive=/usr/bin/python3 examples/python_pipeline/train_naive.py $python_common" \
    --variant "streaming=/usr/bin/python3 examples/python_pipeline/train_streaming.py $python_common"
else
  echo "skipped: /usr/bin/python3 has no scikit-learn (scripts/setup.sh installs it)"
fi

step "several torch models in one process: fp32, int8, no_grad, pruning, cleanup"
if [ "${MEMSTAGE_DEMO_MODELS:-1}" = 1 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  "$memstage" run -q -o "$out/models" -- /usr/bin/python3 examples/several_models/several_models.py \
    --figures-out "$out/models/figures.json"
else
  echo "skipped: MEMSTAGE_DEMO_MODELS=0, or /usr/bin/python3 has no torch (scripts/setup.sh installs it)"
fi

step "summary"
python3 harness/demo/index_page.py "$out"
