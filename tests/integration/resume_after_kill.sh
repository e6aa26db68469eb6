#!/usr/bin/env bash
# Issue #15: a run killed with SIGKILL (a real child process, mid-run) and continued with
# `gnnpipe run --resume` ends with bitwise the parameters (params_checksum) and the per-epoch
# metrics of the same run left alone; its metrics.csv has each epoch once. A run sent SIGTERM
# finishes the step in flight, exits 5 naming the checkpoint, and resumes the same way; a second
# --resume of the directory while that resume runs is refused naming the holder's pid (exit 2)
# and leaves it alone (the resumed run is still bitwise the run left alone). Also:
# --resume with a changed key is refused naming it (exit 2), and without a checkpoint it is a data
# error (exit 3).
# GNNPIPE_TEST_DEVICE (default cpu) runs it on another device (tools/device/gpu_acceptance.sh checkpoints).
set -euo pipefail
gnnpipe=$1
tmp=$(mktemp -d)
# (Only a started process is killed: `kill 0` would be the whole process group, ctest's too.)
pid=
trap 'if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
cat >"$tmp/run.yaml" <<YAML
name: killed
dataset: {synthetic: {nodes: 6000, avg_degree: 8, features: 32, classes: 4, seed: 2}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 256}
optimizer: {type: adam, lr: 0.01}
pipeline: {mode: pipelined, sampler_threads: 2}
# checkpoint_interval 0: checkpoints/last after every epoch, so the run can be killed after epoch 3.
run: {device: ${GNNPIPE_TEST_DEVICE:-cpu}, epochs: 40, seed: 5, checkpoint_interval: 0}
YAML
checksum() { grep -o '"params_checksum": *"[0-9a-f]*"' "$1/summary.json" | grep -o '[0-9a-f]\{16\}'; }
epoch_of() { grep -o '"epoch": *[0-9]*' "$1/checkpoints/last/manifest.json" 2>/dev/null | grep -o '[0-9]*$' || echo 0; }
# start_run DIR EPOCH: starts a run into DIR in the background (its pid in $pid) and returns once
# checkpoints/last holds epoch EPOCH or later (or the run ended by itself).
start_run() {
  "$gnnpipe" run "$tmp/run.yaml" --out "$1" >"$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 6000); do
    [[ $(epoch_of "$1") -ge $2 ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
}

"$gnnpipe" run "$tmp/run.yaml" --out "$tmp/whole" >"$tmp/whole.log" 2>&1 || { cat "$tmp/whole.log" >&2; exit 1; }

start_run "$tmp/killed" 3
kill -9 "$pid" 2>/dev/null || true
wait "$pid" && status=0 || status=$?
[[ $status -eq 137 ]] || { echo "FAIL: the run ended by itself (exit $status) before it could be killed" >&2; exit 1; }
[[ ! -f $tmp/killed/summary.json ]] || { echo "FAIL: a killed run left a summary" >&2; exit 1; }
killed_at=$(epoch_of "$tmp/killed")
echo "killed after checkpoint epoch $killed_at of 40" >&2

"$gnnpipe" run "$tmp/run.yaml" --resume "$tmp/killed" >"$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log" >&2; exit 1; }
whole=$(checksum "$tmp/whole")
resumed=$(checksum "$tmp/killed")
echo "params_checksum: whole $whole, killed at $killed_at and resumed $resumed" >&2
[[ $whole == "$resumed" ]] || { echo "FAIL: the resumed run trained other parameters" >&2; exit 1; }
# Each epoch once, with the same loss and accuracies (the first 5 columns) as the run left alone.
diff <(cut -d, -f1-5 "$tmp/whole/metrics.csv") <(cut -d, -f1-5 "$tmp/killed/metrics.csv") >&2 ||
  { echo "FAIL: metrics.csv differs" >&2; exit 1; }

# SIGTERM: the step in flight finishes, exit 5 with one line naming the checkpoint, a summary
# with status interrupted (replaced by the resumed run's).
start_run "$tmp/termed" 2
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" && status=0 || status=$?
[[ $status -eq 5 ]] || { cat "$tmp/termed.log" >&2; echo "FAIL: SIGTERM gave exit $status, not 5" >&2; exit 1; }
grep -q "^gnnpipe: .*interrupted by signal 15.*--resume" "$tmp/termed.log" ||
  { cat "$tmp/termed.log" >&2; echo "FAIL: no line naming the signal and --resume" >&2; exit 1; }
grep -q '"status": "interrupted"' "$tmp/termed/summary.json" || { echo "FAIL: a stopped run left no summary with status interrupted" >&2; exit 1; }
echo "stopped by SIGTERM after checkpoint epoch $(epoch_of "$tmp/termed")" >&2
"$gnnpipe" run "$tmp/run.yaml" --resume "$tmp/termed" >"$tmp/resume2.log" 2>&1 &
pid=$!
for _ in $(seq 1 6000); do  # until it holds the directory's lock (it writes its pid there)
  [[ $(cat "$tmp/termed/.lock" 2>/dev/null) == "$pid" ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
set +e
"$gnnpipe" run "$tmp/run.yaml" --resume "$tmp/termed" >"$tmp/dup.log" 2>&1
status=$?
set -e
[[ $status -eq 2 ]] && grep -q "^gnnpipe: $tmp/termed: in use by another gnnpipe process (pid $pid)" "$tmp/dup.log" ||
  { cat "$tmp/dup.log" >&2; echo "FAIL: a second --resume of a directory in use gave exit $status" >&2; exit 1; }
wait "$pid" || { cat "$tmp/resume2.log" >&2; exit 1; }
diff <(cut -d, -f1-5 "$tmp/whole/metrics.csv") <(cut -d, -f1-5 "$tmp/termed/metrics.csv") >&2 ||
  { echo "FAIL: metrics.csv differs after a refused second resume" >&2; exit 1; }
[[ $(checksum "$tmp/termed") == "$whole" ]] || { echo "FAIL: the run resumed after SIGTERM trained other parameters" >&2; exit 1; }
grep -q '"status": "done"' "$tmp/termed/summary.json" || { echo "FAIL: the resumed run's summary does not say done" >&2; exit 1; }

set +e
"$gnnpipe" run "$tmp/run.yaml" --set run.epochs=50 --set model.hidden=16 --resume "$tmp/killed" >"$tmp/changed.log" 2>&1
status=$?
set -e
[[ $status -eq 2 ]] && grep -q "model.hidden" "$tmp/changed.log" ||
  { echo "FAIL: a changed model.hidden gave exit $status:" >&2; cat "$tmp/changed.log" >&2; exit 1; }
rm -rf "$tmp/killed/checkpoints/last"
set +e
"$gnnpipe" run "$tmp/run.yaml" --set run.epochs=50 --resume "$tmp/killed" >"$tmp/missing.log" 2>&1
status=$?
set -e
[[ $status -eq 3 ]] && grep -q "checkpoints/last" "$tmp/missing.log" ||
  { echo "FAIL: a missing checkpoint gave exit $status:" >&2; cat "$tmp/missing.log" >&2; exit 1; }
echo "ok" >&2
