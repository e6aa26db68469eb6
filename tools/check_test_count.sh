#!/usr/bin/env bash
# Checks that ctest runs exactly the test cases a Catch2 binary lists: one ctest entry per test
# case, with the same name, none missing and none extra. (catch_discover_tests used to split a
# name containing ';' into two entries that matched nothing and passed; with `-w NoTests` such an
# entry now fails, and this check catches any other way the two lists could drift apart.)
# Usage: check_test_count.sh CTEST BUILD_DIR TEST_BINARY LABEL PREFIX
#   e.g. check_test_count.sh ctest build build/tests/gnnpipe_unit_tests unit "unit:"
set -euo pipefail
ctest_cmd=$1 build_dir=$2 binary=$3 label=$4 prefix=$5

# Hidden test cases ([.tag]) are not listed, exactly as catch_discover_tests does not list them.
# Catch2 2.x exits with the number of test cases listed, so the status is not an error here.
raw=$("$binary" --list-test-names-only) || true
listed=$(printf '%s\n' "$raw" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$' | sort)
entries=$(cd "$build_dir" && "$ctest_cmd" -N -L "^${label}\$" |
          sed -n "s/^ *Test *#[0-9]*: ${prefix}[[:space:]]*//p" | sed 's/[[:space:]]*$//' | sort)
n_listed=$(printf '%s\n' "$listed" | grep -c . || true)
n_entries=$(printf '%s\n' "$entries" | grep -c . || true)
if [ "$listed" != "$entries" ]; then
  echo "check_test_count: $binary lists $n_listed test cases but ctest has $n_entries '$label' entries; differences (< listed only, > ctest only):"
  diff <(printf '%s\n' "$listed") <(printf '%s\n' "$entries") | grep '^[<>]' | head -40
  exit 1
fi
if [ "$n_listed" -eq 0 ]; then
  echo "check_test_count: $binary lists no test cases"
  exit 1
fi
echo "check_test_count: $n_listed test cases listed by $(basename "$binary"), $n_entries ctest entries: equal"
