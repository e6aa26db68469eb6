#!/usr/bin/env bash
# The main job, end to end on this machine: set up, Release build, then run gnnpipe.
# The main job is `gnnpipe bench configs/quickstart.yaml` (neighbor-sampled GraphSAGE on a synthetic
# graph, CPU, trained as the sequential baseline and through the pipeline, with the speedup); around it: the build's identity, `gnnpipe doctor` (devices, streams, events, pinned and
# device buffers, copy bandwidth on the CPU and every visible GPU), and the dataset tools on a
# synthetic graph and on real data from ../shared/datasets when it is there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-release}

bash "$root/tools/setup.sh"
bash "$root/tools/build.sh" "$build_dir" Release
gnnpipe=$build_dir/experiments/gnnpipe

echo
echo "== gnnpipe --version"
"$gnnpipe" --version
echo
echo "== gnnpipe doctor"
"$gnnpipe" doctor
echo
echo "== gnnpipe bench configs/quickstart.yaml (neighbor-sampled GraphSAGE on a synthetic graph, CPU):"
echo "   the sequential baseline, then the pipeline, on the same config and seed"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gnnpipe" bench "$root/configs/quickstart.yaml" --out "$work/quickstart-bench"
echo "bench directory:"; ls -l "$work/quickstart-bench" "$work/quickstart-bench/pipelined"
echo
echo "== gnnpipe data synth (50,000 nodes with community structure) and data info"
"$gnnpipe" data synth --out "$work/synthetic" --nodes 50000 --avg-degree 15 --features 64 --classes 8 --seed 0
"$gnnpipe" data info "$work/synthetic"
data_dir=${GNNPIPE_DATA_DIR:-$root/../shared/datasets}
if [ -d "$data_dir/ogbn-arxiv" ]; then
  echo
  echo "== gnnpipe data convert ogbn-arxiv (GraphSAINT layout) to the native format, with 128 random features"
  "$gnnpipe" data convert "$data_dir/ogbn-arxiv" --out "$work/arxiv" --random-features 128
  "$gnnpipe" data info "$work/arxiv"
else
  echo "demo: $data_dir not found: skipping the real-dataset part"
fi
echo
echo "demo: built gnnpipe (Release) in $build_dir, checked this machine with 'gnnpipe doctor', trained"
echo "demo: configs/quickstart.yaml sequentially and pipelined (speedup above), and generated, inspected"
echo "demo: and converted datasets."
