#!/usr/bin/env bash
# Issue #15 item 4: accuracy and time of `gnnpipe infer` against its memory budget, with every
# memory.cut strategy where the budget makes rows lose edges. Trains CONFIG once (extra --set
# arguments after OUT apply to training and inference), then runs inference unlimited and at
# budgets of the model's bytes plus 1, 1/4, 1/16, ... of the unlimited run's array bytes, down to
# the first budget that is refused. Prints one markdown table row per inference to stdout.
#   tools/bench/infer_budgets.sh build/experiments/gnnpipe configs/amazon_computers_gat.yaml /tmp/out \
#       --set run.epochs=100
set -euo pipefail
gnnpipe=$1 config=$2 out=$3
shift 3
sets=("$@")
field() { grep -o "\"$2\": *[^,}]*" "$1" | head -1 | sed 's/.*: *//; s/"//g'; }
pct() { [[ $1 == null ]] && echo n/a || awk -v a="$1" 'BEGIN { printf "%.2f", 100 * a }'; }
mkdir -p "$out"
if [[ ! -f $out/run/summary.json ]]; then
  "$gnnpipe" run "$config" "${sets[@]}" --out "$out/run" >"$out/run.log" 2>&1 || { tail -5 "$out/run.log" >&2; exit 1; }
fi
ck=$out/run/checkpoints/best
row() {  # row LABEL LIMIT STRATEGY
  local dir=$out/infer-${1//\//_}-$3
  rm -rf "$dir"
  local args=(infer "$config" "${sets[@]}" --checkpoint "$ck" --out "$dir" --set memory.policy=cut --set "memory.cut=$3")
  [[ $2 != unlimited ]] && args+=(--memory-limit "$2")
  if ! "$gnnpipe" "${args[@]}" >"$dir.log" 2>&1; then
    echo "| $1 | $2 | $3 | refused: $(grep '^gnnpipe:' "$dir.log" | cut -c 10-) |||||"
    return 1
  fi
  local s=$dir/summary.json
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %s |\n' "$1" "$(field "$s" budget_bytes)" "$3" \
    "$(field "$s" chunks)" "$(field "$s" rows_cut)" "$(field "$s" edges_cut)" "$(pct "$(field "$s" test_accuracy)")" \
    "$(pct "$(field "$s" val_accuracy)")" "$(field "$s" time_s)" "$(field "$s" peak_device_bytes)"
}
echo "| budget | bytes | cut | chunks | rows cut | edges cut / layer | test % | val % | time s | peak bytes |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row unlimited unlimited degree_sum
wide=$out/infer-unlimited-degree_sum/summary.json
params=$(field "$wide" parameter_bytes)
arrays=$(field "$wide" predicted_chunk_bytes)
for div in 1 4 16 64 256 1024 4096 16384 65536; do
  limit=$((params + arrays / div))
  row "model+1/$div" "$limit" degree_sum || break
  if [[ $(field "$out/infer-model+1_$div-degree_sum/summary.json" rows_cut) != 0 ]]; then
    for strategy in random degree_product pagerank_sum pagerank_product; do row "model+1/$div" "$limit" "$strategy" || true; done
  fi
done
