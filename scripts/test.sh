#!/usr/bin/env bash
# Builds memstage and runs the whole test suite (unit, end-to-end, browser) with CTest,
# then the sanitized half: the unit tests under ASan + UBSan and the fuzz targets
# (scripts/test_sanitized.sh, in build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 600
scripts/test_sanitized.sh
