#!/usr/bin/env bash
# Issue #15: `gnnpipe infer` with a run's checkpoint. Unlimited, it reports the accuracies the run
# evaluated at its best epoch; under a budget that forces small chunks it stays under the budget
# (peak_device_bytes <= budget_bytes) with the same accuracy; its .npy outputs have the documented
# shapes and dtypes. A budget below the model, another feature width, a layer out of range and a
# missing checkpoint are one-line errors with their exit codes (4, 3, 2, 3) that leave no output.
# Learned node embeddings (model.embedding) round-trip through the checkpoint into infer; a
# multi-label model's infer reports the run's F1 scores and writes the 0/1 predictions. The async
# allocator infers the same chunks within the same budget. memory.cut alone (no training policy)
# picks infer's cut. A checkpoint whose manifest says epoch -3 is refused (exit 3). An infer killed
# with SIGKILL leaves an unfinished --out that the next infer into it replaces; a second infer into
# an --out in use is refused naming the pid (exit 2).
# GNNPIPE_TEST_DEVICE (default cpu) runs it on another device (tools/device/gpu_acceptance.sh checkpoints).
set -euo pipefail
gnnpipe=$1
tmp=$(mktemp -d)
# (Only a started infer is killed: `kill 0` would be the whole process group, ctest's too.)
pid=
trap 'if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
cat >"$tmp/run.yaml" <<YAML
name: inferred
dataset: {synthetic: {nodes: 3000, avg_degree: 8, features: 24, classes: 5, seed: 3}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.3}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 256}
optimizer: {type: adam, lr: 0.01}
pipeline: {mode: pipelined, sampler_threads: 2}
run: {device: ${GNNPIPE_TEST_DEVICE:-cpu}, epochs: 6, seed: 1}
YAML
field() { grep -o "\"$2\": *[^,}]*" "$1" | head -1 | sed 's/.*: *//; s/"//g'; }
fail() { echo "FAIL: $*" >&2; exit 1; }

"$gnnpipe" run "$tmp/run.yaml" --out "$tmp/run" >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log" >&2; exit 1; }
ck=$tmp/run/checkpoints/best

"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/wide" --logits --embeddings 0 >"$tmp/wide.log" 2>&1 ||
  { cat "$tmp/wide.log" >&2; exit 1; }
for key in test_accuracy val_accuracy; do
  [[ $(field "$tmp/run/summary.json" $key) == "$(field "$tmp/wide/summary.json" $key)" ]] ||
    fail "$key: run $(field "$tmp/run/summary.json" $key), infer $(field "$tmp/wide/summary.json" $key)"
done
[[ $(field "$tmp/wide/summary.json" chunks) == 1 ]] || fail "unlimited inference ran in $(field "$tmp/wide/summary.json" chunks) chunks"
# .npy headers: dtype and shape.
head -c 128 "$tmp/wide/predictions.npy" | grep -aq "'descr': '<i8', 'fortran_order': False, 'shape': (3000,)" || fail "predictions.npy header"
head -c 128 "$tmp/wide/logits.npy" | grep -aq "'descr': '<f4', 'fortran_order': False, 'shape': (3000, 5)" || fail "logits.npy header"
head -c 128 "$tmp/wide/embeddings_layer0.npy" | grep -aq "'shape': (3000, 32)" || fail "embeddings_layer0.npy header"

# A budget the model and a few hundred destinations fit: many chunks, under the budget, same accuracy.
params=$(field "$tmp/wide/summary.json" parameter_bytes)
limit=$((params + 120 * 1024))
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/tight" --memory-limit "$limit" >"$tmp/tight.log" 2>&1 ||
  { cat "$tmp/tight.log" >&2; exit 1; }
chunks=$(field "$tmp/tight/summary.json" chunks)
peak=$(field "$tmp/tight/summary.json" peak_device_bytes)
budget=$(field "$tmp/tight/summary.json" budget_bytes)
echo "budget $budget: $chunks chunks, peak $peak" >&2
[[ $chunks -gt 3 ]] || fail "a budget of $budget ran in $chunks chunks"
[[ $peak -le $budget ]] || fail "peak $peak over the budget $budget"
[[ $(field "$tmp/tight/summary.json" test_accuracy) == "$(field "$tmp/wide/summary.json" test_accuracy)" ]] ||
  fail "test accuracy under the budget: $(field "$tmp/tight/summary.json" test_accuracy)"

