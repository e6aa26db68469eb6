#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (build-fuzz/, GNNPIPE_FUZZ=ON: ASan +
# UBSan + coverage, CUDA off) and runs each for a given time, one after another, one process each.
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET   default 60; TARGET: npy npz ogb saint native experiment_yaml set checkpoint
#                        (default: all)
# Environment: FUZZ_BUILD_DIR (default build-fuzz), CXX_FUZZ (default clang++-14), FUZZ_JOBS (build
# parallelism, default 2), FUZZ_MERGE=1 to merge new inputs of at most 4 KiB back into
# tests/fuzz/corpus/<target>/ (libFuzzer -merge=1: only inputs that add coverage), FUZZ_ARGS extra
# libFuzzer flags.
# Each target runs on a scratch copy of its corpus (work/<target>/corpus under the build dir) with
# -max_total_time; its log is work/<target>/fuzz.log and a summary line (executions, exec/s, cov,
# ft, corpus) is printed. A finding (crash, sanitizer report, leak, timeout, out-of-memory) stops
# the script with exit 1 and leaves the reproducer as work/<target>/crash-* (or leak-*, timeout-*,
# oom-*); reproduce it with `build-fuzz/tests/fuzz/gnnpipe_fuzz_<target> FILE`, fix the reader, and
# add the file to tests/fuzz/corpus/<target>/ so the replay test (ctest -L fuzz) keeps it fixed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
all_targets=(npy npz ogb saint native experiment_yaml set checkpoint)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cxx=${CXX_FUZZ:-clang++-14}

# shellcheck source=tools/ccache_env.sh
source "$root/tools/ccache_env.sh"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DGNNPIPE_FUZZ=ON -DGNNPIPE_CUDA=OFF -DGNNPIPE_WERROR=ON "${ccache_cxx_launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "${FUZZ_JOBS:-2}" --target "${targets[@]/#/gnnpipe_fuzz_}"

status=0
for t in "${targets[@]}"; do
  work=$build_dir/work/$t
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/corpus/" 2>/dev/null || true
  echo "fuzz $t: ${seconds}s on $(ls "$work/corpus" | wc -l) seed inputs"
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb (and with it malloc_limit_mb): an input
  # that makes a reader allocate 2 GiB is a finding (sizes must be checked against the file first).
  # detect_leaks stays on: a reader that leaks on an error path is a finding too.
  rc=0
  (cd "$work" && ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
     UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
     "$build_dir/tests/fuzz/gnnpipe_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$work/" ${FUZZ_ARGS:-} corpus >"$work/fuzz.log" 2>&1) || rc=$?
  last=$(grep -E '^#[0-9]+' "$work/fuzz.log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log")
  echo "fuzz $t: ${execs:-?} executions, ${rate:-?} exec/s; last status: ${last:-none}"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz $t: FINDING (exit $rc); log $work/fuzz.log; reproducer(s):"
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
    grep -m3 -E 'ERROR: |runtime error|fuzz finding|terminate called|SUMMARY' "$work/fuzz.log" || true
    status=1
    break
  fi
  if [ "${FUZZ_MERGE:-0}" = 1 ]; then
    mkdir -p "$work/small"
    find "$work/corpus" -type f -size -4097c -exec cp {} "$work/small/" \;
    before=$(ls "$root/tests/fuzz/corpus/$t" | wc -l)
    "$build_dir/tests/fuzz/gnnpipe_fuzz_$t" -merge=1 -timeout=10 "$root/tests/fuzz/corpus/$t" "$work/small" \
      >"$work/merge.log" 2>&1
    echo "fuzz $t: merged into tests/fuzz/corpus/$t: $before -> $(ls "$root/tests/fuzz/corpus/$t" | wc -l) files"
  fi
done
exit $status
