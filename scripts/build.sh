#!/usr/bin/env bash
# Configures and builds memstage into build/ (RelWithDebInfo), every part included.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache, where installed, makes rebuilds in fresh clones and worktrees cheap.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DMEMSTAGE_SKIP_PARTS="" "${launcher[@]}" >/dev/null
cmake --build build -j"$(nproc)"