# memory.allocator async (a cudaMallocAsync pool; host memory per request on the CPU): the same
# chunks, peak and accuracy, and the driver never holds more than the budget. A GPU's pool
# reserves device memory in 32 MiB units, so there a budget below one is refused (exit 2, naming
# the key) and the comparison runs at a budget of two units.
caching=$tmp/tight
reserve=()
if [[ ${GNNPIPE_TEST_DEVICE:-cpu} == cuda* ]]; then
  set +e
  "$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/async_small" --memory-limit "$limit" \
    --set memory.allocator=async >"$tmp/async_small.log" 2>&1
  status=$?
  set -e
  [[ $status -eq 2 ]] || fail "async under one pool unit: exit $status, not 2"
  grep -q "memory.allocator: async on cuda:0 needs a budget of at least 32.00 MiB" "$tmp/async_small.log" ||
    fail "async under one pool unit: $(tail -1 "$tmp/async_small.log")"
  # Two whole units and no reserve: the same budget for both allocators.
  limit=$((64 * 1024 * 1024))
  reserve=(--set memory.reserve=0)
  "$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/pages" --memory-limit "$limit" "${reserve[@]}" \
    >"$tmp/pages.log" 2>&1 || { cat "$tmp/pages.log" >&2; exit 1; }
  caching=$tmp/pages
  budget=$(field "$caching/summary.json" budget_bytes)
  [[ $budget -eq $limit ]] || fail "budget $budget at a limit of $limit with no reserve"
fi
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/async" --memory-limit "$limit" "${reserve[@]}" \
  --set memory.allocator=async >"$tmp/async.log" 2>&1 || { cat "$tmp/async.log" >&2; exit 1; }
[[ $(field "$tmp/async/summary.json" allocator) == async ]] || fail "allocator: $(field "$tmp/async/summary.json" allocator)"
for key in chunks peak_device_bytes test_accuracy; do
  [[ $(field "$tmp/async/summary.json" $key) == "$(field "$caching/summary.json" $key)" ]] ||
    fail "async $key: $(field "$tmp/async/summary.json" $key), caching $(field "$caching/summary.json" $key)"
done
[[ $(field "$tmp/async/summary.json" peak_held_bytes) -le $budget ]] ||
  fail "async pool held $(field "$tmp/async/summary.json" peak_held_bytes), more than $budget"

expect() {  # expect CODE PATTERN ARGS...: the command fails with CODE, one line matching PATTERN, no output dir
  local code=$1 pattern=$2 status
  shift 2
  set +e
  "$gnnpipe" infer "$tmp/run.yaml" --out "$tmp/refused" "$@" >"$tmp/refused.log" 2>&1
  status=$?
  set -e
  [[ $status -eq $code ]] && grep -q "$pattern" "$tmp/refused.log" || { cat "$tmp/refused.log" >&2; fail "expected exit $code and '$pattern' for $*, got $status"; }
  [[ $(grep -c "^gnnpipe: " "$tmp/refused.log") -eq 1 ]] || fail "not one error line for $*"
  [[ ! -e $tmp/refused ]] || fail "a refused job left $tmp/refused"
}
expect 4 "cannot hold the model" --checkpoint "$ck" --memory-limit 2KiB
expect 3 "feature columns" --checkpoint "$ck" --set dataset.synthetic.features=16
expect 2 "embeddings" --checkpoint "$ck" --embeddings 2
expect 3 "no checkpoint there" --checkpoint "$tmp/run/checkpoints/none"

# memory.cut without memory.policy cut: infer's own cut strategy (training refuses it without the policy).
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/cut" --memory-limit "$limit" --set memory.cut=random \
  >"$tmp/cut.log" 2>&1 || { cat "$tmp/cut.log" >&2; fail "memory.cut alone was refused by infer"; }
[[ $(field "$tmp/cut/summary.json" cut) == random ]] || fail "infer's cut: $(field "$tmp/cut/summary.json" cut)"
# A manifest field out of range: one line naming the manifest, exit 3, as --resume gives.
cp -r "$ck" "$tmp/negative"
sed -i 's/"epoch": [0-9]*/"epoch": -3/' "$tmp/negative/manifest.json"
expect 3 "negative/manifest.json: epoch -3 is negative" --checkpoint "$tmp/negative"

