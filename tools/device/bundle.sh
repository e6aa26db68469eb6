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
for target in experiments/gnnpipe tests/gnnpipe_gpu_tests tests/gnnpipe_gpu_fault_test tools/bench/gnnpipe_bench_gpu \
  tools/bench/gnnpipe_bench_sampler; do
  [ -x "$build/$target" ] || { echo "bundle: $build/$target is missing (build it first)"; exit 1; }
  strip -o "$bin/$(basename "$target")" "$build/$target"
done
# Every library the binaries name (DT_NEEDED) must be on the GPU machine: in the carried packages
# (tools/device/packages.txt), in CUDA's toolkit, or the C and C++ runtime and zlib every Linux has. A build
# that links libmatio (and so HDF5 and curl) would fail there at its first start.
if [ -d "$root/.deps/debs" ]; then
  provided=$(for deb in "$root"/.deps/debs/*.deb; do dpkg-deb -c "$deb"; done | awk '{print $6}' | xargs -n1 basename | sort -u)
  missing=()
  for lib in $(for b in "$bin"/gnnpipe*; do readelf -d "$b"; done | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort -u); do
    case $lib in
      libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) continue ;;
      libz.so.1) continue ;;  # zlib1g: required on every Debian and Ubuntu
      libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | libcusparse.so.* | libnvJitLink.so.*) continue ;;
    esac
    grep -qxF "$lib" <<< "$provided" || missing+=("$lib")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bundle: the GPU machine would lack ${missing[*]} (not in tools/device/packages.txt): build without them" \
      "(e.g. -DGNNPIPE_MATIO=OFF, as tools/device/ready.sh does) or carry their packages"
    exit 1
  fi
else
  echo "bundle: no .deps/debs (tools/device/prepare.sh): the libraries the binaries need are not checked"
fi
git -C "$root" rev-parse --short HEAD > "$bin/COMMIT"
git -C "$root" diff --quiet || echo "dirty" >> "$bin/COMMIT"
du -sh "$bin"
