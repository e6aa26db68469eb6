#!/usr/bin/env bash
# Issue #42, data-parallel training over MPI ranks on the CPU backend: `mpirun -np 2 gnnpipe run`
# trains what one process trains on the same batches (each rank a share of every batch's loss
# rows, gradients summed): Cora GCN (full batch) and Amazon Computers SAGE (neighbor sampling),
# every epoch's loss within 1e-5 relative of the single process's and its scores equal; rank 0
# alone writes the run directory (summary.json "ranks": 2, every rank's stage table in
# "rank_stages") and the other rank leaves nothing
# behind; the ranks' parameters are compared after every epoch inside the run (a mismatch fails
# it). `--ranks 2` starts mpirun itself, and a 2-rank run resumed after an epoch, or after a
# SIGTERM mid-epoch, is bitwise the uninterrupted one. With dataset.partition (hash, metis) each
# rank holds about half the feature rows and trains bitwise what the unpartitioned ranks train.
# A failing rank ends the whole job with its one-line error; a rank killed mid-epoch, or one
# that stops answering (run.stall_timeout), ends the job within 30 s. Skips (77) without mpirun or
# without the datasets.
set -euo pipefail
gnnpipe=$1 root=$2
data=${GNNPIPE_DATA_DIR:-$root/../shared/datasets}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
[ -d "$data/cora" ] && [ -d "$data/amazon-computers" ] || { echo "SKIP: no $data/cora or $data/amazon-computers"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# As root (CI), OpenMPI asks for consent; --oversubscribe: 2 ranks on however many cores there are.
mpi=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
export GNNPIPE_DATA_DIR=$data TMPDIR=$tmp
fail() { echo "ranks_cpu: $*"; exit 1; }

compare() {  # name config sets...: one process against two ranks
  local name=$1 config=$2
  shift 2
  "$gnnpipe" run "$config" "$@" --out "$tmp/$name-1" >"$tmp/$name-1.log" 2>&1 || { cat "$tmp/$name-1.log"; fail "$name: one process failed"; }
  "${mpi[@]}" "$gnnpipe" run "$config" "$@" --out "$tmp/$name-2" >"$tmp/$name-2.log" 2>&1 ||
    { cat "$tmp/$name-2.log"; fail "$name: two ranks failed"; }
  [ "$(grep -c 'summary in' "$tmp/$name-2.log")" = 1 ] || fail "$name: expected rank 0's result line alone"
  python3 - "$tmp/$name-1" "$tmp/$name-2" "$name" <<'PY'
import csv, json, sys
one, two, name = sys.argv[1:4]
rows = lambda d: list(csv.DictReader(open(f"{d}/metrics.csv")))
a, b = rows(one), rows(two)
assert len(a) == len(b) > 0, f"{name}: {len(a)} and {len(b)} epochs"
worst = 0.0
for x, y in zip(a, b):
    la, lb = float(x["loss"]), float(y["loss"])
    worst = max(worst, abs(la - lb) / abs(la))
    for k in ("train_acc", "val_acc", "test_acc"):
        assert x[k] == y[k], f"{name} epoch {x['epoch']}: {k} {x[k]} (one process) vs {y[k]} (two ranks)"
s = json.load(open(f"{two}/summary.json"))
assert s["ranks"] == 2 and s["status"] == "done", f"{name}: summary ranks {s.get('ranks')}, status {s['status']}"
stages = s["rank_stages"]
assert [r["rank"] for r in stages] == [0, 1] and all(r["stage_busy_s"]["train"] > 0 for r in stages), \
    f"{name}: rank_stages {stages}"
print(f"{name}: {len(a)} epochs, worst relative loss difference {worst:.2e}")
assert worst <= 1e-5, f"{name}: losses differ by {worst:.2e} relative (> 1e-5)"
PY
}

compare cora_gcn "$root/configs/cora_gcn.yaml" --set run.epochs=20 --set run.checkpoint_every=0
compare amazon_sage_neighbor "$root/configs/amazon_computers_sage_neighbor.yaml" --set run.epochs=3 --set run.checkpoint_every=0

# dataset.partition: each rank keeps about half the feature rows and reads the others from the other
# rank; the training is bitwise the unpartitioned 2-rank run's (the same rows reach every batch).
partitioned() {  # name scheme config sets...: against "$tmp/$name-2", the unpartitioned 2-rank run
  local name=$1 scheme=$2 config=$3
  shift 3
  GNNPIPE_CACHE_DIR=$tmp/cache "${mpi[@]}" "$gnnpipe" run "$config" "$@" --set dataset.partition="$scheme" \
    --out "$tmp/$name-p" >"$tmp/$name-p.log" 2>&1 || { cat "$tmp/$name-p.log"; fail "$name: two ranks with dataset.partition $scheme failed"; }
  python3 - "$tmp/$name-2" "$tmp/$name-p" "$name" "$scheme" <<'PY'
import csv, json, sys
whole, parted, name, scheme = sys.argv[1:5]
a, b = (json.load(open(f"{d}/summary.json")) for d in (whole, parted))
assert a["params_checksum"] == b["params_checksum"], \
    f"{name}: partitioned {b['params_checksum']} != unpartitioned {a['params_checksum']}"
loss = lambda d: [r["loss"] for r in csv.DictReader(open(f"{d}/metrics.csv"))]
assert loss(whole) == loss(parted), f"{name}: the partitioned run's losses differ"
assert a["provenance"]["dataset"] == b["provenance"]["dataset"], "the dataset's record differs"
p = b["feature_partition"]
nodes = b["provenance"]["dataset"]["nodes"]
assert p["scheme"] == scheme and p["ranks"] == 2 and sum(p["rows_per_rank"]) == nodes, p
for r in b["rank_stages"]:
    held = r["feature_partition"]["rows_held"]
    assert held == p["rows_per_rank"][r["rank"]] and 0.4 * nodes <= held <= 0.6 * nodes, (r["rank"], held, nodes)
    assert r["feature_partition"]["remote_rows_read"] > 0, r["feature_partition"]
print(f"{name}: dataset.partition {scheme}: rows per rank {p['rows_per_rank']} of {nodes}, "
      f"{p['remote_rows_read']} rows read from the other rank by rank 0; bitwise the unpartitioned run")
PY
}
partitioned cora_gcn hash "$root/configs/cora_gcn.yaml" --set run.epochs=20 --set run.checkpoint_every=0
partitioned amazon_sage_neighbor metis "$root/configs/amazon_computers_sage_neighbor.yaml" --set run.epochs=3 --set run.checkpoint_every=0
# A feature matrix on the device would be the whole one: refused with a one-line error.
rc=0
"${mpi[@]}" "$gnnpipe" run "$root/configs/cora_gcn.yaml" --set dataset.partition=hash --set memory.features=device \
  --out "$tmp/device" >"$tmp/device.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$tmp/device.log"; fail "memory.features device with dataset.partition: exit $rc, not 2"; }
