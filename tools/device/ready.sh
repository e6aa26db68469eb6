#!/usr/bin/env bash
# On the dev machine, before the first device call of a session: everything a device call needs,
# so that the lease's minutes go to running, not building. Downloads the carried Debian packages
# and copies cora and ogbn-arxiv (prepare.sh), builds the GPU binaries (Release, CUDA on, sm_90:
# the H100 and the H200) in build-gpu/, bundles them into .deps/bin (bundle.sh), and checks that
# what a call sends (the working tree plus .deps) stays under the device tool's 64 MiB.
# Usage: bash tools/device/ready.sh [DATASET...]   (default: cora ogbn-arxiv)
# Then: run(command="bash tools/device/gpu_acceptance.sh session", carry=[".deps"], timeout_s=600)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
started=$SECONDS
datasets=("$@")
[ ${#datasets[@]} -gt 0 ] || datasets=(cora ogbn-arxiv)
rm -rf .deps/datasets
bash tools/device/prepare.sh "${datasets[@]}"
# shellcheck source=tools/ccache_env.sh
source tools/ccache_env.sh
# No libmatio: the GPU machine has no HDF5 (bundle.sh checks every library the binaries need).
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DGNNPIPE_CUDA=ON -DGNNPIPE_CUDA_ARCHS=90 \
  -DGNNPIPE_MATIO=OFF -DGNNPIPE_MPI=OFF -DGNNPIPE_PYTHON=OFF "${ccache_launchers[@]}" > /dev/null
cmake --build build-gpu -j "$(nproc)" --target gnnpipe gnnpipe_gpu_tests gnnpipe_gpu_fault_test gnnpipe_bench_gpu
bash tools/device/bundle.sh build-gpu
# What a call sends: tracked and untracked-not-ignored files, and the carried .deps.
tree_kib=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | du -ck --files0-from=- | tail -1 | cut -f1)
deps_kib=$(du -sk .deps | cut -f1)
total_mib=$(((tree_kib + deps_kib) / 1024))
echo "ready: $total_mib MiB would travel (working tree $((tree_kib / 1024)) MiB, .deps $((deps_kib / 1024)) MiB), in $((SECONDS - started)) s"
((total_mib < 64)) || { echo "ready: over the device tool's 64 MiB: carry fewer datasets"; exit 1; }
