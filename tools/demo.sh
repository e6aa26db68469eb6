#!/usr/bin/env bash
# The main job, end to end on this machine: set up, Release build, then run gnnpipe.
# The main job is `gnnpipe bench configs/quickstart.yaml` (neighbor-sampled GraphSAGE on a synthetic
# graph, CPU, trained as the sequential baseline and through the pipeline, with the speedup); around it: the build's identity, `gnnpipe doctor` (devices, streams, events, pinned and
# device buffers, copy bandwidth on the CPU and every visible GPU), and the dataset tools on a
# synthetic graph and on real data from ../shared/datasets when it is there. It ends by drawing the
# bench's pictures with tools/plot.py (stage bars, loss/accuracy curves, epoch timelines, memory
# against the budget) and printing their paths. The bench directory is kept: $DEMO_OUT/quickstart-bench,
# DEMO_OUT defaulting to runs/demo-<date>-<time> (a new one per demo); scratch data goes to a
# temporary directory removed at exit. plot.py runs on $GNNPIPE_PYTHON, else /usr/bin/python3, else
# python3: the first that imports matplotlib.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-release}
demo_out=${DEMO_OUT:-$root/runs/demo-$(date +%Y%m%d-%H%M%S)}

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
bench_dir=$demo_out/quickstart-bench
mkdir -p "$demo_out"
"$gnnpipe" bench "$root/configs/quickstart.yaml" --out "$bench_dir"
echo "bench directory:"; ls -l "$bench_dir" "$bench_dir/pipelined"
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
echo "== tools/plot.py $bench_dir (the bench's pictures: PNG files in the bench directory)"
python=
for candidate in "${GNNPIPE_PYTHON:-}" /usr/bin/python3 python3; do
  if [ -n "$candidate" ] && "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  echo "demo: no python3 that imports matplotlib (tried ${GNNPIPE_PYTHON:+$GNNPIPE_PYTHON, }/usr/bin/python3, python3): run tools/setup.sh as root" >&2
  exit 1
fi
"$python" "$root/tools/plot.py" "$bench_dir"
echo
echo "demo: built gnnpipe (Release) in $build_dir, checked this machine with 'gnnpipe doctor', trained"
echo "demo: configs/quickstart.yaml sequentially and pipelined (speedup above), generated, inspected"
echo "demo: and converted datasets, and drew the bench's pictures (paths above) in $bench_dir."
