#!/usr/bin/env bash
# The device check, run ON the GPU machine (docs/gpu.md): memstage's device figures
# against what CUDA and PyTorch say, on a real GPU. Prepared here by
# prepare_device_check.sh (build-gpu/ is carried there). Needs nvcc, python3 with a CUDA
# torch; writes everything to $OUT (or /tmp/device_check) and prints one line per check.
# Exit 0 when every check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/device_check}
mkdir -p "$out"
root=$PWD
export LD_LIBRARY_PATH="$root/build-gpu/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
memstage=$root/build-gpu/bin/memstage
status=0
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAIL  $*"; status=1; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || fail "nvidia-smi"
"$memstage" --help >/dev/null 2>&1 || { fail "memstage does not start here (missing library?)"; ldd "$memstage"; exit 1; }
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"

# A CUDA C++ program, its runtime linked statically (nvcc's default: memstage sees the
# driver, through dlsym + cuGetProcAddress) and dynamically (cudaMalloc itself).
for cudart in static shared; do
  step "CUDA C++, cudart $cudart"
  exe=$out/cuda_stages_$cudart
  if ! nvcc -O2 -cudart "$cudart" -I profiler/include tests/gpu/cuda_stages.cu -o "$exe" -lcuda; then
    fail "nvcc ($cudart)"
    continue
  fi
  if "$memstage" run -q -o "$out/cuda_$cudart" -- "$exe" "$out/cuda_${cudart}_expected.json"; then
    python3 tests/gpu/compare_device.py cuda "$out/cuda_$cudart/report.json" "$out/cuda_${cudart}_expected.json" || status=1
    "$memstage" report "$out/cuda_$cudart" --format text > "$out/cuda_$cudart/report.txt"
  else
    fail "memstage run cuda_stages ($cudart)"
  fi
done

step "PyTorch"
if PYTHONPATH="$root/profiler/python" "$memstage" run -q -o "$out/torch" -- \
    python3 tests/gpu/torch_stages.py "$out/torch_expected.json"; then
  python3 tests/gpu/compare_device.py torch "$out/torch/report.json" "$out/torch_expected.json" || status=1
  "$memstage" report "$out/torch" --format text > "$out/torch/report.txt"
  sed -n '/device memory by stage/,/^$/p' "$out/torch/report.txt"
else
  fail "memstage run torch_stages"
fi
rm -f "$out"/cuda_stages_*  # binaries: not needed back
echo
[ "$status" = 0 ] && echo "device check: ok" || echo "device check: FAILED"
exit "$status"
