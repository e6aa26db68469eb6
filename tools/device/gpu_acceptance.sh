#!/usr/bin/env bash
# On the GPU machine: the acceptance runs of issues #7, #14, #15 and #19 and the sanitizer pass,
# in phases that each fit one device call (docs/DEVICE.md).
#   session   everything below that matters most, in one call, in priority order, each step
#             time-boxed and started only while the deadline leaves it room: for a lease of 15
#             device minutes (a start of 1-2 minutes, one call of at most 10). Steps:
#               gnnpipe_gpu_tests (every test case, with durations), the kernel-fault test in
#               both modes, gnnpipe doctor, Cora GCN on cpu and cuda:0 (SESSION_CORA_SEEDS,
#               default 0), the full-batch GCN bench on arxiv (A x once and every epoch) with
#               PyG's cached CSR GCN beside it, `gnnpipe bench` of the arxiv SAGE config (stage
#               table, speedup, efficiency), the checkpoint scripts on cuda:0, the allocator
#               runs (each mode once), the placement runs, then memcheck over the test cases
#               that no GPU has run yet (SESSION_MEMCHECK_TESTS) with what is left.
#   tests     ctest (or, with prebuilt binaries, the fault test), gnnpipe_gpu_tests, doctor, and
#             Cora GCN trained on the CPU and on cuda:0 (CORA_SEEDS, default 0 1 2)
#   sanitize  gnnpipe_gpu_tests under compute-sanitizer, each tool time-boxed:
#               memcheck   every test case                               (SANITIZE_MEMCHECK_S, 180 s)
#               racecheck  the ops with shared-memory reductions: losses, (SANITIZE_RACECHECK_S, 100 s)
#                          elementwise (bias column sums), head_dot backward, SpMM
#               synccheck  every op parity test but the 2^20-row ones    (SANITIZE_SYNCCHECK_S, 75 s)
#               initcheck  every op parity test but the 2^20-row ones,   (SANITIZE_INITCHECK_S, 75 s)
#                          and the training steps (not whole runs)
#             and once plainly with CUDA_LAUNCH_BLOCKING=1 (all but [concurrency]; SANITIZE_PLAIN_S, 90 s).
#             A budget of 0 skips that run. racecheck and initcheck are slow, hence their subsets
#             (Catch2 test specs below; override with SANITIZE_<TOOL>_TESTS). One verdict line per
#             tool, e.g.
#               sanitize memcheck: clean (0 errors, 61 test cases)
#               sanitize racecheck: 3 errors (see racecheck.log)
#               sanitize initcheck: timed out after 75 s (see initcheck.log)
#             Exits 0 only when every tool ran clean.
#   bench     gnnpipe_bench_gpu on ogbn-arxiv (device copy rate, SpMM kernel vs cuSPARSE, full-batch
#             GCN epochs), the PyG baseline of the same GCN, and `gnnpipe bench` (pipelined vs
#             sequential) of SAGE [15,10,5] on arxiv and on the products-size synthetic graph
#   allocators  memory.allocator caching against async (cudaMallocAsync) on arxiv: SAGE [15,10,5]
#             batches and the full-batch GCN, each twice in alternating order (epoch time, in-use
#             peak, the driver's peak, driver calls, params_checksum)
#   placement  issue #14's GPU figures on arxiv SAGE: features host / device / cache / float16
#             (epoch time, bytes moved, cache hits) and resident against layer-wise evaluation
#   checkpoints  issue #15's integration scripts (resume after SIGKILL/SIGTERM, infer) on cuda:0
#   products  issue #19's products-size SAGE figures, evaluating once after the last epoch: `gnnpipe
#             bench` (sequential against pipelined) with float32 features on the host (the issue's
#             setup), then pipelined runs with the features on the device, as float16 on the
#             host, with a feature cache, and evaluating over a resident block (PRODUCTS_STEPS
#             picks them); a second call after `session` (DEADLINE_S=280 fits what 15 minutes leave)
#   fullbatch issue #38's GPU figures: the full-batch GCN 3 x 256 on the products-size graph
#             (configs/products_gcn_fullbatch_16g.yaml, 3 epochs, evaluating once after the last)
#             without a limit and at memory.limit 15GiB and 8GiB (split falls back to layer-wise
#             training there), nvidia-smi's memory.used polled every 200 ms beside each (its peak in
#             the verdict line), and `--plan` alone at each limit, timed. FULLBATCH_STEPS picks them
#             (default: plan15 plan8 free limit15 limit8). PyG's cached-CSR GCN on the same graph is
#             not here yet (it needs the synthetic graph exported).
# Usage: bash tools/device/gpu_acceptance.sh session|tests|sanitize|bench|allocators|placement|checkpoints|products|fullbatch
#        Carry .deps: its debs (tools/device/prepare.sh cora ogbn-arxiv) and, to skip the build
#        there, its bin (tools/device/bundle.sh). Without .deps/bin the phase builds first.
# Output: each verdict line is printed and appended to $OUT/<phase>.txt as it is known; every log
# and run directory goes into $OUT/<phase>_logs.tar.gz at the end (the device tool returns at most
# 8 files). Every step is time-boxed inside DEADLINE_S (default 560 s after the start, so a call of
# 600 s ends with its files); a step the deadline leaves no room for is skipped and says so.
# ACCEPT_DEVICE=cpu rehearses a phase on the dev machine (no GPU, its own libraries, binaries from
# BUILD_DIR, datasets from ACCEPT_DATA_DIR): it checks this script, not the GPU.
set -uo pipefail
started=$SECONDS
root=$(cd "$(dirname "$0")/../.." && pwd)
phases="session|tests|sanitize|bench|allocators|placement|checkpoints|products|fullbatch"
phase=${1:?usage: gpu_acceptance.sh $phases}
[[ "|$phases|" == *"|$phase|"* ]] || { echo "gpu_acceptance: unknown phase '$phase' ($phases)"; exit 2; }
out=${OUT:-/tmp/gnnpipe-out}
mkdir -p "$out"
summary=$out/$phase.txt
: > "$summary"
logs=$(mktemp -d)
deadline=${DEADLINE_S:-${SANITIZE_DEADLINE_S:-560}}
device=${ACCEPT_DEVICE:-cuda:0}
data=${ACCEPT_DATA_DIR:-$root/.deps/datasets}
build_dir=${BUILD_DIR:-$root/build-device}
# Checkpoints stay behind: the returned files are capped at 16 MiB each.
trap 'tar -czf "$out/${phase}_logs.tar.gz" --exclude=checkpoints -C "$logs" . 2>/dev/null; rm -rf "$logs"' EXIT

