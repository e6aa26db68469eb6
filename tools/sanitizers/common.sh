# Sourced by tools/tsan.sh and tools/asan.sh: the sanitizer build and the canary check they share.
# Expects `root` (the repository) to be set.

# build_sanitized_tests BUILD_DIR SANITIZERS [CMAKE_ARG...]: configures BUILD_DIR for the CPU
# backend with -DGNNPIPE_SANITIZE=SANITIZERS (warnings as errors, ccache when installed), builds
# gnnpipe_unit_tests and sets `tests` to its path.
build_sanitized_tests() {
  local build_dir=$1 sanitizers=$2
  shift 2
  # shellcheck source=tools/ccache_env.sh
  source "$root/tools/ccache_env.sh"
  # MPI off: the unit tests never join ranks, and OpenMPI's libraries would bring their own
  # allocations and threads into the sanitizers' reports (the MPI runs are ctest's, unsanitized).
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGNNPIPE_CUDA=OFF -DGNNPIPE_MPI=OFF \
    "-DGNNPIPE_SANITIZE=$sanitizers" -DGNNPIPE_WERROR=ON "${ccache_cxx_launcher[@]}" "$@"
  cmake --build "$build_dir" -j "$(nproc 2>/dev/null || echo 2)" --target gnnpipe_unit_tests
  tests=$build_dir/tests/gnnpipe_unit_tests
}

# expect_report NAME TAG EXIT_CODE HINT PATTERN...: runs the unit tests' hidden canary TAG (a
# deliberate bug), which must end with EXIT_CODE and print every PATTERN; otherwise prints its log,
# "NAME: the canary TAG was not reported ... HINT" and exits 1: a sanitizer run that misses its
# canary would check nothing.
expect_report() {
  local name=$1 tag=$2 expected=$3 hint=$4
  shift 4
  local log rc missing=0
  log=$(mktemp)
  set +e
  "$tests" "$tag" >"$log" 2>&1
  rc=$?
  set -e
  local pattern
  for pattern in "$@"; do grep -q "$pattern" "$log" || missing=1; done
  if [[ $rc -ne $expected || $missing -ne 0 ]]; then
    cat "$log" >&2
    rm -f "$log"
    echo "$name: the canary $tag was not reported (exit code $rc, expected $expected and: $*): $hint" >&2
    exit 1
  fi
  rm -f "$log"
  echo "$name: the canary $tag was reported, as it must be"
}
