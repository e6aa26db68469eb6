#!/usr/bin/env bash
# Issue #38's CPU acceptance: a 10,000-node graph of average degree 50, full batch, 3 layers of 256
# (GCN, SAGE; GAT with 4 heads of 64), at 50 % and 25 % of its unconstrained need:
#   --plan answers in under 5 s, with under 1 GB of host memory beyond the unconstrained run's;
#   3 epochs train, one layer at a time over chunks of rows (memory.policy split falls back to it);
#   the device peak stays within memory.limit; the losses equal the unconstrained run's to 1e-5.
# And a budget below the smallest workable one fails within seconds, naming that one.
set -euo pipefail
gnnpipe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gnnpipe" data synth --out "$tmp/graph" --nodes 10000 --avg-degree 50 --features 100 --classes 47 --seed 1 >/dev/null 2>&1
field() { grep -o "\"$1\": *[0-9.e+-]*" "$2" | head -1 | sed 's/.*: *//'; }
# Runs a command; prints "exit-code seconds peak-rss-bytes" (any python3 has resource).
measure() {
  python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(rc, round(time.monotonic() - t, 2), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
' "$@" 2>"$tmp/measure.err"
}
losses() { cut -d, -f2 "$1/metrics.csv" | tail -n +2; }
for model in "{type: gcn, layers: 3, hidden: 256, dropout: 0.5}" "{type: sage, layers: 3, hidden: 256, dropout: 0.5}" \
             "{type: gat, layers: 3, hidden: 64, heads: 4, dropout: 0.5, attention_dropout: 0.2}"; do
  name=$(echo "$model" | sed 's/{type: \([a-z]*\).*/\1/')
  cat >"$tmp/$name.yaml" <<YAML
name: dense_$name
dataset: {path: $tmp/graph}
model: $model
sampler: {type: full}
optimizer: {type: adam, lr: 0.01}
pipeline: {mode: sequential}
run: {device: cpu, epochs: 3, seed: 7, checkpoint_every: 0}
YAML
  "$gnnpipe" run "$tmp/$name.yaml" --out "$tmp/$name-whole" >"$tmp/$name-whole.log" 2>&1 || { cat "$tmp/$name-whole.log" >&2; exit 1; }
  peak=$(field largest_batch_peak_bytes "$tmp/$name-whole/summary.json")
  whole_host=$(field peak_host_bytes "$tmp/$name-whole/summary.json")
  need=$(( (peak * 100 + 94) / 95 ))  # memory.tolerance 0.05
  [[ $name == gcn ]] && gcn_need=$need
  for percent in 50 25; do
    limit=$((need * percent / 100))
    read -r rc seconds rss < <(measure "$gnnpipe" run "$tmp/$name.yaml" --out "$tmp/$name-plan-$percent" --plan \
      --set memory.limit=$limit)
    [[ $rc -eq 0 ]] || { cat "$tmp/measure.err" >&2; echo "FAIL: $name at $percent %: --plan failed"; exit 1; }
    awk -v s="$seconds" 'BEGIN { exit !(s < 5) }' || { echo "FAIL: $name at $percent %: --plan took $seconds s"; exit 1; }
    ((rss < whole_host + (1 << 30))) || { echo "FAIL: $name at $percent %: --plan peaked at $rss bytes of host memory"; exit 1; }
    out=$tmp/$name-$percent
    "$gnnpipe" run "$tmp/$name.yaml" --out "$out" --set memory.limit=$limit >"$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
    device=$(field peak_device_bytes "$out/summary.json")
    layerwise=$(field batches_layerwise "$out/summary.json")
    ((device <= limit)) || { echo "FAIL: $name at $percent %: device peak $device above memory.limit $limit"; exit 1; }
    ((layerwise == 3)) || { echo "FAIL: $name at $percent %: $layerwise of 3 steps ran layer-wise"; exit 1; }
    paste -d' ' <(losses "$tmp/$name-whole") <(losses "$out") | awk -v who="$name at $percent %" '
      { n++; d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * ($1 < 0 ? -$1 : $1)) { print "FAIL: " who ": epoch " n " loss " $2 " against " $1; bad = 1 } }
      END { if (n != 3) { print "FAIL: " who ": " n " epochs"; bad = 1 } exit bad }'
    echo "$name at $percent % of $need bytes: --plan ${seconds} s, RSS $rss (unconstrained run $whole_host); device peak $device of $limit; losses equal"
  done
done
# Below the least workable budget: an OutOfBudget within seconds, naming the limit that works.
limit=$((gcn_need / 40))
read -r rc seconds _ < <(measure "$gnnpipe" run "$tmp/gcn.yaml" --out "$tmp/too-small" --plan --set memory.limit=$limit)
((rc != 0)) || { echo "FAIL: a plan at $limit bytes was accepted"; exit 1; }
grep -q "fits from memory.limit" "$tmp/measure.err" || { cat "$tmp/measure.err" >&2; echo "FAIL: no workable limit named"; exit 1; }
awk -v s="$seconds" 'BEGIN { exit !(s < 10) }' || { echo "FAIL: the failing plan took $seconds s"; exit 1; }
echo "too small ($limit bytes): failed in $seconds s: $(grep -o 'fits from memory.limit [0-9.]* [KMG]*i*B' "$tmp/measure.err" | head -1)"