# say LINE...: a verdict line, printed and kept in $OUT/<phase>.txt.
say() { echo "$*" | tee -a "$summary"; }

# slot CAP [FLOOR]: the seconds the next step may take: CAP, or what the deadline leaves (less 10 s
# for the tail) when that is less. Returns 1, printing nothing, when under FLOOR (default 15) s
# are left.
slot() {
  local left=$((deadline - (SECONDS - started) - 10))
  ((left >= ${2:-15})) || return 1
  echo $((left < $1 ? left : $1))
}
# skipped NAME: the verdict line of a step the deadline left no room for.
skipped() { say "$1: skipped ($((deadline - (SECONDS - started))) s left before the ${deadline} s deadline)"; }

if [ "$device" = cpu ]; then
  echo "gpu_acceptance: rehearsal on the CPU backend (ACCEPT_DEVICE=cpu): checks the script, not a GPU"
  prebuilt=0
else
  # shellcheck source=tools/device/env.sh
  source "$root/tools/device/env.sh"
  prebuilt=0
  [ "${PREBUILT:-1}" = 1 ] && [ -x "$root/.deps/bin/gnnpipe" ] && prebuilt=1
fi
if [ "$prebuilt" = 1 ]; then
  say "gpu_acceptance $phase: prebuilt binaries of $(tr '\n' ' ' < "$root/.deps/bin/COMMIT")"
  bin=$root/.deps/bin
  gnnpipe=$bin/gnnpipe gpu_tests=$bin/gnnpipe_gpu_tests fault_test=$bin/gnnpipe_gpu_fault_test
  bench_gpu=$bin/gnnpipe_bench_gpu bench_sampler=$bin/gnnpipe_bench_sampler
else
  gnnpipe=$build_dir/experiments/gnnpipe
  gpu_tests=$build_dir/tests/gnnpipe_gpu_tests
  fault_test=$build_dir/tests/gnnpipe_gpu_fault_test
  bench_gpu=$build_dir/tools/bench/gnnpipe_bench_gpu
  bench_sampler=$build_dir/tools/bench/gnnpipe_bench_sampler
  if [ "$device" != cpu ] && { [ "$phase" = tests ] || [ ! -x "$gnnpipe" ] || [ ! -x "$gpu_tests" ]; }; then
    build_targets=""
    [ "$phase" = sanitize ] && build_targets=gnnpipe_gpu_tests
    OUT=$logs BUILD_TARGETS=$build_targets device_build "$build_dir" ||
      { say "gpu_acceptance: build failed (see build.log in ${phase}_logs.tar.gz)"; exit 1; }
    say "gpu_acceptance $phase: built in $((SECONDS - started)) s"
  fi
