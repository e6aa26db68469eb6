#!/usr/bin/env bash
# Issue #18 item 5, faults a run must survive or report in one line (the real program as a child):
#  1. the mapped features file truncated mid-run: SIGBUS becomes one line naming the file and exit
#     code 3, not a crash (core/mapped_file.hpp);
#  2. the features file deleted mid-run: the mapping keeps the data, the run finishes (exit 0);
#  3. an output directory that cannot be created: one line naming it, exit code 2 (as for one whose
#     parent is not writable), no partial output;
#  4. a full disk while a checkpoint is written (simulated with a file-size limit, `ulimit -f`,
#     SIGXFSZ ignored, so writes fail with EFBIG as they would with ENOSPC): one line naming the
#     file, exit code 3, the previous checkpoint byte for byte intact, no partial left behind, and
#     a resume once there is room finishes the run;
#  5. a full disk while gnnpipe infer writes its outputs (the same file-size limit): exit code 3, no
#     output left (predictions.npy, logits.npy), the error in log.txt and summary.json "status":
#     "failed", as a run records it; once there is room, infer into the same --out finishes.
set -euo pipefail
gnnpipe=$1
tmp=$(mktemp -d)
# (Only a started process is killed: `kill 0` would be the whole process group, ctest's too.)
pid=
trap 'if [[ -n $pid ]]; then kill -9 "$pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$gnnpipe" data synth --out "$tmp/graph" --nodes 20000 --avg-degree 8 --features 256 --classes 4 --seed 1 >/dev/null 2>&1
write_config() {  # a neighbor-sampled run that gathers mapped feature rows in every batch
  cat >"$tmp/run.yaml" <<YAML
name: faults
dataset: {path: $1}
model: {type: sage, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 256}
optimizer: {type: adam, lr: 0.01}
memory: {features: host}
run: {device: cpu, epochs: $2, seed: 0}
YAML
}
# start_mid_run NAME EPOCHS: a run over its own copy of the graph ($tmp/g-NAME), writing
# $tmp/r-NAME, started in the background (its pid in $pid); returns once it has finished an epoch
# (metrics.csv has a row), so the fault that follows hits a run in progress.
start_mid_run() {
  cp -r "$tmp/graph" "$tmp/g-$1"
  write_config "$tmp/g-$1" "$2"
  "$gnnpipe" run "$tmp/run.yaml" --out "$tmp/r-$1" >"$tmp/r-$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [[ $(wc -l 2>/dev/null <"$tmp/r-$1/metrics.csv" || echo 0) -ge 2 ]] && return 0
    kill -0 "$pid" 2>/dev/null || fail "$1: the run ended before its first epoch: $(tail -3 "$tmp/r-$1.log")"
    sleep 0.1
  done
  fail "$1: no epoch after 60 s"
}

# 1. Truncated while mapped.
start_mid_run truncated 500
truncate -s 4096 "$tmp/g-truncated/features.npy"
rc=0
wait "$pid" || rc=$?
log=$tmp/r-truncated.log
[[ $rc -eq 3 ]] || fail "truncated features: exit code $rc, expected 3: $(tail -3 "$log")"
grep -q "^gnnpipe: $tmp/g-truncated/features.npy: the file was truncated or replaced while mapped" "$log" ||
  fail "truncated features: no one-line message naming the file: $(tail -3 "$log")"
echo "1. truncated while mapped: exit 3, one line naming the file"

# 2. Deleted while mapped: the data stays reachable through the mapping.
start_mid_run deleted 4
rm "$tmp/g-deleted/features.npy"
wait "$pid" || fail "deleted features: the run failed: $(tail -3 "$tmp/r-deleted.log")"
echo "2. deleted while mapped: the run finished"

# 3. An output directory that cannot be created (/proc takes no new entries, even for root).
write_config "$tmp/graph" 2
rc=0
"$gnnpipe" run "$tmp/run.yaml" --out /proc/gnnpipe_faults/run >"$tmp/r3.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "unwritable --out: exit code $rc, expected 2"
grep -q "^gnnpipe: --out /proc/gnnpipe_faults/run: cannot create the run directory: " "$tmp/r3.log" ||
  fail "unwritable --out: $(tail -2 "$tmp/r3.log")"
