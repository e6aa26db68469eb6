#!/usr/bin/env bash
# On the GPU machine: issue #7's acceptance runs and the sanitizer pass, in phases that each fit
# one device call.
#   tests     build (CUDA on), ctest, gnnpipe_gpu_tests, and Cora GCN trained on the CPU and on
#             cuda:0 (accuracies side by side)
#   sanitize  build gnnpipe_gpu_tests, then run it under compute-sanitizer, each tool time-boxed:
#               memcheck   every test case                               (SANITIZE_MEMCHECK_S, 180 s)
#               racecheck  the ops with shared-memory reductions: losses, (SANITIZE_RACECHECK_S, 60 s)
#                          elementwise (bias column sums), head_dot backward
#               synccheck  every op parity test but the 2^20-row ones    (SANITIZE_SYNCCHECK_S, 75 s)
#               initcheck  every op parity test but the 2^20-row ones,   (SANITIZE_INITCHECK_S, 75 s)
#                          and the training steps (not whole runs)
#             and once plainly with CUDA_LAUNCH_BLOCKING=1 (every test case; SANITIZE_PLAIN_S, 90 s).
#             The budgets add up to 480 s; a budget of 0 skips that run.
#             racecheck and initcheck are slow, hence their subsets (Catch2 test specs below;
#             override with SANITIZE_<TOOL>_TESTS). One verdict line per tool, e.g.
#               sanitize memcheck: clean (0 errors, 61 test cases)
#               sanitize racecheck: 3 errors (see racecheck.log)
#               sanitize initcheck: timed out after 75 s (see initcheck.log)
#             Logs: $OUT/<tool>.log. A tool whose budget would pass SANITIZE_DEADLINE_S (540 s
#             after the script started: the device call's 600 s, less the tail) is skipped, and
#             says so. Exits 0 only when every tool ran clean.
#   bench     gnnpipe_bench_gpu on ogbn-arxiv (device copy rate, SpMM kernel vs cuSPARSE, full-batch
#             GCN epochs), the PyG baseline of the same GCN, and `gnnpipe bench` (pipelined vs
#             sequential) of SAGE [15,10,5] on arxiv and on the products-size synthetic graph
#   allocators  memory.allocator caching against async (cudaMallocAsync) on arxiv: SAGE [15,10,5]
#             batches and the full-batch GCN, each twice in alternating order (epoch time, in-use
#             peak, the driver's peak, driver calls, params_checksum)
#   placement  issue #14's GPU figures on arxiv SAGE: features host / device / cache / float16
#             (epoch time, bytes moved, cache hits) and resident against layer-wise evaluation
#   checkpoints  issue #15's integration scripts (resume after SIGKILL/SIGTERM, infer) on cuda:0
# Usage: bash tools/device/gpu_acceptance.sh tests|sanitize|bench|allocators|placement|checkpoints
#        (carry .deps; tests and bench
#        need cora and ogbn-arxiv: bash tools/device/prepare.sh cora ogbn-arxiv here first).
#        Results go to $OUT.
set -uo pipefail
started=$SECONDS
root=$(cd "$(dirname "$0")/../.." && pwd)
phase=${1:?usage: gpu_acceptance.sh tests|sanitize|bench|allocators|placement|checkpoints}
out=${OUT:-/tmp/gnnpipe-out}
mkdir -p "$out"
build_dir=${BUILD_DIR:-$root/build-device}
data=$root/.deps/datasets
# shellcheck source=tools/device/env.sh
source "$root/tools/device/env.sh"
# Binaries bundled here by tools/device/bundle.sh (.deps/bin) run without a build on the device;
# PREBUILT=0 builds there instead.
prebuilt=0
if [ "${PREBUILT:-1}" = 1 ] && [ -x "$root/.deps/bin/gnnpipe" ]; then
  prebuilt=1
  echo "gpu_acceptance: prebuilt binaries of $(tr '\n' ' ' < "$root/.deps/bin/COMMIT")"
  gnnpipe=$root/.deps/bin/gnnpipe
  gpu_tests=$root/.deps/bin/gnnpipe_gpu_tests
  fault_test=$root/.deps/bin/gnnpipe_gpu_fault_test
  bench_gpu=$root/.deps/bin/gnnpipe_bench_gpu
