#!/usr/bin/env bash
# The gnnpipe program as a process: exit codes and output of the built binary.
# Usage: cli_exit_codes.sh PATH/TO/gnnpipe
set -u
bin=$1
fails=0
expect() {  # expect CODE DESCRIPTION -- ARGS...
  local want=$1 what=$2; shift 3
  "$bin" "$@" >/tmp/gnnpipe_cli_out.$$ 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: 'gnnpipe $*' exited $got, expected $want"; cat /tmp/gnnpipe_cli_out.$$; fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
expect 0 "version" -- --version
expect 0 "help" -- --help
expect 2 "no subcommand" --
expect 2 "unknown option" -- --frobnicate
expect 2 "run with a config file that does not exist" -- run /nonexistent/config.yaml
expect 0 "doctor on the CPU" -- doctor --device cpu --bytes 1MiB --repeats 1

# Datasets: synthesize, inspect, convert, and the failure paths (exit 3 for data errors).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect 0 "data synth" -- data synth --out "$tmp/syn" --nodes 2000 --avg-degree 8 --features 16 --classes 4 --seed 1
expect 0 "data info on a native dataset" -- data info "$tmp/syn"
expect 0 "data convert native to fp16" -- data convert "$tmp/syn" --out "$tmp/syn16" --feature-dtype float16
grep -q '^feature_dtype: float16' "$tmp/syn16/meta.yaml" || { echo "FAIL: converted meta.yaml lacks float16"; fails=$((fails + 1)); }
printf '0 1\n1 2\n' > "$tmp/edges.txt"
expect 0 "data convert an edge list with random features" -- data convert --from edgelist "$tmp/edges.txt" --out "$tmp/el" --random-features 8
expect 3 "data info on a missing path" -- data info "$tmp/nothing"
printf '0 x\n' > "$tmp/bad.txt"
expect 3 "data info on a malformed edge list" -- data info --format edgelist "$tmp/bad.txt"
expect 2 "data info with an unknown format" -- data info --format csv "$tmp/syn"
expect 2 "data synth with a bad option" -- data synth --out "$tmp/x" --nodes 0
rm -f "$tmp/syn/graph_indices.npy"
expect 3 "data info on a native dataset missing an array" -- data info "$tmp/syn"
[ ! -e "$tmp/x" ] || { echo "FAIL: a failed synth left $tmp/x behind"; fails=$((fails + 1)); }
# The memory plan: printed without training (no run directory), and a budget nothing fits exits 4.
cat > "$tmp/plan.yaml" <<'YAML'
name: plan
dataset: {synthetic: {nodes: 600, avg_degree: 6, features: 16, classes: 3, seed: 1}}
model: {type: sage, layers: 2, hidden: 16}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 60}
memory: {limit: 1GiB}
run: {epochs: 1}
YAML
expect 0 "run --plan" -- run "$tmp/plan.yaml" --plan --out "$tmp/planrun"
grep -q "memory plan on cpu: budget 1.00 GiB" /tmp/gnnpipe_cli_out.$$ || { echo "FAIL: --plan printed no plan"; cat /tmp/gnnpipe_cli_out.$$; fails=$((fails + 1)); }
grep -q "epoch 1: all 6 batches fit" /tmp/gnnpipe_cli_out.$$ || { echo "FAIL: --plan printed no decision"; fails=$((fails + 1)); }
[ ! -e "$tmp/planrun" ] || { echo "FAIL: --plan wrote a run directory"; fails=$((fails + 1)); }
expect 0 "run --plan under a budget that splits" -- run "$tmp/plan.yaml" --plan --set memory.limit=160KiB
grep -q "split" /tmp/gnnpipe_cli_out.$$ || { echo "FAIL: --plan under 160KiB shows no split"; cat /tmp/gnnpipe_cli_out.$$; fails=$((fails + 1)); }
expect 4 "run --plan under a budget nothing fits" -- run "$tmp/plan.yaml" --plan --set memory.limit=16KiB
# One line on stderr for a data error.
lines=$("$bin" data info "$tmp/nothing" 2>&1 >/dev/null | wc -l)
[ "$lines" -eq 1 ] || { echo "FAIL: a data error printed $lines lines"; fails=$((fails + 1)); }
"$bin" --version | head -1 | grep -q '^gnnpipe [0-9]' || { echo "FAIL: --version first line"; fails=$((fails + 1)); }
rm -f /tmp/gnnpipe_cli_out.$$
[ "$fails" -eq 0 ]
