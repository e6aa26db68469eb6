#!/usr/bin/env bash
# Issue #18 item 5, faults a run must survive or report in one line (the real program as a child):
#  1. the mapped features file truncated mid-run: SIGBUS becomes one line naming the file and exit
#     code 3, not a crash (core/mapped_file.hpp);
#  2. the features file deleted mid-run: the mapping keeps the data, the run finishes (exit 0);
#  3. an output directory that cannot be created: one line naming it, non-zero, no partial output;
#  4. a full disk while a checkpoint is written (simulated with a file-size limit, `ulimit -f`,
#     SIGXFSZ ignored, so writes fail with EFBIG as they would with ENOSPC): one line naming the
#     file, exit code 3, the previous checkpoint byte for byte intact, no partial left behind, and
#     a resume once there is room finishes the run.
set -euo pipefail
gnnpipe=$1
tmp=$(mktemp -d)
trap 'kill -9 "${pid:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
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
[[ $rc -ne 0 ]] || fail "unwritable --out: exit code 0"
grep -q "^gnnpipe: cannot create the run directory '/proc/gnnpipe_faults/run'" "$tmp/r3.log" ||
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
