#!/usr/bin/env bash
# Configures and builds gnnpipe. Shared by test.sh and demo.sh.
# Usage: build.sh BUILD_DIR BUILD_TYPE [extra cmake args...]
# The CUDA backend is compiled whenever nvcc is found (GNNPIPE_CUDA=AUTO; /usr/local/cuda/bin is
# searched even when it is not on PATH), so CUDA compile errors show up on machines without a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$1 build_type=$2
shift 2

# shellcheck source=tools/ccache_env.sh
source "$root/tools/ccache_env.sh"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DGNNPIPE_CUDA="${GNNPIPE_CUDA:-AUTO}" \
  "${ccache_launchers[@]}" "$@"
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build "$build_dir" -j "$jobs"

cu_objects=$(find "$build_dir" -name '*.cu.o' | wc -l)
if grep -q '^GNNPIPE_WITH_CUDA:INTERNAL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null || [ "$cu_objects" -gt 0 ]; then
  echo "build: CUDA backend compiled ($cu_objects CUDA object files)"
else
  echo "build: CUDA backend not compiled (no nvcc found)"
fi