else
  gnnpipe=$build_dir/experiments/gnnpipe
  gpu_tests=$build_dir/tests/gnnpipe_gpu_tests
  fault_test=$build_dir/tests/gnnpipe_gpu_fault_test
  bench_gpu=$build_dir/tools/bench/gnnpipe_bench_gpu
  case "$phase" in
    tests)
      device_build "$build_dir" || { echo "gpu_acceptance: build failed (see $out/build.log)"; exit 1; }
      ;;
    sanitize)
      BUILD_TARGETS=gnnpipe_gpu_tests device_build "$build_dir" ||
        { echo "gpu_acceptance: build failed (see $out/build.log)"; exit 1; }
      ;;
    bench|allocators|placement|checkpoints)
      if [ ! -x "$gnnpipe" ]; then
        device_build "$build_dir" || { echo "gpu_acceptance: build failed (see $out/build.log)"; exit 1; }
      fi
      ;;
  esac
fi

# Test cases Catch2 reports in `log` ("All tests passed (N assertions in M test cases)" or
# "test cases: M | ..."); empty when it printed neither.
test_cases_in() {
  grep -oE '(in [0-9]+ test cases?\)|test cases: +[0-9]+)' "$1" | tail -1 | grep -oE '[0-9]+'
}

# sanitize_with TOOL BUDGET_S TEST_SPEC: gnnpipe_gpu_tests (the test cases TEST_SPEC selects, all
# when empty) under compute-sanitizer --tool TOOL, killed after BUDGET_S seconds; prints the
# verdict line and returns 0 only when it ran clean.
sanitize_with() {
  local tool=$1 budget=$2 spec=$3 log=$out/$1.log
  local left=$((deadline - (SECONDS - started)))
  if [ "$budget" -eq 0 ]; then
    echo "sanitize $tool: skipped (budget 0)"
    return 1
  elif [ "$budget" -gt "$left" ]; then
    echo "sanitize $tool: skipped (its $budget s would pass the ${deadline} s deadline; $left s left)"
    return 1
  fi
  local args=() tool_args=()
  [ -n "$spec" ] && args+=("$spec")
  # racecheck reports shared-memory hazards inside cuSPARSE's own csrmv_v3_kernel (NVIDIA's code,
  # seen on the H100 with cuSPARSE 12 / CUDA 13): our kernels are what it checks here.
  [ "$tool" = racecheck ] && tool_args=(${SANITIZE_RACECHECK_ARGS:---kernel-name-exclude kns=cusparse})
  timeout --kill-after=10 "$budget" compute-sanitizer --tool "$tool" "${tool_args[@]}" --error-exitcode 86 \
    "$gpu_tests" "${args[@]}" > "$log" 2>&1
  local rc=$?
  local errors cases
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
  # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" instead.
  [ -z "$errors" ] && errors=$(grep -oE 'RACECHECK SUMMARY: .*\([0-9]+ errors' "$log" | tail -1 | grep -oE '[0-9]+ errors' | grep -oE '[0-9]+')
  cases=$(test_cases_in "$log")
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "sanitize $tool: timed out after $budget s (see $tool.log)"
  elif [ -z "$errors" ]; then
    echo "sanitize $tool: no ERROR SUMMARY, exit $rc (see $tool.log)"
  elif [ "$errors" -gt 0 ]; then
    echo "sanitize $tool: $errors errors (see $tool.log)"
  elif [ "$rc" -ne 0 ]; then
    echo "sanitize $tool: 0 errors, but the tests failed (exit $rc, ${cases:-?} test cases; see $tool.log)"
  else
    echo "sanitize $tool: clean (0 errors, ${cases:-?} test cases)"
    return 0
  fi
  return 1
}