fi
[ "$device" = cpu ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$summary"

# Test cases Catch2 reports in `log` ("All tests passed (N assertions in M test cases)" or
# "test cases: M | ..."); empty when it printed neither.
test_cases_in() {
  grep -oE '(in [0-9]+ test cases?\)|test cases: +[0-9]+)' "$1" | tail -1 | grep -oE '[0-9]+'
}

# gpu_test_run CAP [SPEC...]: gnnpipe_gpu_tests (with each test case's duration), its verdict and
# the first failures.
gpu_test_run() {
  local t
  t=$(slot "$1" 30) || { skipped gnnpipe_gpu_tests; return; }
  shift
  timeout --kill-after=10 "$t" "$gpu_tests" --durations yes "$@" > "$logs/gpu_tests.log" 2>&1
  local rc=$?
  say "gnnpipe_gpu_tests: exit $rc$( ((rc == 124 || rc == 137)) && echo " (timed out after $t s)") ($(tail -3 "$logs/gpu_tests.log" | grep -E 'test cases|passed|skipped' | tr -s ' \n' ' '))"
  grep -E "FAILED|REQUIRE\(|CHECK\(" "$logs/gpu_tests.log" | head -20 | tee -a "$summary"
}

fault_runs() {
  local mode t
  for mode in pipelined sequential; do
    t=$(slot 60) || { skipped "gnnpipe_gpu_fault_test $mode"; continue; }
    timeout "$t" "$fault_test" "$mode" > "$logs/fault_$mode.log" 2>&1
    say "gnnpipe_gpu_fault_test $mode: exit $? ($(tail -1 "$logs/fault_$mode.log"))"
  done
}

doctor_run() {
  local t
  t=$(slot 60) || { skipped "gnnpipe doctor"; return; }
  timeout "$t" "$gnnpipe" doctor > "$logs/doctor.log" 2>&1
  say "gnnpipe doctor: exit $? ($(grep -cE '^ *(ok|PASS)' "$logs/doctor.log") checks ok)"
  tail -12 "$logs/doctor.log"
}

# cora_runs SEEDS...: configs/cora_gcn.yaml on the CPU and on the device, best epoch and accuracies.
cora_runs() {
  local seed where name t wheres=(cpu)
  [ "$device" = cpu ] || wheres+=("$device")  # the rehearsal's device is the CPU
  for seed in "$@"; do
    for where in "${wheres[@]}"; do
      name=cora_gcn_${where/:/}_s$seed
      t=$(slot 120) || { skipped "cora_gcn seed $seed on $where"; continue; }
      timeout "$t" "$gnnpipe" run "$root/configs/cora_gcn.yaml" --data-dir "$data" --out "$logs/runs/$name" \
        --set "run.device=$where" --set "run.seed=$seed" > "$logs/$name.log" 2>&1
      say "cora_gcn seed $seed on $where: exit $?; $(grep -E 'best epoch' "$logs/$name.log" | tail -1 | sed 's/^.*best epoch/best epoch/')"
    done
  done
}

# summary_fields NAME: the run's summary.json numbers this script reports, on one line.
summary_fields() {
  grep -oE '"(epoch_time_s|epoch_time_mean_s|eval|host_gathered_bytes|copied_bytes|device_gathered_bytes|cache_hit_rows|cache_miss_rows|peak_device_bytes|peak_held_bytes|device_driver_allocations|params_checksum|test_accuracy)": *("[^"]*"|[0-9.eE+-]+)' \
    "$logs/runs/$1/summary.json" | tr '\n' ' '
}

# config_run NAME CAP CONFIG [--set K=V ...]: `gnnpipe run CONFIG` on the device into runs/NAME,
# time-boxed; one line with its summary's figures.
config_run() {
  local name=$1 cap=$2 config=$3 t
  shift 3
  t=$(slot "$cap" 20) || { skipped "$name"; return; }
  timeout "$t" "$gnnpipe" run "$root/configs/$config.yaml" --data-dir "$data" --out "$logs/runs/$name" \
    --set "run.device=$device" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ] || [ ! -f "$logs/runs/$name/summary.json" ]; then
    say "$name: exit $rc (see $name.log): $(tail -1 "$logs/$name.log")"
  else
    say "$name: $(summary_fields "$name")"
  fi
}