# SIGKILL while it infers (a large graph under a small budget: seconds of chunks): no summary.json,
# the directory marked unfinished; meanwhile a second infer into the same --out is refused naming
# the pid; afterwards an infer into it replaces the leftovers and finishes.
big=(--set dataset.synthetic.nodes=1000000 --memory-limit 1MiB)
"$gnnpipe" infer "$tmp/run.yaml" "${big[@]}" --checkpoint "$ck" --out "$tmp/killed" >"$tmp/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1 6000); do
  [[ -e $tmp/killed/config.yaml ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
set +e
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/killed" >"$tmp/busy.log" 2>&1
busy=$?
kill -9 "$pid" 2>/dev/null
wait "$pid"
status=$?
set -e
[[ $status -eq 137 ]] || { cat "$tmp/killed.log" >&2; fail "the infer ended by itself (exit $status) before it could be killed"; }
[[ $busy -eq 2 ]] && grep -q "^gnnpipe: $tmp/killed: in use by another gnnpipe process (pid $pid)" "$tmp/busy.log" ||
  { cat "$tmp/busy.log" >&2; fail "a second infer into an --out in use gave exit $busy"; }
[[ ! -e $tmp/killed/summary.json && -e $tmp/killed/.unfinished && ! -e $tmp/killed/predictions.npy ]] ||
  fail "a killed infer left $(ls -A "$tmp/killed" | tr '\n' ' ')"
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/killed" >"$tmp/rerun.log" 2>&1 ||
  { cat "$tmp/rerun.log" >&2; fail "an infer into a killed infer's --out was refused"; }
grep -q "replacing the files of an infer that did not finish" "$tmp/rerun.log" || fail "the rerun did not say it replaced the leftovers"
[[ $(field "$tmp/killed/summary.json" status) == done && ! -e $tmp/killed/.unfinished && -e $tmp/killed/predictions.npy ]] ||
  fail "the rerun left $(ls -A "$tmp/killed" | tr '\n' ' ')"
[[ $(field "$tmp/killed/summary.json" test_accuracy) == "$(field "$tmp/wide/summary.json" test_accuracy)" ]] ||
  fail "the rerun's accuracy: $(field "$tmp/killed/summary.json" test_accuracy)"
# A finished --out is not replaced.
set +e
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$ck" --out "$tmp/killed" >"$tmp/again.log" 2>&1
status=$?
set -e
[[ $status -eq 2 ]] && grep -q "exists and is not empty" "$tmp/again.log" || { cat "$tmp/again.log" >&2; fail "a finished --out was reused"; }

# A model that learned node embeddings (model.embedding): infer rebuilds the table from the
# checkpoint and reproduces the run's accuracies; a graph of another node count is refused.
"$gnnpipe" run "$tmp/run.yaml" --set model.embedding=16 --set run.epochs=3 --out "$tmp/embed" >"$tmp/embed.log" 2>&1 ||
  { cat "$tmp/embed.log" >&2; exit 1; }
"$gnnpipe" infer "$tmp/run.yaml" --set model.embedding=16 --checkpoint "$tmp/embed/checkpoints/best" --out "$tmp/embed-infer" \
  >"$tmp/embed-infer.log" 2>&1 || { cat "$tmp/embed-infer.log" >&2; exit 1; }
for key in test_accuracy val_accuracy; do
  [[ $(field "$tmp/embed/summary.json" $key) == "$(field "$tmp/embed-infer/summary.json" $key)" ]] ||
    fail "embedding $key: run $(field "$tmp/embed/summary.json" $key), infer $(field "$tmp/embed-infer/summary.json" $key)"
done
expect 3 "learned embedding has a row for each of the 3000 nodes" --checkpoint "$tmp/embed/checkpoints/best" \
  --set model.embedding=16 --set dataset.synthetic.nodes=2000
expect 3 "has a learned embedding, the config's model.embedding is 0" --checkpoint "$tmp/embed/checkpoints/best"

# Multi-label (BlogCatalog, when ../shared has it): infer reports the run's F1 scores under their
# names and writes the 0/1 label matrix as predictions.
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${GNNPIPE_DATA_DIR:-$root/../shared/datasets}
if [[ -e $data/blogcatalog ]]; then
  ml=(--set model.embedding=16 --set run.epochs=3 --set model.hidden=16 --set "run.device=${GNNPIPE_TEST_DEVICE:-cpu}")
  GNNPIPE_DATA_DIR=$data "$gnnpipe" run "$root/configs/blogcatalog_gcn.yaml" "${ml[@]}" --out "$tmp/ml" >"$tmp/ml.log" 2>&1 ||
    { cat "$tmp/ml.log" >&2; exit 1; }
  GNNPIPE_DATA_DIR=$data "$gnnpipe" infer "$root/configs/blogcatalog_gcn.yaml" "${ml[@]}" --checkpoint "$tmp/ml/checkpoints/best" \
    --out "$tmp/ml-infer" >"$tmp/ml-infer.log" 2>&1 || { cat "$tmp/ml-infer.log" >&2; exit 1; }
  [[ $(field "$tmp/ml-infer/summary.json" metric) == micro_f1_topk ]] || fail "multi-label infer's metric"
  for key in test_micro_f1_topk val_micro_f1_topk test_micro_f1 test_macro_f1; do
    [[ $(field "$tmp/ml/summary.json" $key) == "$(field "$tmp/ml-infer/summary.json" $key)" ]] ||
      fail "multi-label $key: run $(field "$tmp/ml/summary.json" $key), infer $(field "$tmp/ml-infer/summary.json" $key)"
  done
  head -c 128 "$tmp/ml-infer/predictions.npy" | grep -aq "'descr': '|u1', 'fortran_order': False, 'shape': (10312, 39)" ||
    fail "multi-label predictions.npy header"
else
  echo "SKIP multi-label infer: $data/blogcatalog not found" >&2
fi
# Sparse features (Cora, when ../shared has it): on the CPU, layer 0 reads their CSR form
# (summary.json sparse_feature_nonzeros) and infer reports the run's accuracies, as evaluation
# reads the same form; a budget too tight for the CSR form beside whole in-edges keeps the dense
# rows, whose x W sums in another order (logits within 1e-6): accuracies within 0.5 %.
if [[ -e $data/cora && ${GNNPIPE_TEST_DEVICE:-cpu} == cpu ]]; then
  cora=(--set run.epochs=40)
  GNNPIPE_DATA_DIR=$data "$gnnpipe" run "$root/configs/cora_gcn.yaml" "${cora[@]}" --out "$tmp/cora" >"$tmp/cora.log" 2>&1 ||
    { cat "$tmp/cora.log" >&2; exit 1; }
  for limit in none 600KiB; do
    budget=(); [[ $limit == none ]] || budget=(--memory-limit "$limit")
    GNNPIPE_DATA_DIR=$data "$gnnpipe" infer "$root/configs/cora_gcn.yaml" "${cora[@]}" "${budget[@]}" \
      --checkpoint "$tmp/cora/checkpoints/best" --out "$tmp/cora-$limit" >"$tmp/cora-$limit.log" 2>&1 ||
      { cat "$tmp/cora-$limit.log" >&2; exit 1; }
    for key in test_accuracy val_accuracy; do
      run_score=$(field "$tmp/cora/summary.json" $key) infer_score=$(field "$tmp/cora-$limit/summary.json" $key)
      if [[ $limit == none ]]; then
        [[ $run_score == "$infer_score" ]] || fail "Cora $key: run $run_score, infer $infer_score"
      else
        awk -v a="$run_score" -v b="$infer_score" 'BEGIN { d = a - b; exit !(d <= 0.005 && d >= -0.005) }' ||
          fail "Cora ($limit) $key: run $run_score, infer $infer_score"
      fi
    done
  done
  [[ $(field "$tmp/cora-none/summary.json" sparse_feature_nonzeros) == 49216 ]] || fail "Cora infer: no CSR features"
  [[ $(field "$tmp/cora-600KiB/summary.json" sparse_feature_nonzeros) == null ]] || fail "Cora infer at 600KiB: CSR features"
  (( $(field "$tmp/cora-600KiB/summary.json" peak_device_bytes) <= 600 * 1024 )) || fail "Cora infer at 600KiB: over the budget"
else
  echo "SKIP sparse-feature infer: $data/cora not found (or not the CPU)" >&2
fi
echo ok >&2
