#!/usr/bin/env bash
# The device check, run ON the GPU machine (docs/gpu.md): memstage's device figures
# against what CUDA and PyTorch say, on a real GPU, in full and stats mode. Prepared here
# by prepare_device_check.sh (build-gpu/ is carried there). Needs nvcc, python3 with a
# CUDA torch. Prints one line per check and leaves the reports, as one archive, in $OUT
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

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || fail "nvidia-smi"
# Only the libraries this machine lacks come from build-gpu/deps: its own (newer) libstdc++,
# zlib or zstd stay what python3 and torch load.
mkdir -p "$work/deps"
for binary in "$memstage" "$root/build-gpu/lib/memstage/libmemstage_preload.so"; do
  ldd "$binary" | awk '/not found/ { print $1 }'
done | sort -u | while read -r soname; do
  if [ -e "$root/build-gpu/deps/$soname" ]; then ln -sf "$root/build-gpu/deps/$soname" "$work/deps/"; else echo "missing here and not carried: $soname"; fi
done
export LD_LIBRARY_PATH="$work/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
    run=$work/cuda_${cudart}_$mode
    if bounded 120 "$memstage" run -q --mode "$mode" -o "$run" -- "$exe" "$run.expected.json"; then
      python3 tests/gpu/compare_device.py cuda "$run/report.json" "$run.expected.json" || status=1
      bounded 60 "$memstage" report "$run" --format text > "$run/report.txt" 2>&1
    else
      fail "memstage run --mode $mode cuda_stages ($cudart)"
    fi
  done
  sed -n '/device memory by stage/,/^$/p' "$work/cuda_${cudart}_full/report.txt"
done

step "PyTorch"
export PYTHONPATH="$root/profiler/python"
start=$SECONDS
bounded 120 python3 tests/gpu/torch_stages.py "$work/torch_untraced.expected.json" > /dev/null
echo "untraced: $((SECONDS - start)) s"
for mode in full stats; do
  run=$work/torch_$mode
  start=$SECONDS
  if bounded 240 "$memstage" run -q --mode "$mode" -o "$run" -- python3 tests/gpu/torch_stages.py "$run.expected.json"; then
    echo "memstage run --mode $mode: $((SECONDS - start)) s"
    python3 tests/gpu/compare_device.py torch "$run/report.json" "$run.expected.json" || status=1
    bounded 120 "$memstage" report "$run" --format text > "$run/report.txt" 2>&1
  else
    fail "memstage run --mode $mode torch_stages"
  fi
done
sed -n '/device memory by stage/,/^$/p' "$work/torch_full/report.txt"
sed -n '/stacks at the device peak/,/^$/p' "$work/torch_full/report.txt" | head -40

step "archive"
# Reports, not traces (the traces are large and stay here); one file, as $OUT takes few.
(cd "$work" && find . -name '*.json' -o -name '*.txt' -o -name '*.html' | tar czf "$out/device_check.tar.gz" -T -)
ls -l "$out"
echo
[ "$status" = 0 ] && echo "device check: ok" || echo "device check: FAILED"
exit "$status"
