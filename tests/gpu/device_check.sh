#!/usr/bin/env bash
# The device check, run ON the GPU machine (docs/gpu.md): memstage's device figures
# against what CUDA and PyTorch say, on a real GPU, in full and stats mode. Prepared here
# by prepare_device_check.sh (build-gpu/ is carried there). Needs nvcc, python3 with a
# CUDA torch. DEVICE_CHECK_TRAIN_ROUNDS: rounds of the timed training job (default 3, 0: none).
# Prints one line per check and leaves the reports, as one archive, in $OUT
# (or /tmp/device_check). Exit 0 when every check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/device_check}
work=/tmp/device_check_work
rm -rf "$work"
mkdir -p "$out" "$work"
root=$PWD
memstage=$root/build-gpu/bin/memstage
status=0
step() { printf '\n== %s (%s s)\n' "$*" "$SECONDS"; }
fail() { echo "FAIL  $*"; status=1; }
# Each step is bounded, so one that hangs leaves time for the rest.
bounded() { timeout --kill-after=10 "$@"; }
# traced_check KIND MODE RUN LIMIT_S CMD...: runs CMD (which writes what it measured itself
# to its last argument, RUN.expected.json) under memstage in MODE into RUN, compares the
# device figures (compare_device.py KIND: cuda or torch) and writes the text report.
traced_check() {
  local kind=$1 mode=$2 run=$3 limit=$4 start=$SECONDS
  shift 4
  if bounded "$limit" "$memstage" run -q --mode "$mode" -o "$run" -- "$@" "$run.expected.json"; then
    echo "memstage run --mode $mode $(basename "$1"): $((SECONDS - start)) s"
    python3 tests/gpu/compare_device.py "$kind" "$run/report.json" "$run.expected.json" || status=1
    bounded 120 "$memstage" report "$run" --format text > "$run/report.txt" 2>&1
  else
    fail "memstage run --mode $mode $*"
  fi
}

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || fail "nvidia-smi"
# Only the libraries this machine lacks come from build-gpu/deps: its own (newer) libstdc++,
# zlib or zstd stay what python3 and torch load.
mkdir -p "$work/deps"
export LD_LIBRARY_PATH="$work/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for round in 1 2 3 4 5; do  # a library found can name others that are missing: again
  ldd "$memstage" "$root/build-gpu/lib/memstage/libmemstage_preload.so" | awk '/not found/ { print $1 }' | sort -u |
    while read -r soname; do
      if [ -e "$root/build-gpu/deps/$soname" ]; then ln -sf "$root/build-gpu/deps/$soname" "$work/deps/"; else echo "missing here and not carried: $soname"; fi
    done
done
echo "taken from build-gpu/deps: $(ls "$work/deps" | tr '\n' ' ')"
"$memstage" --version || { fail "memstage does not start here"; ldd "$memstage"; exit 1; }
ldd "$root/build-gpu/lib/memstage/libmemstage_preload.so" | grep -q "not found" && fail "the preload library misses a library"
python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"

# A CUDA C++ program, its runtime linked statically (nvcc's default: memstage sees the
# driver, through dlsym + cuGetProcAddress) and dynamically (cudaMalloc itself).
for cudart in static shared; do
  step "CUDA C++, cudart $cudart"
  exe=$work/cuda_stages_$cudart
  if ! bounded 120 nvcc -O2 -cudart "$cudart" -I profiler/include tests/gpu/cuda_stages.cu -o "$exe" -lcuda; then
    fail "nvcc ($cudart)"
    continue
  fi
  for mode in full stats; do
    traced_check cuda "$mode" "$work/cuda_${cudart}_$mode" 120 "$exe"
  done
  sed -n '/device memory by stage/,/^$/p' "$work/cuda_${cudart}_full/report.txt"
done

step "PyTorch"
export PYTHONPATH="$root/profiler/python"
start=$SECONDS
bounded 120 python3 tests/gpu/torch_stages.py "$work/torch_untraced.expected.json" > /dev/null
echo "untraced: $((SECONDS - start)) s"
for mode in full stats; do
  traced_check torch "$mode" "$work/torch_$mode" 240 python3 tests/gpu/torch_stages.py
done
sed -n '/device memory by stage/,/^$/p' "$work/torch_full/report.txt"
sed -n '/device memory held at the device peak/,/^$/p' "$work/torch_full/report.txt" | head -40

step "PyTorch training job: memstage's cost on a GPU program"
# Interleaved rounds; wall seconds of the whole process. The loss must be the same traced.
for round in $(seq "${DEVICE_CHECK_TRAIN_ROUNDS:-3}"); do  # 0: no training job
  for variant in untraced full stats; do
    start=$EPOCHREALTIME
    if [ "$variant" = untraced ]; then
      bounded 120 python3 tests/gpu/torch_train.py "$work/train_untraced.expected.json" > "$work/train_untraced.log" 2>&1
    else
      bounded 240 "$memstage" run -q --mode "$variant" -o "$work/train_$variant" -- \
        python3 tests/gpu/torch_train.py "$work/train_$variant.expected.json" > "$work/train_$variant.log" 2>&1
    fi
    echo "round $round $variant: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s, $(grep -o 'loss [0-9.]*' "$work/train_$variant.log")"
  done
done
[ -f "$work/train_full/report.json" ] && python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
report = json.load(open(work + "/train_full/report.json"))
torch_figures = json.load(open(work + "/train_full.expected.json"))
for stage in report["stages"]:
    want = torch_figures.get(stage["path"], {})
    print("train %s: memstage device peak %d, torch max_reserved %s, max_allocated %s"
          % (stage["path"], stage.get("peak_device_bytes") or 0, want.get("max_reserved_bytes"), want.get("max_allocated_bytes")))
PY

step "archive"
# Reports, not traces (the traces are large and stay here); one file, as $OUT takes few.
(cd "$work" && find . -name '*.json' -o -name '*.txt' -o -name '*.log' | tar czf "$out/device_check.tar.gz" -T -)
ls -l "$out"
echo
[ "$status" = 0 ] && echo "device check: ok" || echo "device check: FAILED"
exit "$status"
