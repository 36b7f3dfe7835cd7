#!/usr/bin/env bash
# The main job: the reference trainer's naive and optimized pipelines traced side by
# side, scaled, and compared across allocators; out/index.html links every report.
# Run scripts/setup.sh first (root). See harness/demo/demo.sh.
set -euo pipefail
exec "$(dirname "$0")/../harness/demo/demo.sh" "$@"
