#!/usr/bin/env bash
# On the dev machine: copies the GPU-relevant binaries of a CUDA build made here (Release, CUDA on,
# e.g. GNNPIPE_CUDA_ARCHS=90) into the git-ignored .deps/bin, stripped, so that a device call that
# carries `.deps` runs them without building there (a device build costs device time on every
# fresh machine; binaries built on Debian 12 run on the GPU machine's Ubuntu 24.04 with the carried
# libraries). gpu_acceptance.sh uses .deps/bin when it exists (PREBUILT=0 forces a build there).
# Usage: bash tools/device/bundle.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: bundle.sh BUILD_DIR}
[ -n "$(find "$build" -name '*.cu.o' -print -quit 2>/dev/null)" ] ||
  { echo "bundle: $build is not a CUDA build (configure with -DGNNPIPE_CUDA=ON)"; exit 1; }
bin=$root/.deps/bin
rm -rf "$bin"
mkdir -p "$bin"
for target in experiments/gnnpipe tests/gnnpipe_gpu_tests tests/gnnpipe_gpu_fault_test tools/bench/gnnpipe_bench_gpu; do
  [ -x "$build/$target" ] || { echo "bundle: $build/$target is missing (build it first)"; exit 1; }
  strip -o "$bin/$(basename "$target")" "$build/$target"
done
git -C "$root" rev-parse --short HEAD > "$bin/COMMIT"
git -C "$root" diff --quiet || echo "dirty" >> "$bin/COMMIT"
du -sh "$bin"
