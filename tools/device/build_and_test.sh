#!/usr/bin/env bash
# On the GPU machine: unpacks the carried .deb files into a prefix, configures with CUDA on,
# builds, and runs every test, the GPU test binary included, then `gnnpipe doctor`.
# Usage (from the repository root): bash tools/device/build_and_test.sh [extra cmake args...]
# Env: PREFIX (default /tmp/gnnpipe-prefix), BUILD_DIR (default build-device), ARCHS (default 90),
#      OUT (the device tool's output folder; logs are copied there when set).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${PREFIX:-/tmp/gnnpipe-prefix}
build_dir=${BUILD_DIR:-$root/build-device}
archs=${ARCHS:-90}

[ -d "$root/.deps/debs" ] || { echo "build_and_test: no .deps/debs: run tools/device/prepare.sh here first and carry .deps"; exit 1; }
mkdir -p "$prefix"
for deb in "$root"/.deps/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

log=${OUT:-/tmp}/build_and_test.log
{
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGNNPIPE_CUDA=ON \
    -DGNNPIPE_CUDA_ARCHS="$archs" -DCMAKE_PREFIX_PATH="$prefix/usr" "$@"
  cmake --build "$build_dir" -j "$(nproc)"
} 2>&1 | tee "$log.build" | grep -E "CMake Error|error:|FAILED|Build files" -A6 | head -60
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
