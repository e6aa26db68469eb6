# Sourced by the tools/device/ scripts on the GPU machine: unpacks the carried .deb files into a
# prefix, puts CUDA on PATH and the prefix's libraries on LD_LIBRARY_PATH, and defines
# device_build BUILD_DIR [cmake args...] (configure with CUDA on for $ARCHS, default 90, and build
# everything, or only the targets named in $BUILD_TARGETS (space-separated); the log goes to
# $OUT/build.log or /tmp/build.log).
root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
prefix=${PREFIX:-/tmp/gnnpipe-prefix}
archs=${ARCHS:-90}
[ -d "$root/.deps/debs" ] || { echo "device: no .deps/debs: run tools/device/prepare.sh here first and carry .deps"; exit 1; }
mkdir -p "$prefix"
for deb in "$root"/.deps/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
# NCCL (data-parallel ranks on GPUs; loaded at run time): the machine's PyTorch install carries
# libnccl.so.2 under site-packages/nvidia/nccl/lib when the toolkit has none.
if ! ls /usr/local/cuda/lib64/libnccl.so* >/dev/null 2>&1; then
  nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  [ -n "$nccl_lib" ] && [ -d "$nccl_lib" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl_lib
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

device_build() {
  local dir=$1
  shift
  local log=${OUT:-/tmp}/build.log
  local targets=() target
  for target in ${BUILD_TARGETS:-}; do targets+=(--target "$target"); done
  {
    cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGNNPIPE_CUDA=ON \
      -DGNNPIPE_CUDA_ARCHS="$archs" -DCMAKE_PREFIX_PATH="$prefix/usr" "$@" &&
      cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
  } > "$log" 2>&1
  local rc=$?
  grep -E "CMake Error|error:|FAILED" -A6 "$log" | head -60
  return $rc
}