grep -q "gnnpipe: rank [01] of 2: memory.features: device holds the whole feature matrix" "$tmp/device.log" ||
  { cat "$tmp/device.log"; fail "no one-line error for memory.features device with dataset.partition"; }
# One process keeps every row: the key changes nothing there.
"$gnnpipe" run "$root/configs/cora_gcn.yaml" --set run.epochs=20 --set run.checkpoint_every=0 --set dataset.partition=hash \
  --out "$tmp/one-p" >"$tmp/one-p.log" 2>&1 || { cat "$tmp/one-p.log"; fail "dataset.partition in one process failed"; }
grep -q '"params_checksum": "'"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["params_checksum"])' "$tmp/cora_gcn-1/summary.json")" \
  "$tmp/one-p/summary.json" || fail "dataset.partition changed a one-process run"
leftover=$(find "$tmp" -maxdepth 1 -name 'gnnpipe-rank*' | head -1)
[ -z "$leftover" ] || fail "a follower rank left $leftover behind"

# gnnpipe run --ranks 2 starts mpirun itself; a 2-rank run stopped after epoch 3 and resumed
# (every rank reads rank 0's checkpoint) ends bitwise where the uninterrupted run ends.
cora=("$root/configs/cora_gcn.yaml" -q --ranks 2)
"$gnnpipe" run "${cora[@]}" --set run.epochs=6 --out "$tmp/full" >"$tmp/full.log" 2>&1 || { cat "$tmp/full.log"; fail "--ranks 2 failed"; }
"$gnnpipe" run "${cora[@]}" --set run.epochs=3 --out "$tmp/half" >"$tmp/half.log" 2>&1 || { cat "$tmp/half.log"; fail "--ranks 2 (3 epochs) failed"; }
"$gnnpipe" run "$tmp/half/config.yaml" -q --ranks 2 --resume "$tmp/half" --set run.epochs=6 >"$tmp/resume.log" 2>&1 ||
  { cat "$tmp/resume.log"; fail "--resume of a 2-rank run failed"; }
