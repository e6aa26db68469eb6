#!/usr/bin/env bash
# Issue #18 item 6, load: a soak run of many short epochs (the quickstart graph and model) through
# the pipeline under a tight budget (memory.limit 24 MiB: every batch split in two) with 8 sampler
# threads, sampled once a second from /proc: resident memory (VmRSS), open descriptors and
# threads. Reports the RSS slope after warm-up (the first quarter of the samples), fitted to the
# minimum of each 10-sample window (an evaluation every 100 epochs allocates for a few seconds and
# gives it back: spikes, not growth), in bytes per epoch and MiB per 1,000 epochs, the RSS of each
# tenth of the run, the descriptor and thread counts, and compares the parameters with the
# sequential baseline's (params_checksum). Fails on a slope above 4 KiB per epoch, descriptors or
# threads that stay above their post-warm-up counts (the lowest of the last tenth against the
# lowest of the first 10 samples after warm-up: a descriptor open for a moment is not growth), or
# different parameters.
# Usage: tools/soak.sh [epochs, default 1000] [output folder, default a temporary one]
#        SOAK_ANALYZE_ONLY=1 tools/soak.sh EPOCHS FOLDER: the report of an earlier soak's files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
epochs=${1:-1000}
out=${2:-$(mktemp -d)}
gnnpipe=${GNNPIPE:-$root/build/experiments/gnnpipe}
mkdir -p "$out"
settings=(--set "run.epochs=$epochs" --set pipeline.sampler_threads=8 --set memory.limit=24MiB
          --set pipeline.eval_every=100)
if [[ -z ${SOAK_ANALYZE_ONLY:-} ]]; then
rm -rf "$out/pipelined" "$out/sequential"
"$gnnpipe" run "$root/configs/quickstart.yaml" --out "$out/pipelined" "${settings[@]}" >"$out/pipelined.log" 2>&1 &
pid=$!
echo "seconds,rss_kib,fds,threads" >"$out/samples.csv"
start=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
  threads=$(ls "/proc/$pid/task" 2>/dev/null | wc -l)
  [[ -n $rss ]] && echo "$((SECONDS - start)),$rss,$fds,$threads" >>"$out/samples.csv"
  sleep 1
done
wait "$pid" || { tail -5 "$out/pipelined.log" >&2; echo "soak: the pipelined run failed" >&2; exit 1; }
"$gnnpipe" run "$root/configs/quickstart.yaml" --out "$out/sequential" "${settings[@]}" --set pipeline.mode=sequential \
  >"$out/sequential.log" 2>&1 || { tail -5 "$out/sequential.log" >&2; echo "soak: the sequential run failed" >&2; exit 1; }
fi
checksum() { grep -o '"params_checksum": *"[0-9a-f]*"' "$1/summary.json" | grep -o '[0-9a-f]\{16\}'; }
seconds=$(tail -1 "$out/samples.csv" | cut -d, -f1)
awk -F, -v epochs="$epochs" -v seconds="$seconds" -v pipelined="$(checksum "$out/pipelined")" \
  -v sequential="$(checksum "$out/sequential")" '
  BEGIN { n = 0; k = 0 }
  NR > 1 { t[n] = $1; r[n] = $2 * 1024; f[n] = $3; h[n] = $4; n++ }
  END {
    if (n < 40) { print "soak: only " n " samples: run more epochs"; exit 1 }
    w = int(n / 4)
    # minima of 10-sample windows after warm-up, fitted by least squares against time
    for (i = w; i + 10 <= n; i += 10) {
      lo = r[i]; for (j = i; j < i + 10; j++) if (r[j] < lo) lo = r[j]
      wt[k] = t[i + 5]; wr[k] = lo; k++
    }
    for (i = 0; i < k; i++) { st += wt[i]; sr += wr[i] }
    for (i = 0; i < k; i++) { num += (wt[i] - st / k) * (wr[i] - sr / k); den += (wt[i] - st / k) ^ 2 }
    per_epoch = (den > 0 ? num / den : 0) * seconds / epochs   # bytes per epoch
    fmin = fmax = f[w]; hmin = hmax = h[w]; rmax = r[w]
    for (i = w; i < n; i++) {
      if (f[i] < fmin) fmin = f[i]; if (f[i] > fmax) fmax = f[i]
      if (h[i] < hmin) hmin = h[i]; if (h[i] > hmax) hmax = h[i]
      if (r[i] > rmax) rmax = r[i]
    }
    printf "soak: %d epochs in %d s, %d samples (%d after warm-up)\n", epochs, seconds, n, n - w
    printf "soak: RSS window minima after warm-up %.1f -> %.1f MiB (peak %.1f MiB during evaluations)\n",
           wr[0] / 1048576, wr[k - 1] / 1048576, rmax / 1048576
    printf "soak: RSS slope %.0f bytes per epoch (%.2f MiB per 1,000 epochs)\n", per_epoch, per_epoch * 1000 / 1048576
    printf "soak: lowest RSS per tenth of the run (MiB):"
    for (s = 0; s < 10; s++) {
      lo = -1
      for (i = int(n * s / 10); i < int(n * (s + 1) / 10); i++) if (lo < 0 || r[i] < lo) lo = r[i]
      printf " %.1f", lo / 1048576
    }
    printf "\n"
    # Lasting growth, not a transient (a file open for a moment while an evaluation writes): the
    # lowest counts of the last tenth against those of the first 10 samples after warm-up.
    tail_from = n - (n / 10 > 10 ? int(n / 10) : 10)
    f0 = f[w]; h0 = h[w]; f1 = f[tail_from]; h1 = h[tail_from]
    for (i = w; i < w + 10; i++) { if (f[i] < f0) f0 = f[i]; if (h[i] < h0) h0 = h[i] }
    for (i = tail_from; i < n; i++) { if (f[i] < f1) f1 = f[i]; if (h[i] < h1) h1 = h[i] }
    printf "soak: descriptors %d-%d, threads %d-%d after warm-up; lowest %d and %d after warm-up, %d and %d at the end\n",
           fmin, fmax, hmin, hmax, f0, h0, f1, h1
    printf "soak: params_checksum pipelined %s, sequential %s\n", pipelined, sequential
    bad = 0
    if (per_epoch > 4096) { print "soak: FAIL: RSS grows"; bad = 1 }
    if (f1 > f0 || h1 > h0) { print "soak: FAIL: descriptors or threads grew"; bad = 1 }
    if (pipelined != sequential || pipelined == "") { print "soak: FAIL: the pipelined parameters differ"; bad = 1 }
    exit bad
  }' "$out/samples.csv"
echo "soak: samples in $out/samples.csv"
