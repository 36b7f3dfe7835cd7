#!/usr/bin/env bash
# Configures and builds memstage into build/ (RelWithDebInfo), every part included.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DMEMSTAGE_SKIP_PARTS="" >/dev/null
cmake --build build -j"$(nproc)"
