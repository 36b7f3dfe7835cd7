#!/usr/bin/env bash
# The sanitized half of the suite: builds the libraries, the Catch2 unit tests and the fuzz
# targets with clang, ASan and UBSan into build-asan (ccache keeps rebuilds cheap), then
# runs the unit tests there and each fuzz target for a bounded time (tests/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSTAGE_SANITIZE=ON -DMEMSTAGE_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
cmake --build build-asan --target sanitized_all -j"$(nproc)"
ctest --test-dir build-asan -L sanitized --output-on-failure -j2 --timeout 300