# smi_run NAME CAP CONFIG [--set K=V ...]: config_run with nvidia-smi's memory.used polled every
# 200 ms beside it (on a GPU); a second verdict line gives the peak it saw.
smi_run() {
  local name=$1 poll
  if [ "$device" = cpu ]; then
    config_run "$@"
    return
  fi
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$logs/$name.smi" 2>/dev/null &
  poll=$!
  config_run "$@"
  kill "$poll" 2>/dev/null
  wait "$poll" 2>/dev/null
  say "$name: nvidia-smi peak $(sort -n "$logs/$name.smi" | tail -1) MiB"
}

# plan_run NAME CAP CONFIG [--set K=V ...]: `gnnpipe run CONFIG --plan`, timed; its exit, seconds
# and the plan's epoch-1 line.
plan_run() {
  local name=$1 cap=$2 config=$3 t t0
  shift 3
  t=$(slot "$cap" 20) || { skipped "$name"; return; }
  t0=$(date +%s%N)
  timeout "$t" "$gnnpipe" run "$root/configs/$config.yaml" --data-dir "$data" --out "$logs/runs/$name" --plan \
    --set "run.device=$device" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  say "$name: exit $rc in $((($(date +%s%N) - t0) / 1000000)) ms: $(grep -E "epoch 1:" "$logs/$name.log" | cut -c1-220)"
}

# allocator_runs MODES...: memory.allocator in the order given, on the sampled SAGE bench (many
# allocations of varying sizes per batch) and the resident full-batch GCN: epoch time, in-use
# peak, what the driver held at most, driver calls (params_checksum equal across modes).
allocator_runs() {
  local config allocator
  for config in bench_arxiv_sage arxiv_gcn_fullbatch; do
    for allocator in "$@"; do
      config_run "allocators_${config}_$allocator" 150 "$config" --set run.epochs="${ALLOCATOR_EPOCHS:-4}" \
        --set pipeline.eval_every=1000 --set memory.allocator="$allocator"
    done
  done
}

# placement_runs: issue #14 on the device: the arxiv SAGE bench's training epochs with the features
# on the host, on the device, in a cache (a 320 MiB limit: not every row fits beside the batches)
# and as float16; then its evaluation with the whole graph's block resident against layer-wise
# chunks. Epoch time, bytes gathered on the host, copied, gathered on the device, cache hits and
# misses, in-use peak, params_checksum (equal across placements of one dtype).
placement_runs() {
  local variant name pair epochs sets pairs
  local variants=(
    "host:memory.features=host"
    "device:memory.features=device"
    "cache320:memory.features=cache,memory.limit=320MiB"
    "fp16_device:memory.features=device,dataset.feature_dtype=float16"
    "fp16_host:memory.features=host,dataset.feature_dtype=float16"
    "eval_resident:pipeline.eval_graph=resident,pipeline.eval_every=1"
    "eval_layerwise:pipeline.eval_graph=layerwise,pipeline.eval_every=1"
    "eval_layerwise_device:pipeline.eval_graph=layerwise_device,pipeline.eval_every=1"
  )
  for variant in "${variants[@]}"; do
    name=placement_${variant%%:*}
    sets=(--set pipeline.sampler_threads="${SAMPLER_THREADS:-14}" --set pipeline.staging_slots=16)
    IFS=, read -ra pairs <<< "${variant#*:}"
    for pair in "${pairs[@]}"; do sets+=(--set "$pair"); done
    case $name in placement_eval_*) epochs=2 ;; *) epochs=${PLACEMENT_EPOCHS:-4}; sets+=(--set pipeline.eval_every=1000) ;; esac
    config_run "$name" 150 bench_arxiv_sage --set run.epochs="$epochs" "${sets[@]}"
  done
}

# checkpoint_runs: issue #15's integration scripts with every run on the device (checkpoints written
# from device parameters, SIGKILL and SIGTERM mid-run then --resume bitwise, infer with its copy
# stream at unlimited and tight budgets reproducing the run's accuracies).
checkpoint_runs() {
  local script t
  for script in resume_after_kill infer_cli; do
    t=$(slot 240 30) || { skipped "$script on $device"; continue; }
    GNNPIPE_TEST_DEVICE=$device GNNPIPE_DATA_DIR=$data timeout "$t" bash "$root/tests/integration/$script.sh" "$gnnpipe" \
      > "$logs/$script.log" 2>&1
    say "$script on $device: exit $? ($(tail -1 "$logs/$script.log"))"
  done
}

