#!/usr/bin/env bash
# tools/device/gpu_acceptance.sh rehearsed on the CPU backend (ACCEPT_DEVICE=cpu): a GPU session
# has a few device minutes, which must not go to the script's own plumbing. An unknown phase is
# refused (exit 2); the tests phase prints one verdict line per step, keeps them in
# $OUT/tests.txt, and leaves its logs and run directories (without checkpoints) in
# $OUT/tests_logs.tar.gz; a session whose deadline leaves no room skips every step with a line
# naming it and still ends with its "done" line, and so does the products phase.
# Usage: gpu_acceptance_rehearsal.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/tools/device/gpu_acceptance.sh
data=${GNNPIPE_DATA_DIR:-$root/../shared/datasets}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect FILE LINE_PREFIX: FILE has exactly one line that starts with LINE_PREFIX.
expect() {
  local n
  n=$(grep -c -F -- "$2" "$1" || true)
  [ "$n" -eq 1 ] || { cat "$1" >&2; fail "$(basename "$1"): $n lines with '$2', expected 1"; }
}

rc=0
OUT=$tmp/unknown ACCEPT_DEVICE=cpu bash "$script" nonsense > "$tmp/unknown.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "an unknown phase exits $rc, expected 2"
grep -q "unknown phase 'nonsense'" "$tmp/unknown.log" || fail "an unknown phase is not named: $(cat "$tmp/unknown.log")"

run_tests_phase() {
  OUT=$tmp/tests ACCEPT_DEVICE=cpu BUILD_DIR=$build ACCEPT_DATA_DIR=$data CORA_SEEDS=0 bash "$script" tests \
    > "$tmp/tests.log" 2>&1
}
run_tests_phase || { cat "$tmp/tests.log" >&2; fail "the tests phase exits non-zero"; }
verdicts=$tmp/tests/tests.txt
for step in "gnnpipe_gpu_fault_test pipelined: exit" "gnnpipe_gpu_fault_test sequential: exit" \
  "gnnpipe_gpu_tests: exit" "gnnpipe doctor: exit 0" "gpu_acceptance tests: done in"; do
  expect "$verdicts" "$step"
done
# Every verdict line was printed as well as kept.
while IFS= read -r line; do
  grep -qxF -- "$line" "$tmp/tests.log" || fail "kept but not printed: $line"
done < "$verdicts"
tar -tzf "$tmp/tests/tests_logs.tar.gz" > "$tmp/listing"
grep -qx './doctor.log' "$tmp/listing" || fail "doctor.log is not in tests_logs.tar.gz"
if [ -d "$data/cora" ]; then
  expect "$verdicts" "cora_gcn seed 0 on cpu: exit 0; best epoch"
  grep -qx './runs/cora_gcn_cpu_s0/summary.json' "$tmp/listing" || fail "the Cora run directory is not in the tarball"
  ! grep -q '/checkpoints/' "$tmp/listing" || fail "checkpoints went into the tarball"
else
  echo "SKIP (Cora run): no $data/cora"
fi

OUT=$tmp/session ACCEPT_DEVICE=cpu BUILD_DIR=$build ACCEPT_DATA_DIR=$data DEADLINE_S=5 bash "$script" session \
  > "$tmp/session.log" 2>&1 || { cat "$tmp/session.log" >&2; fail "a session past its deadline exits non-zero"; }
verdicts=$tmp/session/session.txt
for step in "gnnpipe_gpu_tests: skipped" "gnnpipe_gpu_fault_test pipelined: skipped" "gnnpipe doctor: skipped" \
  "cora_gcn seed 0 on cpu: skipped" "gnnpipe_bench_gpu --only gcn: skipped" "resume_after_kill on cpu: skipped" \
  "infer_cli on cpu: skipped" "allocators_bench_arxiv_sage_caching: skipped" "allocators_arxiv_gcn_fullbatch_async: skipped" \
  "placement_host: skipped" "placement_eval_layerwise: skipped" "placement_eval_layerwise_device: skipped" \
  "gpu_acceptance session: done in"; do
  expect "$verdicts" "$step"
done
[ -f "$tmp/session/session_logs.tar.gz" ] || fail "no session_logs.tar.gz"

OUT=$tmp/products ACCEPT_DEVICE=cpu BUILD_DIR=$build DEADLINE_S=5 bash "$script" products > "$tmp/products.log" 2>&1 ||
  { cat "$tmp/products.log" >&2; fail "the products phase past its deadline exits non-zero"; }
for step in "products_eval_device: skipped" "products_bench_host: skipped" "products_device: skipped" "products_fp16_host: skipped" \
  "products_cache_3g: skipped" "products_eval_resident: skipped" "gpu_acceptance products: done in"; do
  expect "$tmp/products/products.txt" "$step"
done
OUT=$tmp/fullbatch ACCEPT_DEVICE=cpu BUILD_DIR=$build DEADLINE_S=5 bash "$script" fullbatch > "$tmp/fullbatch.log" 2>&1 ||
  { cat "$tmp/fullbatch.log" >&2; fail "the fullbatch phase past its deadline exits non-zero"; }
for step in "fullbatch_plan15: skipped" "fullbatch_plan8: skipped" "fullbatch_free: skipped" "fullbatch_limit15: skipped" \
  "fullbatch_limit8: skipped" "gpu_acceptance fullbatch: done in"; do
  expect "$tmp/fullbatch/fullbatch.txt" "$step"
done
echo ok
