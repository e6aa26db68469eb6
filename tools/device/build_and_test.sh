#!/usr/bin/env bash
# On the GPU machine: unpacks the carried .deb files into a prefix, configures with CUDA on,
# builds, and runs every test, the GPU test binary included, then `gnnpipe doctor`.
# Usage (from the repository root): bash tools/device/build_and_test.sh [extra cmake args...]
# Env: PREFIX (default /tmp/gnnpipe-prefix), BUILD_DIR (default build-device), ARCHS (default 90),
#      OUT (the device tool's output folder; logs are copied there when set).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build-device}
# shellcheck source=tools/device/env.sh
source "$root/tools/device/env.sh"
log=${OUT:-/tmp}/build_and_test.log
device_build "$build_dir" "$@"
# Every step runs even when an earlier one fails; the summary says which failed.
set +e
(cd "$build_dir" && ctest --output-on-failure -j 8) 2>&1 | tee "$log"
ctest_rc=${PIPESTATUS[0]}
echo "== gnnpipe_gpu_tests" | tee -a "$log"
"$build_dir/tests/gnnpipe_gpu_tests" 2>&1 | tee -a "$log"
gpu_rc=${PIPESTATUS[0]}
echo "== gnnpipe doctor" | tee -a "$log"
"$build_dir/experiments/gnnpipe" doctor 2>&1 | tee -a "$log"
doctor_rc=${PIPESTATUS[0]}
echo "== summary: ctest exit $ctest_rc, gnnpipe_gpu_tests exit $gpu_rc (77 = no GPU), doctor exit $doctor_rc" | tee -a "$log"
[ "$ctest_rc" -eq 0 ] && [ "$gpu_rc" -eq 0 ] && [ "$doctor_rc" -eq 0 ]