# gcn_bench_runs: the full-batch 3-layer GCN on arxiv (ours: A x once and every epoch, kernel and
# cuSPARSE, TF32 off and on) and PyG's cached torch-CSR GCN on the same graph, in this call.
gcn_bench_runs() {
  local t
  if t=$(slot 120 30); then
    GNNPIPE_DATA_DIR=$data timeout "$t" "$bench_gpu" --graph arxiv --only gcn > "$logs/bench_gpu_gcn.jsonl" 2>&1
    say "gnnpipe_bench_gpu --only gcn: exit $?"
    grep -oE '"spmm":"[a-z]+","tf32":(true|false),"epoch_ms":[0-9.]+,"first_layer":"[^"]*"' "$logs/bench_gpu_gcn.jsonl" |
      tee -a "$summary"
  else
    skipped "gnnpipe_bench_gpu --only gcn"
  fi
  if [ -f "$root/.deps/peers/pyg_fullbatch_gcn.py" ] && t=$(slot 90 30); then
    timeout "$t" python3 "$root/.deps/peers/pyg_fullbatch_gcn.py" --mode csr_cached \
      --adj "$data/ogbn-arxiv/netbenchmark/adj_full.npz" > "$logs/pyg_arxiv.jsonl" 2>&1
    say "PyG csr_cached GCN: exit $?; $(tail -1 "$logs/pyg_arxiv.jsonl")"
  else
    skipped "PyG csr_cached GCN (or no .deps/peers)"
  fi
}

# arxiv_bench_run CAP: `gnnpipe bench` of the arxiv SAGE config (3 x 256, [15, 10, 5], 1,024
# seeds), sequential against pipelined over 4 epochs with evaluation: its stage table, speedup and
# efficiency lines go to the summary.
arxiv_bench_run() {
  local t
  if t=$(slot "$1" 45); then
    timeout "$t" "$gnnpipe" bench "$root/configs/bench_arxiv_sage.yaml" --data-dir "$data" --out "$logs/runs/bench_arxiv_sage" \
      --set run.device="$device" --set pipeline.sampler_threads="${SAMPLER_THREADS:-14}" --set run.epochs=4 \
      > "$logs/bench_arxiv_sage.log" 2>&1
    say "bench_arxiv_sage: exit $?"
    grep -E "^(seconds per epoch|  [a-z]|speedup|parameters)" "$logs/bench_arxiv_sage.log" | tee -a "$summary"
  else
    skipped "bench_arxiv_sage"
  fi
}

# sanitize_with TOOL BUDGET_S TEST_SPEC: gnnpipe_gpu_tests (the test cases TEST_SPEC selects, all
# when empty) under compute-sanitizer --tool TOOL, killed after BUDGET_S seconds (or what the
# deadline leaves); the verdict line; returns 0 only when it ran clean.
sanitize_with() {
  local tool=$1 budget=$2 spec=$3 log=$logs/$1.log t
  if [ "$budget" -eq 0 ]; then
    say "sanitize $tool: skipped (budget 0)"
    return 1
  fi
  t=$(slot "$budget" 30) || { skipped "sanitize $tool"; return 1; }
  local args=() tool_args=()
  [ -n "$spec" ] && args+=("$spec")
  # racecheck reports shared-memory hazards inside cuSPARSE's own csrmv_v3_kernel (NVIDIA's code,
  # seen on the H100 with cuSPARSE 12 / CUDA 13): our kernels are what it checks here.
  # shellcheck disable=SC2206  # the arguments are words
  [ "$tool" = racecheck ] && tool_args=(${SANITIZE_RACECHECK_ARGS:---kernel-name-exclude kns=cusparse})
  # --report-api-errors no: a CUDA call that fails where our code does not expect it throws
  # CudaError, so the tests fail and the verdict says so; the ones it expects (a stream-ordered pool
  # at its cap: cudaMallocFromPoolAsync, then cudaGetLastError clearing it) are not findings.
  timeout --kill-after=10 "$t" compute-sanitizer --tool "$tool" "${tool_args[@]}" --report-api-errors no --error-exitcode 86 \
    "$gpu_tests" "${args[@]}" > "$log" 2>&1
  local rc=$?
  local errors cases
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')
  # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)" instead.
  [ -z "$errors" ] && errors=$(grep -oE 'RACECHECK SUMMARY: .*\([0-9]+ errors' "$log" | tail -1 | grep -oE '[0-9]+ errors' | grep -oE '[0-9]+')
  cases=$(test_cases_in "$log")
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    say "sanitize $tool: timed out after $t s (see $tool.log)"
  elif [ -z "$errors" ]; then
    say "sanitize $tool: no ERROR SUMMARY, exit $rc (see $tool.log)"
  elif [ "$errors" -gt 0 ]; then
    say "sanitize $tool: $errors errors (see $tool.log)"
    grep -m 5 -E '^========= (Invalid|Uninitialized|Race|Barrier|Program hit)' "$log" | tee -a "$summary"
  elif [ "$rc" -ne 0 ]; then
    say "sanitize $tool: 0 errors, but the tests failed (exit $rc, ${cases:-?} test cases; see $tool.log)"
  else
    say "sanitize $tool: clean (0 errors, ${cases:-?} test cases)"
    return 0
  fi
  return 1
}