python3 - "$tmp/full" "$tmp/half" <<'PY'
import json, sys
full, resumed = (json.load(open(f"{d}/summary.json")) for d in sys.argv[1:3])
assert full["ranks"] == resumed["ranks"] == 2, (full.get("ranks"), resumed.get("ranks"))
assert full["params_checksum"] == resumed["params_checksum"], \
    f"resumed 2-rank run {resumed['params_checksum']} != uninterrupted {full['params_checksum']}"
print("ranks_cpu: --ranks 2 resumed after epoch 3 ends bitwise as the uninterrupted run")
PY

# A stop request mid-epoch (SIGTERM to mpirun, forwarded to every rank) stops both ranks before
# the same step; rank 0's checkpoints/last holds the partial epoch, and the resumed run ends
# bitwise as the uninterrupted one.
amazon=("$root/configs/amazon_computers_sage_neighbor.yaml" -q --set run.epochs=10)
"$gnnpipe" run "${amazon[@]}" --ranks 2 --out "$tmp/amazon_full" >"$tmp/amazon_full.log" 2>&1 ||
  { cat "$tmp/amazon_full.log"; fail "the uninterrupted 2-rank Amazon run failed"; }
"${mpi[@]}" "$gnnpipe" run "${amazon[@]}" --out "$tmp/amazon_stopped" >"$tmp/amazon_stopped.log" 2>&1 &
job=$!
for _ in $(seq 1 150); do  # until epoch 1 is in metrics.csv
  [ -f "$tmp/amazon_stopped/metrics.csv" ] && [ "$(wc -l < "$tmp/amazon_stopped/metrics.csv")" -ge 2 ] && break
  sleep 0.2
done
sleep 0.3
kill -TERM "$job"
rc=0
wait "$job" || rc=$?
[ "$rc" != 0 ] || fail "the stopped 2-rank run exited 0 (did it finish before the stop?)"
# (mpirun ends the ranks right after forwarding the signal, so their last console lines may not
# reach it: the run directory is what records the stop.)
[ -d "$tmp/amazon_stopped/checkpoints/last" ] || { cat "$tmp/amazon_stopped.log"; fail "no stop checkpoint"; }
grep -q '"status": "interrupted"' "$tmp/amazon_stopped/summary.json" || fail "the stopped run's summary.json is not 'interrupted'"
"$gnnpipe" run "$tmp/amazon_stopped/config.yaml" -q --ranks 2 --resume "$tmp/amazon_stopped" >"$tmp/amazon_resumed.log" 2>&1 ||
  { cat "$tmp/amazon_resumed.log"; fail "resuming the stopped 2-rank run failed"; }
python3 - "$tmp/amazon_full" "$tmp/amazon_stopped" <<'PY'
import json, re, sys
full, resumed = (json.load(open(f"{d}/summary.json")) for d in sys.argv[1:3])
log = open(f"{sys.argv[2]}/log.txt").read()
held = (re.findall(r"checkpoints/last holds ([^:]*)", log) or ["?"])[0]
assert full["params_checksum"] == resumed["params_checksum"], \
    f"stopped (last held {held}) and resumed: {resumed['params_checksum']} != uninterrupted {full['params_checksum']}"
print(f"ranks_cpu: a 2-rank run stopped by SIGTERM (checkpoints/last held {held}) resumed bitwise")
PY

# A Ctrl-C as a terminal sends it (SIGINT to the whole foreground group) to `gnnpipe run --ranks 2`:
# the launcher keeps mpirun out of that group and hands the signal on to the ranks, which stop
# before the same step (a SIGINT to mpirun makes it end the job before the ranks record the stop).
set -m
"$gnnpipe" run "$root/configs/cora_gcn.yaml" --ranks 2 -q --set run.epochs=100000 --out "$tmp/ctrl_c" \
  >"$tmp/ctrl_c.log" 2>&1 &
job=$!
set +m
for _ in $(seq 1 150); do
  [ -f "$tmp/ctrl_c/metrics.csv" ] && [ "$(wc -l < "$tmp/ctrl_c/metrics.csv")" -ge 6 ] && break
  sleep 0.2
