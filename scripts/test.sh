#!/usr/bin/env bash
# Builds memstage and runs the whole test suite (unit, end-to-end, browser) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 600
