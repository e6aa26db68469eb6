#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (CPU backend) and runs,
# under both:
#  1. the canaries (tests/unit/test_sanitizer_canaries.cpp, hidden tags): a heap read one past an
#     allocation and a signed overflow. Each must be reported with its sanitizer's exit code, else
#     this script fails: the run below would otherwise check nothing.
#  2. every unit test case (the whole suite: about 2 minutes plain, 5-7 under the sanitizers on the
#     2-core CI machine), which must give no report. ASan stops at the first error (exit 67), UBSan
#     halts at the first undefined behaviour (exit 68), LeakSanitizer reports leaks at exit.
# Time box: the run is killed past GNNPIPE_ASAN_DEADLINE_S seconds (default 1800), which fails the
# script, so .ci/run stays well inside CI's 90 minutes even if something hangs.
# What is not checked: the CUDA code (no GPU in CI; tools/device runs compute-sanitizer there), and
# third-party libraries (oneTBB, OpenBLAS, yaml-cpp are not instrumented; ASan still sees our
# accesses to memory they return).
# Usage: tools/asan.sh [build dir, default build-asan/]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-asan}

# shellcheck source=sanitizers/common.sh
source "$root/tools/sanitizers/common.sh"
# -O1 -g1 (line tables): the reports keep file:line stacks, and the build compiles about twice as
# fast as -O2 -g, which is what keeps this stage inside CI's budget on a cold ccache.
build_sanitized_tests "$build_dir" address,undefined "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
export ASAN_OPTIONS="halt_on_error=1 exitcode=67 detect_leaks=1 strict_string_checks=1 check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1 exitcode=68 print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$root/tools/sanitizers/lsan.supp"

hint="the sanitizer build or its options check nothing"
expect_report asan "[asan_expected_error]" 67 "$hint" "AddressSanitizer: heap-buffer-overflow"
expect_report asan "[ubsan_expected_error]" 68 "$hint" "runtime error: signed integer overflow"

deadline=${GNNPIPE_ASAN_DEADLINE_S:-1800}
set +e
timeout --signal=KILL "$deadline" "$tests" --durations no
rc=$?
set -e
if [[ $rc -eq 137 ]]; then
  echo "asan: the unit tests passed the ${deadline} s deadline under ASan+UBSan and were killed" >&2
  exit 1
elif [[ $rc -ne 0 ]]; then
  echo "asan: the unit tests failed under ASan+UBSan (exit code $rc: 67 ASan, 68 UBSan, 23 leaks)" >&2
  exit "$rc"
fi
echo "asan: every unit test passed under AddressSanitizer + UndefinedBehaviorSanitizer"
