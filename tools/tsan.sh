#!/usr/bin/env bash
# Builds the unit tests with ThreadSanitizer (CPU backend) and runs, under TSan:
#  1. the canary (tests/unit/test_tsan_annotations.cpp, hidden tag [.tsan_expected_race]): a
#     deliberate data race between two oneTBB tasks. It must be reported (exit code 66 and a report
#     naming tsan_canary_write), else this script fails: a suppression that hides races between
#     oneTBB tasks (as `race:libtbb.so` once did) would make the checks below worthless.
#  2. the tests tagged [tsan], which must give no report (any report fails, exit code 66): the
#     pipeline (flow graph, dedicated transfer/train/eval threads, snapshot, failure path, early
#     stop, identity with the baseline for 1/2/8 sampler threads), parallel sampling (neighbor,
#     GraphSAINT, Cluster-GCN, ParallelSampler), parallel CSR construction, feature gather,
#     synthetic graphs, the CPU ops' parallel loops, chunked inference, and the annotations.
# What is checked: every data race between our own accesses, on our threads or oneTBB's, also with
# oneTBB frames lower in the stacks. What is not: oneTBB's own bookkeeping, which runs in an
# uninstrumented libtbb (tools/sanitizers/tsan.supp says what exactly is suppressed, and why);
# our code makes the ordering oneTBB gives it visible with annotations
# (runtime/core/include/gnnpipe/core/tsan_annotations.hpp).
# Usage: tools/tsan.sh [build dir, default build-tsan/]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-tsan}

# shellcheck source=sanitizers/common.sh
source "$root/tools/sanitizers/common.sh"
build_sanitized_tests "$build_dir" thread
# history_size=7: keep enough history to restore both stacks of a report (the suppressions match
# stack frames, and a report is only useful with both stacks).
# OpenBLAS's worker threads synchronise in ways TSan cannot see (tools/sanitizers/tsan.supp).
export OPENBLAS_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=7 suppressions=$root/tools/sanitizers/tsan.supp"

expect_report tsan "[tsan_expected_race]" 66 \
  "the TSan run cannot see races between TBB tasks: check tools/sanitizers/tsan.supp (or, if the log above says the two tasks never ran at once, the two-slot arena got no worker)" \
  "WARNING: ThreadSanitizer: data race" "tsan_canary_write"

# The [tsan] run normally takes about a minute; one hang was seen in about twenty runs (a
# pipelined run waiting in graph::wait_for_all with every thread idle, issue #18). A run past the
# deadline prints every thread's stack (gdb, when installed), is killed and is run once more: a
# second hang, or any report, fails. The hang is printed either way, so it is never hidden.
deadline=${GNNPIPE_TSAN_DEADLINE_S:-900}
run_tsan_tests() {
  "$tests" "[tsan]" --durations yes &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if ((waited >= deadline)); then
      echo "tsan: the [tsan] run passed its ${deadline} s deadline: stacks of every thread follow" >&2
      if command -v gdb >/dev/null; then
        timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 | grep -v "^\[New LWP" >&2 || true
      fi
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      return 124
    fi
    sleep 1
    waited=$((waited + 1))
  done
  wait "$pid"
}
set +e
run_tsan_tests
rc=$?
set -e
if [[ $rc -eq 124 ]]; then
  echo "tsan: HANG in the [tsan] run (stacks above; issue #18): running it once more" >&2
  run_tsan_tests
elif [[ $rc -ne 0 ]]; then
  exit "$rc"
fi
echo "tsan: the [tsan] tests passed under ThreadSanitizer"
