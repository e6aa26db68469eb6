#!/usr/bin/env bash
# Sets up, builds (warnings as errors; the CUDA code too when nvcc is present) and runs every test.
# Usage: tools/test.sh [extra cmake args...]   BUILD_DIR overrides the build folder (default build/).
# Tests that need ../shared/datasets skip with a message when it is absent; the GPU test binary
# reports "skipped" without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

bash "$root/tools/setup.sh"
bash "$root/tools/build.sh" "$build_dir" RelWithDebInfo -DGNNPIPE_WERROR=ON "$@"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
