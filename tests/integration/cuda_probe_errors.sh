#!/usr/bin/env bash
# Device detection as processes see it (issue #12, item 1). A machine without an NVIDIA driver is
# "no GPU": the GPU tests skip (77) and `--version` says none detected. A driver that is present
# but cannot be asked is an error everywhere: here the CUDA toolkit's stub libcuda stands in for a
# driver older than the runtime (put first on LD_LIBRARY_PATH as libcuda.so.1, it makes
# cudaGetDeviceCount fail with cudaErrorStubLibrary): the GPU tests fail (not skip), `--version`
# and `doctor` report the error, and a run on cuda:0 exits 4 naming it.
# Usage: cuda_probe_errors.sh PATH/TO/gnnpipe PATH/TO/gnnpipe_gpu_tests PATH/TO/stubs/libcuda.so
set -u
bin=$1 gpu_tests=$2 stub=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect WANT_EXIT PATTERN DESCRIPTION -- COMMAND...: the exit code and a line matching PATTERN.
expect() {
  local want=$1 pattern=$2 what=$3; shift 4
  "$@" > "$tmp/out" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    fail "$what: exited $got, expected $want"; cat "$tmp/out"
  elif ! grep -qE "$pattern" "$tmp/out"; then
    fail "$what: no line matches '$pattern'"; cat "$tmp/out"
  else
    echo "ok: $what"
  fi
}

if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  expect 77 "SKIP: no CUDA device visible" "no driver: the GPU tests skip" -- "$gpu_tests"
  expect 0 "gpus: none detected" "no driver: --version says no GPU" -- "$bin" --version
else
  echo "note: an NVIDIA driver is installed here; the no-driver case is not checked"
fi

mkdir -p "$tmp/driver"
ln -s "$stub" "$tmp/driver/libcuda.so.1"
export LD_LIBRARY_PATH="$tmp/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
expect 1 "FAIL: CUDA cannot be used: cudaGetDeviceCount failed with cudaErrorStubLibrary" \
  "unusable driver: the GPU tests fail instead of skipping" -- "$gpu_tests"
expect 0 "gpus: CUDA cannot be used: cudaGetDeviceCount failed" "unusable driver: --version reports it" -- "$bin" --version
expect 4 "CUDA driver answers the device query.*cudaErrorStubLibrary" "unusable driver: doctor fails its check (exit 4)" -- \
  "$bin" doctor --device cpu --bytes 1MiB --repeats 1
cat > "$tmp/tiny.yaml" <<'YAML'
name: tiny
dataset: {synthetic: {nodes: 200, avg_degree: 4, features: 4, classes: 2, seed: 1}}
model: {type: gcn, layers: 2, hidden: 8}
sampler: {type: full}
run: {epochs: 1, device: "cuda:0"}
YAML
expect 4 "cuda:0 requested, but CUDA cannot be used: cudaGetDeviceCount failed with cudaErrorStubLibrary" \
  "unusable driver: a run on cuda:0 exits 4 naming the error" -- "$bin" run "$tmp/tiny.yaml" --out "$tmp/run"
[ ! -e "$tmp/run/summary.json" ] || fail "a failed run left a summary"

if [ $fails -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "device detection: every case reported as it should be"