case "$phase" in
  tests)
    if [ "$prebuilt" = 1 ]; then
      # The CPU tests ran on the dev machine; here only the GPU entries of ctest.
      for mode in pipelined sequential; do
        timeout 120 "$fault_test" "$mode" > "$out/fault_$mode.log" 2>&1
        echo "gnnpipe_gpu_fault_test $mode: exit $? ($(tail -1 "$out/fault_$mode.log"))"
      done
    else
      (cd "$build_dir" && ctest --output-on-failure -j 8) > "$out/ctest.log" 2>&1; echo "ctest exit $?"
    fi
    timeout "${GPU_TESTS_S:-240}" "$gpu_tests" ${GPU_TESTS_SPEC:-} > "$out/gpu_tests.log" 2>&1; echo "gnnpipe_gpu_tests exit $?"
    grep -E "^(/|[^ ].*FAILED|.*REQUIRE|.*CHECK)" "$out/gpu_tests.log" | head -40
    tail -4 "$out/gpu_tests.log"
    timeout 60 "$gnnpipe" doctor > "$out/doctor.log" 2>&1; echo "gnnpipe doctor exit $?"; tail -15 "$out/doctor.log"
    echo "(compute-sanitizer: run the sanitize phase)"
    for seed in ${CORA_SEEDS:-0 1 2}; do
      for device in cpu cuda:0; do
        name=cora_gcn_${device/:/}_s$seed
        timeout 120 "$gnnpipe" run "$root/configs/cora_gcn.yaml" --data-dir "$data" --out "$out/runs/$name" \
          --set "run.device=$device" --set "run.seed=$seed" > "$out/$name.log" 2>&1
        echo "cora_gcn seed $seed on $device: exit $?; $(grep -E 'best epoch' "$out/$name.log" | tail -1)"
      done
    done
    ;;
  sanitize)
    command -v compute-sanitizer > /dev/null || { echo "sanitize: compute-sanitizer not found"; exit 1; }
    compute-sanitizer --version | tail -1
    deadline=${SANITIZE_DEADLINE_S:-540}
    failed=0
    sanitize_with memcheck "${SANITIZE_MEMCHECK_S:-180}" "${SANITIZE_MEMCHECK_TESTS:-}" || failed=1
    # racecheck sees shared memory only: the kernels with block reductions in shared memory are
    # the loss totals, the fixed-order column sums (bias_grad_accumulate, head_dot_backward) and
    # the SpMM's long rows (a thread block per row, partial sums in shared memory).
    sanitize_with racecheck "${SANITIZE_RACECHECK_S:-60}" \
      "${SANITIZE_RACECHECK_TESTS:-[loss],[elementwise]~[wrap],ops::head_dot*,[spmm]}" || failed=1
    # synccheck: the warp shuffles with partial masks (SpMM lane groups) and the barriers.
    sanitize_with synccheck "${SANITIZE_SYNCCHECK_S:-75}" "${SANITIZE_SYNCCHECK_TESTS:-[ops]~[wrap]}" || failed=1
    sanitize_with initcheck "${SANITIZE_INITCHECK_S:-75}" \
      "${SANITIZE_INITCHECK_TESTS:-[ops]~[wrap],[training]~[runs]}" || failed=1
    # Every launch synchronous: an asynchronous error surfaces at the launch that caused it.
    plain_budget=${SANITIZE_PLAIN_S:-90}
    left=$((deadline - (SECONDS - started)))
    if [ "$plain_budget" -eq 0 ]; then
      echo "sanitize launch-blocking: skipped (budget 0)"
      failed=1
    elif [ "$plain_budget" -gt "$left" ]; then
      echo "sanitize launch-blocking: skipped (its $plain_budget s would pass the ${deadline} s deadline; $left s left)"
      failed=1
    else
      CUDA_LAUNCH_BLOCKING=1 timeout --kill-after=10 "$plain_budget" "$gpu_tests" > "$out/launch_blocking.log" 2>&1
      rc=$?
      cases=$(test_cases_in "$out/launch_blocking.log")
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "sanitize launch-blocking: timed out after $plain_budget s (see launch_blocking.log)"; failed=1
      elif [ "$rc" -ne 0 ]; then
        echo "sanitize launch-blocking: failed (exit $rc, ${cases:-?} test cases; see launch_blocking.log)"; failed=1
      else
        echo "sanitize launch-blocking: passed (${cases:-?} test cases)"
      fi
    fi
    exit "$failed"
    ;;
  bench)
    GNNPIPE_DATA_DIR=$data timeout 240 "$bench_gpu" --graph arxiv | tee "$out/bench_gpu_arxiv.jsonl"
    timeout 120 python3 "$root/tools/bench/pyg_gcn_fullbatch.py" --data-dir "$data" | tee "$out/pyg_arxiv.jsonl"
    timeout 120 python3 "$root/tools/bench/pyg_gcn_fullbatch.py" --data-dir "$data" --tf32 | tee -a "$out/pyg_arxiv.jsonl"
    # PyG's reference script (../shared/reference/peers, carried by prepare.sh): torch-CSR modes.
    if [ -f "$root/.deps/peers/pyg_fullbatch_gcn.py" ]; then
      for mode in csr_cached csr edge_index; do
        timeout 120 python3 "$root/.deps/peers/pyg_fullbatch_gcn.py" --mode "$mode" \
          --adj "$data/ogbn-arxiv/netbenchmark/adj_full.npz" | tee -a "$out/pyg_arxiv.jsonl"
      done
    fi
    timeout 180 "$gnnpipe" bench "$root/configs/bench_arxiv_sage.yaml" --data-dir "$data" --out "$out/runs/bench_arxiv_sage" \
      --set run.device=cuda:0 --set pipeline.sampler_threads=14 --set run.epochs=4 > "$out/bench_arxiv_sage.log" 2>&1
    echo "bench_arxiv_sage: exit $?"; tail -15 "$out/bench_arxiv_sage.log"
    if [ "${PRODUCTS:-1}" = 1 ]; then
      "$gnnpipe" bench "$root/configs/bench_products_sage.yaml" --out "$out/runs/bench_products_sage" --set run.device=cuda:0 \
        > "$out/bench_products_sage.log" 2>&1
      echo "bench_products_sage: exit $?"; tail -15 "$out/bench_products_sage.log"
    fi
    ;;
  allocators)
    # memory.allocator caching against async (cudaMallocAsync pool), the same runs otherwise: the
    # sampled SAGE bench (many allocations of varying sizes per batch) and the resident full-batch
    # GCN. One line each: epoch time, in-use peak, what the driver held at most, driver calls.
    for config in bench_arxiv_sage arxiv_gcn_fullbatch; do
      for allocator in caching async async caching; do
        name=${config}_$allocator
        timeout 150 "$gnnpipe" run "$root/configs/$config.yaml" --data-dir "$data" --out "$out/runs/$name" \
          --set run.device=cuda:0 --set run.epochs="${ALLOCATOR_EPOCHS:-4}" --set pipeline.eval_every=1000 \
          --set memory.allocator=$allocator > "$out/$name.log" 2>&1
        rc=$?
        summary=$out/runs/$name/summary.json
        if [ "$rc" -ne 0 ] || [ ! -f "$summary" ]; then
          echo "allocators $config $allocator: exit $rc (see $name.log)"; tail -3 "$out/$name.log"; continue
        fi
        echo "allocators $config $allocator: $(grep -oE '"(epoch_time_s|epoch_time_mean_s|peak_device_bytes|peak_held_bytes|device_driver_allocations|params_checksum)": *[^,}]*' "$summary" | tr '\n' ' ')"
      done
    done
    ;;
  placement)
    # Issue #14 on the GPU: the arxiv SAGE bench's training epochs with the features on the host,
    # on the device, in a cache (a 320 MiB limit: not every row fits beside the batches) and as
    # float16; then its evaluation with the whole graph's block resident against layer-wise chunks.
    # One line each: epoch time, bytes gathered on the host, copied, gathered on the device, cache
    # hits and misses, in-use peak, params_checksum (equal across placements of one dtype).
    common=(--set run.device=cuda:0 --set pipeline.sampler_threads=14 --set pipeline.staging_slots=16)
    variants=(
      "host:memory.features=host"
      "device:memory.features=device"
      "cache320:memory.features=cache,memory.limit=320MiB"
      "fp16_device:memory.features=device,dataset.feature_dtype=float16"
      "fp16_host:memory.features=host,dataset.feature_dtype=float16"
      "eval_resident:pipeline.eval_graph=resident,pipeline.eval_every=1"
      "eval_layerwise:pipeline.eval_graph=layerwise,pipeline.eval_every=1"
    )
    for variant in "${variants[@]}"; do
      name=placement_${variant%%:*}
      sets=()
      IFS=, read -ra pairs <<< "${variant#*:}"
      for pair in "${pairs[@]}"; do sets+=(--set "$pair"); done
      case $name in placement_eval_*) epochs=2 ;; *) epochs=${PLACEMENT_EPOCHS:-4}; sets+=(--set pipeline.eval_every=1000) ;; esac
      timeout 150 "$gnnpipe" run "$root/configs/bench_arxiv_sage.yaml" --data-dir "$data" --out "$out/runs/$name" \
        "${common[@]}" --set run.epochs="$epochs" "${sets[@]}" > "$out/$name.log" 2>&1
      rc=$?
      summary=$out/runs/$name/summary.json
      if [ "$rc" -ne 0 ] || [ ! -f "$summary" ]; then
        echo "$name: exit $rc (see $name.log)"; tail -3 "$out/$name.log"; continue
      fi
      echo "$name: $(grep -oE '"(epoch_time_s|eval|host_gathered_bytes|copied_bytes|device_gathered_bytes|cache_hit_rows|cache_miss_rows|peak_device_bytes|params_checksum)": *("[^"]*"|[0-9.eE+-]+)' "$summary" | tr '\n' ' ')"
    done
    ;;
  checkpoints)
    # Issue #15 on the GPU: the integration scripts with every run on cuda:0 (checkpoints written
    # from device parameters, SIGKILL and SIGTERM mid-run then --resume bitwise, infer with its
    # copy stream at unlimited and tight budgets reproducing the run's accuracies).
    for script in resume_after_kill infer_cli; do
      GNNPIPE_TEST_DEVICE=cuda:0 GNNPIPE_DATA_DIR=$data timeout 240 bash "$root/tests/integration/$script.sh" "$gnnpipe" \
        > "$out/$script.log" 2>&1
      echo "$script on cuda:0: exit $? ($(tail -1 "$out/$script.log"))"
    done
    ;;
  *) echo "gpu_acceptance: unknown phase '$phase' (tests | sanitize | bench | allocators | placement | checkpoints)"; exit 2 ;;
esac
