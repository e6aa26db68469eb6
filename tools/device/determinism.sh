#!/usr/bin/env bash
# On the GPU machine: which settings make repeated GPU runs of one config differ? Runs CONFIG
# (default: the GPU test's 2-layer SAGE on a 2,000-node synthetic graph) REPS times per variant
# and prints each variant's distinct params_checksum values (1 = deterministic).
# Usage: bash tools/device/determinism.sh [REPS]   (carry .deps with bundled binaries)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=${1:-4}
# shellcheck source=tools/device/env.sh
source "$root/tools/device/env.sh" > /dev/null
gnnpipe=${GNNPIPE:-$root/.deps/bin/gnnpipe}
work=$(mktemp -d)
cat > "$work/sage.yaml" <<'YAML'
name: det
dataset: {synthetic: {nodes: 2000, avg_degree: 8, features: 16, classes: 4, seed: 1, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [10, 5], batch_size: 128}
optimizer: {type: adam, lr: 0.01}
pipeline: {sampler_threads: 4, staging_slots: 3}
run: {epochs: 8, seed: 2, device: "cuda:0"}
YAML
config=${CONFIG:-$work/sage.yaml}
variant() {
  local name=$1
  shift
  local sums=() i sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  for ((i = 0; i < reps; ++i)); do
    "$gnnpipe" run "$config" --out "$work/$name-$i" "${sets[@]}" > "$work/$name-$i.log" 2>&1 ||
      { echo "$name: run $i failed: $(tail -1 "$work/$name-$i.log")"; return; }
    sums+=("$(grep -o '"params_checksum": *"[0-9a-f]*"' "$work/$name-$i/summary.json" | grep -o '[0-9a-f]\{16\}')")
  done
  printf '%-28s %d distinct: %s\n' "$name" "$(printf '%s\n' "${sums[@]}" | sort -u | wc -l)" "${sums[*]}"
  # The first epoch whose loss differs between the runs (metrics.csv column 2).
  local first
  first=$(for ((i = 0; i < reps; ++i)); do cut -d, -f1,2 "$work/$name-$i/metrics.csv"; done | sort | uniq | cut -d, -f1 |
    uniq -d | head -1)
  [ -n "$first" ] && echo "    first epoch whose loss differs: $first"
}
# SANITIZE_RUN=1: one 3-epoch pipelined run under compute-sanitizer's initcheck and memcheck first.
if [ "${SANITIZE_RUN:-0}" = 1 ]; then
  for tool in initcheck memcheck; do
    timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 86 "$gnnpipe" run "$config" --out "$work/san-$tool" \
      --set run.epochs=3 > "$work/san-$tool.log" 2>&1
    echo "sanitize run $tool: exit $? ($(grep -E 'ERROR SUMMARY' "$work/san-$tool.log" | tail -1))"
    grep -m 5 -A 12 "^========= [A-Z]" "$work/san-$tool.log" | head -40
  done
fi
# Variants: VARIANTS="name:key=value,key=value ..." replaces the default list.
if [ -n "${VARIANTS:-}" ]; then
  for v in $VARIANTS; do
    IFS=, read -r -a sets <<< "${v#*:}"
    variant "${v%%:*}" "${sets[@]}"
  done
  exit 0
fi
variant default
variant sequential pipeline.mode=sequential
variant features_host memory.features=host
variant no_eval pipeline.eval_every=1000
variant seq_host_noeval pipeline.mode=sequential memory.features=host pipeline.eval_every=1000
variant no_dropout model.dropout=0
variant one_thread pipeline.sampler_threads=1 pipeline.staging_slots=1
variant cusparse run.spmm=cusparse
variant gcn_full model.type=gcn 'sampler={type: full}'
variant gcn_full_seq model.type=gcn 'sampler={type: full}' pipeline.mode=sequential
variant gcn_full_noeval model.type=gcn 'sampler={type: full}' pipeline.eval_every=1000
variant gat_neighbor model.type=gat