echo "3. unwritable output directory: exit $rc, one line"

# 4. A full disk while writing a checkpoint.
write_config "$tmp/graph" 3
"$gnnpipe" run "$tmp/run.yaml" --out "$tmp/r4" --set run.checkpoint_every=1 >"$tmp/r4.log" 2>&1 ||
  fail "checkpointed run: $(tail -3 "$tmp/r4.log")"
(cd "$tmp/r4/checkpoints/last" && find . -type f | sort | xargs md5sum) >"$tmp/before.md5"
rc=0
(
  trap '' XFSZ
  ulimit -f 30  # KiB: the 33 KiB optimizer arrays no longer fit
  exec "$gnnpipe" run "$tmp/run.yaml" --out "$tmp/r4" --resume "$tmp/r4" --set run.epochs=6 --set run.checkpoint_every=1
) >"$tmp/r4full.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || fail "full disk: exit code $rc, expected 3: $(tail -3 "$tmp/r4full.log")"
grep -q "^gnnpipe: .*checkpoints/.last.partial/.*: write failed: File too large" "$tmp/r4full.log" ||
  fail "full disk: no one-line message naming the file: $(tail -3 "$tmp/r4full.log")"
(cd "$tmp/r4/checkpoints/last" && md5sum --quiet -c "$tmp/before.md5") || fail "full disk: the previous checkpoint changed"
[[ ! -e "$tmp/r4/checkpoints/.last.partial" ]] || fail "full disk: the partial checkpoint was left behind"
"$gnnpipe" run "$tmp/run.yaml" --out "$tmp/r4" --resume "$tmp/r4" --set run.epochs=6 --set run.checkpoint_every=1 \
  >"$tmp/r4resume.log" 2>&1 || fail "resume after the full disk: $(tail -3 "$tmp/r4resume.log")"
grep -q '"epoch": *6' "$tmp/r4/checkpoints/last/manifest.json" || fail "resume after the full disk did not reach epoch 6"
echo "4. full disk during a checkpoint: exit 3, previous checkpoint intact, resumed to the end"

# 5. A full disk while infer writes its outputs: the 156 KiB predictions.npy does not fit under 30 KiB.
rc=0
(
  trap '' XFSZ
  ulimit -f 30
  exec "$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$tmp/r4/checkpoints/last" --out "$tmp/i5" --logits
) >"$tmp/i5.log" 2>&1 || rc=$?
[[ $rc -eq 3 ]] || fail "infer on a full disk: exit code $rc, expected 3: $(tail -3 "$tmp/i5.log")"
grep -q "^gnnpipe: $tmp/i5/.partial/predictions.npy.tmp: write failed: File too large" "$tmp/i5.log" ||
  fail "infer on a full disk: no one-line message naming the file: $(tail -3 "$tmp/i5.log")"
left=$(cd "$tmp/i5" && ls -A | tr '\n' ' ')
[[ $left == ".lock .unfinished config.yaml log.txt summary.json " ]] || fail "infer on a full disk left: $left"
grep -q '"status": "failed"' "$tmp/i5/summary.json" || fail "infer on a full disk: summary.json does not say failed"
grep -q "\[error\] .*predictions.npy.tmp: write failed: File too large" "$tmp/i5/log.txt" || fail "infer on a full disk: the error is not in log.txt"
"$gnnpipe" infer "$tmp/run.yaml" --checkpoint "$tmp/r4/checkpoints/last" --out "$tmp/i5" --logits >"$tmp/i5ok.log" 2>&1 ||
  fail "infer into the same --out once there is room: $(tail -3 "$tmp/i5ok.log")"
grep -q '"status": "done"' "$tmp/i5/summary.json" && [[ -e $tmp/i5/logits.npy && ! -e $tmp/i5/.unfinished ]] ||
  fail "infer once there is room left: $(cd "$tmp/i5" && ls -A | tr '\n' ' ')"
echo "5. full disk while infer writes: exit 3, no outputs, failed in summary.json and log.txt, rerun into the same --out"
