#!/usr/bin/env bash
# Builds the unit tests with ThreadSanitizer (CPU backend) and runs the tests tagged [tsan]: the
# concurrent code of the pipeline (flow graph, dedicated transfer/train/eval threads, snapshot,
# failure path, early stop, identity with the baseline for 1/2/8 sampler threads), parallel batch
# sampling and chunked inference. Any report fails the run (exit code 66). The tag keeps the run
# to a few minutes: under TSan, training through oneTBB runs ~1000x slower than natively.
# Usage: tools/tsan.sh [build dir, default build-tsan/]
# tools/sanitizers/tsan.supp explains the one suppression (oneTBB's uninstrumented scheduler).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build-tsan}

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNNPIPE_CUDA=OFF \
  -DGNNPIPE_SANITIZE=thread -DGNNPIPE_WERROR=ON "${launcher[@]}"
cmake --build "$build_dir" -j "$(nproc 2>/dev/null || echo 2)" --target gnnpipe_unit_tests
# history_size=7: keep enough history to restore both stacks of a report, so that the suppression
# (which matches stack frames) can recognise reports about oneTBB worker threads.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 history_size=7 suppressions=$root/tools/sanitizers/tsan.supp"
"$build_dir/tests/gnnpipe_unit_tests" "[tsan]" --durations yes
echo "tsan: the [tsan] tests passed under ThreadSanitizer"
