#!/usr/bin/env bash
# Issue #16 (plots): tools/plot.py on a small traced run of a synthetic config writes curves.png,
# timeline.png and memory.png into the run directory and prints their paths; on a bench directory
# it writes stages.png and each sub-run's pictures; every picture is a valid PNG of non-trivial size
# and not blank. Without trace.json the timeline is skipped with a note (exit 0); a directory that is
# not a run, a malformed metrics.csv and an epoch the trace lacks are one-line errors with exit 2.
# Usage: plot_run_dir.sh GNNPIPE. Needs a python3 that imports matplotlib ($GNNPIPE_PYTHON, else
# /usr/bin/python3, else python3): without one it prints SKIP and passes, unless CI=true (tools/setup.sh
# installs python3-matplotlib there, so its absence is a failure).
set -euo pipefail
gnnpipe=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
plot=$root/tools/plot.py
fail() { echo "FAIL: $*" >&2; exit 1; }

python=
for candidate in "${GNNPIPE_PYTHON:-}" /usr/bin/python3 python3; do
  if [ -n "$candidate" ] && "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  [ "${CI:-}" = "true" ] && fail "no python3 that imports matplotlib (install python3-matplotlib: bash tools/setup.sh)"
  echo "SKIP: no python3 that imports matplotlib (install python3-matplotlib: bash tools/setup.sh)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MPLCONFIGDIR=$tmp/matplotlib  # a writable cache, so no warning about $HOME joins stderr
small=(--set run.epochs=3 --set dataset.synthetic.nodes=4000 --set sampler.batch_size=512)

# checks PNG...: each is a PNG (signature and IHDR) of at least 400x200 pixels and 8 KB, not one colour.
check_png() {
  "$python" - "$@" <<'PY' || fail "bad PNG (above)"
import struct, sys
import matplotlib.image
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path}: not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 400 and height >= 200, f"{path}: {width}x{height} pixels"
    assert len(data) >= 8192, f"{path}: {len(data)} bytes"
    pixels = matplotlib.image.imread(path)
    assert pixels.std() > 0.01, f"{path}: blank"
PY
}

# A traced run: three pictures, their paths printed one per line in this order.
"$gnnpipe" run "$root/configs/quickstart.yaml" "${small[@]}" --trace --out "$tmp/run" >"$tmp/run.log" 2>&1 ||
  { cat "$tmp/run.log" >&2; fail "gnnpipe run"; }
"$python" "$plot" "$tmp/run" >"$tmp/plot.out" 2>"$tmp/plot.err" || { cat "$tmp/plot.err" >&2; fail "plot.py on a run directory"; }
printf '%s\n' "$tmp/run/curves.png" "$tmp/run/timeline.png" "$tmp/run/memory.png" | diff - "$tmp/plot.out" ||
  fail "printed paths differ from the expected (above)"
check_png "$tmp/run/curves.png" "$tmp/run/timeline.png" "$tmp/run/memory.png"
"$python" "$plot" "$tmp/run" --epoch 1 >/dev/null 2>"$tmp/plot.err" || { cat "$tmp/plot.err" >&2; fail "--epoch 1"; }

# No trace.json: the timeline is skipped with a one-line note, the other two are drawn.
mkdir "$tmp/untraced"
cp "$tmp/run/metrics.csv" "$tmp/run/summary.json" "$tmp/untraced/"
"$python" "$plot" "$tmp/untraced" >"$tmp/plot.out" 2>"$tmp/plot.err" || { cat "$tmp/plot.err" >&2; fail "plot.py without a trace"; }
printf '%s\n' "$tmp/untraced/curves.png" "$tmp/untraced/memory.png" | diff - "$tmp/plot.out" || fail "paths without a trace"
grep -q "trace.json" "$tmp/plot.err" && [ "$(wc -l <"$tmp/plot.err")" -eq 1 ] || { cat "$tmp/plot.err" >&2; fail "no one-line note about trace.json"; }
[ ! -e "$tmp/untraced/timeline.png" ] || fail "a timeline without a trace"

# A bench directory: the stage bars, then each sub-run's pictures.
"$gnnpipe" bench "$root/configs/quickstart.yaml" "${small[@]}" --set run.epochs=2 --out "$tmp/bench" >"$tmp/bench.log" 2>&1 ||
  { cat "$tmp/bench.log" >&2; fail "gnnpipe bench"; }
"$python" "$plot" "$tmp/bench" >"$tmp/plot.out" 2>"$tmp/plot.err" || { cat "$tmp/plot.err" >&2; fail "plot.py on a bench directory"; }
expected=("$tmp/bench/stages.png")
for sub in sequential pipelined; do
  for picture in curves timeline memory; do expected+=("$tmp/bench/$sub/$picture.png"); done
done
printf '%s\n' "${expected[@]}" | diff - "$tmp/plot.out" || fail "bench: printed paths differ from the expected (above)"
check_png "${expected[@]}"

# Failures: one line naming the directory or file, exit 2, nothing drawn.
expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1 status
  shift
  set +e
  "$python" "$plot" "$@" >"$tmp/plot.out" 2>"$tmp/plot.err"
  status=$?
  set -e
  [ "$status" -eq 2 ] && [ ! -s "$tmp/plot.out" ] && [ "$(wc -l <"$tmp/plot.err")" -eq 1 ] && grep -q "$pattern" "$tmp/plot.err" ||
    { cat "$tmp/plot.err" >&2; fail "expected exit 2 and one line matching '$pattern' for $*, got $status"; }
}
mkdir "$tmp/empty"
expect_error "$tmp/empty: not a run directory" "$tmp/empty"
expect_error "$tmp/missing: not a directory" "$tmp/missing"
mkdir "$tmp/broken"
printf 'epoch,loss\n1,0.5,7\n' >"$tmp/broken/metrics.csv"
expect_error "$tmp/broken/metrics.csv" "$tmp/broken"
expect_error "no events of epoch 99" "$tmp/run" --epoch 99
ls "$tmp/empty" "$tmp/broken" | grep -q '\.png$' && fail "a failed plot wrote a PNG"
echo "plot.py: $(($(printf '%s\n' "${expected[@]}" | wc -l) + 5)) pictures checked"
