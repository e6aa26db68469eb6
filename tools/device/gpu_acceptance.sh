#!/usr/bin/env bash
# On the GPU machine: issue #7's acceptance runs, in two phases that each fit one device call.
#   tests  build (CUDA on), ctest, gnnpipe_gpu_tests, compute-sanitizer memcheck on it, and Cora
#          GCN trained on the CPU and on cuda:0 (accuracies side by side)
#   bench  gnnpipe_bench_gpu on ogbn-arxiv (device copy rate, SpMM kernel vs cuSPARSE, full-batch
#          GCN epochs), the PyG baseline of the same GCN, and `gnnpipe bench` (pipelined vs
#          sequential) of SAGE [15,10,5] on arxiv and on the products-size synthetic graph
# Usage: bash tools/device/gpu_acceptance.sh tests|bench   (carry .deps with cora and ogbn-arxiv:
#        bash tools/device/prepare.sh cora ogbn-arxiv here first). Results go to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
phase=${1:?usage: gpu_acceptance.sh tests|bench}
out=${OUT:-/tmp/gnnpipe-out}
mkdir -p "$out"
build_dir=${BUILD_DIR:-$root/build-device}
data=$root/.deps/datasets
# shellcheck source=tools/device/env.sh
source "$root/tools/device/env.sh"
gnnpipe=$build_dir/experiments/gnnpipe

if [ ! -x "$gnnpipe" ] || [ "$phase" = tests ]; then
  device_build "$build_dir" || { echo "gpu_acceptance: build failed (see $out/build.log)"; exit 1; }
fi

case "$phase" in
  tests)
    (cd "$build_dir" && ctest --output-on-failure -j 8) > "$out/ctest.log" 2>&1; echo "ctest exit $?"
    "$build_dir/tests/gnnpipe_gpu_tests" > "$out/gpu_tests.log" 2>&1; echo "gnnpipe_gpu_tests exit $?"
    tail -4 "$out/gpu_tests.log"
    if command -v compute-sanitizer > /dev/null; then
      compute-sanitizer --tool memcheck --error-exitcode 9 "$build_dir/tests/gnnpipe_gpu_tests" \
        > "$out/memcheck.log" 2>&1
      echo "compute-sanitizer memcheck exit $?"; grep -E "ERROR SUMMARY|test cases" "$out/memcheck.log" | tail -3
    else
      echo "compute-sanitizer: not found"
    fi
    for device in cpu cuda:0; do
      "$gnnpipe" run "$root/configs/cora_gcn.yaml" --data-dir "$data" --out "$out/runs/cora_gcn_${device/:/}" --set "run.device=$device" \
        > "$out/cora_gcn_${device/:/}.log" 2>&1
      echo "cora_gcn on $device: exit $?; $(grep -E 'best epoch' "$out/cora_gcn_${device/:/}.log" | tail -1)"
    done
    ;;
  bench)
    GNNPIPE_DATA_DIR=$data "$build_dir/tools/bench/gnnpipe_bench_gpu" --graph arxiv | tee "$out/bench_gpu_arxiv.jsonl"
    python3 "$root/tools/bench/pyg_gcn_fullbatch.py" --data-dir "$data" | tee "$out/pyg_arxiv.jsonl"
    python3 "$root/tools/bench/pyg_gcn_fullbatch.py" --data-dir "$data" --tf32 | tee -a "$out/pyg_arxiv.jsonl"
    "$gnnpipe" bench "$root/configs/bench_arxiv_sage.yaml" --data-dir "$data" --out "$out/runs/bench_arxiv_sage" \
      --set run.device=cuda:0 --set pipeline.sampler_threads=14 --set run.epochs=4 > "$out/bench_arxiv_sage.log" 2>&1
    echo "bench_arxiv_sage: exit $?"; tail -15 "$out/bench_arxiv_sage.log"
    if [ "${PRODUCTS:-1}" = 1 ]; then
      "$gnnpipe" bench "$root/configs/bench_products_sage.yaml" --out "$out/runs/bench_products_sage" --set run.device=cuda:0 \
        > "$out/bench_products_sage.log" 2>&1
      echo "bench_products_sage: exit $?"; tail -15 "$out/bench_products_sage.log"
    fi
    ;;
  *) echo "gpu_acceptance: unknown phase '$phase' (tests | bench)"; exit 2 ;;
esac