have_sanitizer() {
  command -v compute-sanitizer > /dev/null && return 0
  say "sanitize: compute-sanitizer not found"
  return 1
}

case "$phase" in
  session)
    gpu_test_run 180
    fault_runs
    doctor_run
    # shellcheck disable=SC2086
    cora_runs ${SESSION_CORA_SEEDS:-0}
    gcn_bench_runs
    arxiv_bench_run 90
    checkpoint_runs
    allocator_runs caching async
    placement_runs
    # The test cases whose CUDA code no GPU has run yet (written after the GPU session of
    # 2026-11-24): dropout's draw, add_rows, fp16/bf16 widening, the multi-label loss, GGNN/GaAN's
    # ops and steps, the async pool, and the training steps (aggregate-first GCN).
    if have_sanitizer; then
      sanitize_with memcheck 600 "${SESSION_MEMCHECK_TESTS:-[gated],[loss],[elementwise]~[wrap],[dropout],[allocator],[training]~[runs],[samplers]~[dataset]}"
    fi
    ;;
  tests)
    if [ "$prebuilt" = 1 ] || [ "$device" = cpu ]; then
      # The CPU tests ran on the dev machine; here only the GPU entries of ctest.
      fault_runs
    else
      t=$(slot 300) && { (cd "$build_dir" && timeout "$t" ctest --output-on-failure -j 8) > "$logs/ctest.log" 2>&1; say "ctest: exit $? ($(grep -E 'tests passed' "$logs/ctest.log"))"; }
    fi
    gpu_test_run "${GPU_TESTS_S:-240}" ${GPU_TESTS_SPEC:+"$GPU_TESTS_SPEC"}
    doctor_run
    # shellcheck disable=SC2086
    cora_runs ${CORA_SEEDS:-0 1 2}
    ;;
  sanitize)
    have_sanitizer || exit 1
    compute-sanitizer --version | tail -1
    failed=0
    sanitize_with memcheck "${SANITIZE_MEMCHECK_S:-180}" "${SANITIZE_MEMCHECK_TESTS:-}" || failed=1
    # racecheck sees shared memory only: the kernels with block reductions in shared memory are
    # the loss totals, the fixed-order column sums (bias_grad_accumulate, head_dot_backward) and
    # the SpMM's long rows (a thread block per row, partial sums in shared memory).
    sanitize_with racecheck "${SANITIZE_RACECHECK_S:-100}" \
      "${SANITIZE_RACECHECK_TESTS:-[loss],[elementwise]~[wrap],ops::head_dot*,[spmm]}" || failed=1
    # synccheck: the warp shuffles with partial masks (SpMM lane groups) and the barriers.
    sanitize_with synccheck "${SANITIZE_SYNCCHECK_S:-75}" "${SANITIZE_SYNCCHECK_TESTS:-[ops]~[wrap]}" || failed=1
    sanitize_with initcheck "${SANITIZE_INITCHECK_S:-75}" \
      "${SANITIZE_INITCHECK_TESTS:-[ops]~[wrap],[training]~[runs]}" || failed=1
    # Every launch synchronous: an asynchronous error surfaces at the launch that caused it.
    if [ "${SANITIZE_PLAIN_S:-90}" -eq 0 ]; then
      say "sanitize launch-blocking: skipped (budget 0)"; failed=1
    elif ! t=$(slot "${SANITIZE_PLAIN_S:-90}" 30); then
      skipped "sanitize launch-blocking"; failed=1
    else
      # Without the [concurrency] cases: they assert that a delayed kernel is still running when the
      # host looks, which synchronous launches rule out by design.
      CUDA_LAUNCH_BLOCKING=1 timeout --kill-after=10 "$t" "$gpu_tests" "${SANITIZE_PLAIN_TESTS:-~[concurrency]}" \
        > "$logs/launch_blocking.log" 2>&1
      rc=$?
      cases=$(test_cases_in "$logs/launch_blocking.log")
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        say "sanitize launch-blocking: timed out after $t s (see launch_blocking.log)"; failed=1
      elif [ "$rc" -ne 0 ]; then
        say "sanitize launch-blocking: failed (exit $rc, ${cases:-?} test cases; see launch_blocking.log)"; failed=1
      else
        say "sanitize launch-blocking: passed (${cases:-?} test cases)"
      fi
    fi
    exit "$failed"
    ;;
  bench)
    if t=$(slot 240); then
      GNNPIPE_DATA_DIR=$data timeout "$t" "$bench_gpu" --graph arxiv > "$logs/bench_gpu_arxiv.jsonl" 2>&1
      say "gnnpipe_bench_gpu --graph arxiv: exit $?"
    fi
    # Issue #40: the GPU neighbor sampler beside the CPU sampler and its twin (batches of 1,024
    # seeds, [15, 10, 5]; the GPU test checks the batches are the same).
    if [ -x "$bench_sampler" ] && t=$(slot 120); then
      GNNPIPE_DATA_DIR=$data timeout "$t" "$bench_sampler" --benchmark_filter='^Neighbor(Gpu|Twin)?Arxiv_15_10_5' \
        > "$logs/bench_sampler_arxiv.txt" 2>&1
      say "gnnpipe_bench_sampler Neighbor*Arxiv: exit $? ($(grep -E '^Neighbor' "$logs/bench_sampler_arxiv.txt" | awk '{print $1, $2, $3}' | tr '\n' ';'))"
    fi
    for tf32 in "" --tf32; do
      t=$(slot 120) || continue
      timeout "$t" python3 "$root/tools/bench/pyg_gcn_fullbatch.py" --data-dir "$data" $tf32 >> "$logs/pyg_arxiv.jsonl" 2>&1
      say "pyg_gcn_fullbatch.py $tf32: exit $?"
    done
    # PyG's reference script (../shared/reference/peers, carried by prepare.sh): torch-CSR modes.
    if [ -f "$root/.deps/peers/pyg_fullbatch_gcn.py" ]; then
      for mode in csr_cached csr edge_index; do
        t=$(slot 120) || continue
        timeout "$t" python3 "$root/.deps/peers/pyg_fullbatch_gcn.py" --mode "$mode" \
          --adj "$data/ogbn-arxiv/netbenchmark/adj_full.npz" >> "$logs/pyg_arxiv.jsonl" 2>&1
        say "pyg_fullbatch_gcn.py --mode $mode: exit $?"
      done
    fi
    arxiv_bench_run 180
    if [ "${PRODUCTS:-1}" = 1 ] && t=$(slot 300 120); then
      timeout "$t" "$gnnpipe" bench "$root/configs/bench_products_sage.yaml" --out "$logs/runs/bench_products_sage" \
        --set run.device="$device" > "$logs/bench_products_sage.log" 2>&1
      say "bench_products_sage: exit $?"; tail -15 "$logs/bench_products_sage.log"
    fi
    cat "$logs"/*.jsonl 2>/dev/null | tail -40
    ;;
  products)
    # The graph is generated in each process (about 11 s on 16 cores); evaluation of its 2.45 M
    # nodes comes once, after the last epoch (eval_every past the epochs). PRODUCTS_STEPS picks
    # the steps, in its order (default: eval_device, then all but bench_resident;
    # pipeline.eval_graph is auto elsewhere: on a GPU layerwise_device where it fits, since 2026-11-27):
    #   bench_host      `gnnpipe bench`, float32 features on the host (the issue's setup)
    #   device          features on the device
    #   fp16_host       float16 features on the host
    #   cache_3g        a hot-row cache (issue #14): a 3 GiB limit leaves the 934 MB matrix off the device
    #   eval_resident   the last evaluation over the whole graph's block kept on the device (auto
    #                   keeps it only within a quarter of what the budget leaves, so products
    #                   evaluates layer-wise: 14.7-18.6 s on the H200, host-bound)
    #   bench_resident  `gnnpipe bench` as bench_host, evaluating over the resident block
    #   eval_device     float32 host features, evaluation layer-wise with every layer's outputs on the
    #                   device (pipeline.eval_graph layerwise_device: 2 x 2.45 M x 256 floats, 4.7 GiB)
    #   eval_cache      eval_device evaluating every epoch, its chunks sampled once a run
    #                   (pipeline.eval_cache auto, the GPU's default) against every layer of every
    #                   evaluation (off): not in the default list; its epochs 2-3 show the saving
    products=(--set pipeline.eval_every=1000 --set run.epochs="${PRODUCTS_EPOCHS:-3}")
    products_bench() {
      local name=$1 t
      shift
      if t=$(slot 240 60); then
        timeout "$t" "$gnnpipe" bench "$root/configs/bench_products_sage.yaml" --out "$logs/runs/$name" \
          --set run.device="$device" "${products[@]}" --set memory.features=host "$@" > "$logs/$name.log" 2>&1
        say "$name ($*): exit $?"
        grep -E "^(seconds per epoch|  [a-z]|epoch,|training epoch|speedup|parameters)" "$logs/$name.log" | tee -a "$summary"
        grep -E "\] epoch +[0-9]" "$logs/$name.log" | cut -c16-200 | tee -a "$summary"
      else
        skipped "$name"
      fi
    }
    for step in ${PRODUCTS_STEPS:-eval_device bench_host device fp16_host cache_3g eval_resident}; do
      case $step in
        bench_host) products_bench products_bench_host ;;
        device) config_run products_device 150 bench_products_sage "${products[@]}" --set memory.features=device ;;
        fp16_host)
          config_run products_fp16_host 150 bench_products_sage "${products[@]}" --set memory.features=host \
            --set dataset.feature_dtype=float16 ;;
        cache_3g)
          config_run products_cache_3g 150 bench_products_sage "${products[@]}" --set memory.features=cache \
            --set memory.limit=3GiB ;;
        eval_resident)
          config_run products_eval_resident 150 bench_products_sage "${products[@]}" --set memory.features=device \
            --set pipeline.eval_graph=resident
          grep -E "\] epoch +[0-9]" "$logs/products_eval_resident.log" | cut -c16-140 | tee -a "$summary" ;;
        bench_resident) products_bench products_bench_resident --set pipeline.eval_graph=resident ;;
        eval_device)
          config_run products_eval_device 150 bench_products_sage "${products[@]}" --set memory.features=host \
            --set pipeline.eval_graph=layerwise_device
          grep -E "\] (epoch +[0-9]|  evaluation)" "$logs/products_eval_device.log" | cut -c16-160 | tee -a "$summary" ;;
        eval_cache)
          for cache in off auto; do
            config_run "products_eval_cache_$cache" 150 bench_products_sage "${products[@]}" \
              --set memory.features=host --set pipeline.eval_graph=layerwise_device --set pipeline.eval_every=1 \
              --set pipeline.eval_cache="$cache"
            grep -E "\] epoch +[0-9]" "$logs/products_eval_cache_$cache.log" | cut -c16-160 | tee -a "$summary"
          done ;;
        *) say "products: unknown step '$step' (PRODUCTS_STEPS)" ;;
      esac
    done
    ;;
  fullbatch)
    full=(--set run.epochs="${FULLBATCH_EPOCHS:-3}" --set pipeline.eval_every=1000)
    for step in ${FULLBATCH_STEPS:-plan15 plan8 free limit15 limit8}; do
      case $step in
        plan15) plan_run fullbatch_plan15 60 products_gcn_fullbatch_16g --set memory.limit=15GiB ;;
        plan8) plan_run fullbatch_plan8 60 products_gcn_fullbatch_16g --set memory.limit=8GiB ;;
        free) smi_run fullbatch_free 120 products_gcn_fullbatch_16g "${full[@]}" --set memory.limit=1000GiB ;;
        limit15) smi_run fullbatch_limit15 150 products_gcn_fullbatch_16g "${full[@]}" --set memory.limit=15GiB ;;
        limit8) smi_run fullbatch_limit8 150 products_gcn_fullbatch_16g "${full[@]}" --set memory.limit=8GiB ;;
        *) say "fullbatch: unknown step '$step' (FULLBATCH_STEPS)" ;;
      esac
      grep -E "\] epoch +[0-9]" "$logs/fullbatch_$step.log" 2>/dev/null | cut -c16-220 | tee -a "$summary"
    done
    ;;
  allocators) allocator_runs caching async async caching ;;
  placement) placement_runs ;;
  checkpoints) checkpoint_runs ;;
esac
say "gpu_acceptance $phase: done in $((SECONDS - started)) s"