done
kill -INT -- "-$job"
rc=0
wait "$job" || rc=$?
[ "$rc" = 5 ] || { cat "$tmp/ctrl_c.log"; fail "a Ctrl-C to --ranks 2 exited $rc, not 5 (interrupted)"; }
grep -q '"status": "interrupted"' "$tmp/ctrl_c/summary.json" || fail "the Ctrl-C'd run's summary.json is not 'interrupted'"
[ -d "$tmp/ctrl_c/checkpoints/last" ] || fail "the Ctrl-C'd run wrote no stop checkpoint"
grep -q "gnnpipe: rank 1 of 2: .*rank 0 writes the stop checkpoint" "$tmp/ctrl_c.log" ||
  { cat "$tmp/ctrl_c.log"; fail "rank 1's stop line does not point at rank 0's checkpoint"; }
echo "ranks_cpu: a Ctrl-C to gnnpipe run --ranks 2 stopped both ranks with rank 0's stop checkpoint (exit 5)"

# What ranks do not do yet is a one-line ConfigError from every rank, and the job ends.
rc=0
"${mpi[@]}" "$gnnpipe" run "$root/configs/cora_gcn.yaml" --set augment.type=mh --out "$tmp/aug" >"$tmp/aug.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "MH-Aug on two ranks was not refused"
grep -q "gnnpipe: rank [01] of 2: augment.type mh: MH-Aug's chain is not shared" "$tmp/aug.log" || { cat "$tmp/aug.log"; fail "no one-line error naming augment"; }
# bench and infer are single-process: under mpirun they say so (each rank would write the same --out).
rc=0
"${mpi[@]}" "$gnnpipe" bench "$root/configs/cora_gcn.yaml" --out "$tmp/bench" >"$tmp/bench.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "gnnpipe bench under mpirun was not refused"
grep -q "gnnpipe: gnnpipe bench runs in one process, and this one was started as 2 ranks" "$tmp/bench.log" ||
  { cat "$tmp/bench.log"; fail "no one-line error for bench under mpirun"; }

# A rank killed mid-epoch ends the job, with the rank named, within 30 s.
"${mpi[@]}" "$gnnpipe" run "$root/configs/amazon_computers_sage_neighbor.yaml" --set run.epochs=200 \
  --set run.checkpoint_every=0 --out "$tmp/killed" >"$tmp/killed.log" 2>&1 &
job=$!
for _ in $(seq 1 100); do  # until the first epoch trained
  grep -q "epoch    1" "$tmp/killed.log" 2>/dev/null && break
  sleep 0.2
done
victim=$(pgrep -f -n -- "--out $tmp/killed") || fail "no rank to kill"
start=$(date +%s)
kill -9 "$victim"
rc=0
for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
  kill -9 "$job" 2>/dev/null || true
  pkill -9 -f -- "--out $tmp/killed" || true
  fail "the job still ran 30 s after a rank was killed"
fi
wait "$job" || rc=$?
[ "$rc" != 0 ] || fail "a killed rank's job exited 0"
grep -q "rank [01]" "$tmp/killed.log" || { cat "$tmp/killed.log"; fail "the job's end does not name the rank"; }
echo "ranks_cpu: a killed rank ended the job in $(( $(date +%s) - start )) s (exit $rc)"

# A rank that stops answering (SIGSTOP) leaves the other waiting in the step's sum: run.stall_timeout
# ends that one as stalled (exit 6), naming its rank, and mpirun ends the job, within 30 s.
"${mpi[@]}" "$gnnpipe" run "$root/configs/amazon_computers_sage_neighbor.yaml" --set run.epochs=200 \
  --set run.checkpoint_every=0 --set run.stall_timeout=8 --out "$tmp/hung" >"$tmp/hung.log" 2>&1 &
job=$!
for _ in $(seq 1 100); do
  grep -q "epoch    1" "$tmp/hung.log" 2>/dev/null && break
  sleep 0.2
done
victim=$(pgrep -f -n -- "--out $tmp/hung") || fail "no rank to stop"
start=$(date +%s)
kill -STOP "$victim"
for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
  pkill -9 -f -- "--out $tmp/hung" || true
  kill -9 "$job" 2>/dev/null || true
  fail "the job still ran 30 s after a rank stopped answering"
fi
rc=0
wait "$job" || rc=$?
[ "$rc" != 0 ] || fail "a job with a stopped rank exited 0"
grep -q "gnnpipe: rank [01] of 2: stalled: no stage advanced" "$tmp/hung.log" || { cat "$tmp/hung.log"; fail "no stall message naming the rank"; }
echo "ranks_cpu: a stopped rank ended the job in $(( $(date +%s) - start )) s (exit $rc)"
