#!/usr/bin/env bash
# Proves tools/check_test_count.sh can fail: a fake test binary and a fake ctest disagree in the
# ways that have happened or could happen (a name split at ';' into two entries, a missing entry,
# an extra entry, an empty list), and the checker must reject each; equal lists must pass.
# Usage: check_test_count_detects.sh PATH/TO/check_test_count.sh
set -u
checker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# case_expect NAME WANT(0|1) LISTED ENTRIES: LISTED are the binary's test names, ENTRIES ctest's
# entry names (each one per line).
case_expect() {
  local dir=$tmp/$1
  mkdir -p "$dir"
  printf '%s' "$3" > "$dir/listed.txt"
  printf '%s' "$4" > "$dir/entries.txt"
  # Like Catch2 2.x: exits with the number of test cases listed.
  printf '#!/usr/bin/env bash\ncat %q\nexit "$(grep -c . %q)"\n' "$dir/listed.txt" "$dir/listed.txt" > "$dir/binary"
  printf '#!/usr/bin/env bash\necho "Test project x"\nn=0\nwhile IFS= read -r line; do n=$((n+1)); echo "  Test  #$n: unit:$line"; done < %q\n' \
    "$dir/entries.txt" > "$dir/ctest"
  chmod +x "$dir/binary" "$dir/ctest"
  bash "$checker" "$dir/ctest" "$dir" "$dir/binary" unit "unit:" > "$dir/log" 2>&1
  local got=$?
  if { [ "$2" -eq 0 ] && [ $got -ne 0 ]; } || { [ "$2" -ne 0 ] && [ $got -eq 0 ]; }; then
    echo "FAIL: $1 (checker exited $got)"; cat "$dir/log"; fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}

case_expect equal 0 $'a test\nanother, with a comma\n' $'another, with a comma\na test\n'
case_expect split_at_semicolon 1 $'x; y\nz\n' $'x\ny\nz\n'
case_expect missing_entry 1 $'a\nb\n' $'a\n'
case_expect extra_entry 1 $'a\n' $'a\nb\n'
case_expect nothing_listed 1 '' ''

if [ $fails -ne 0 ]; then
  echo "check_test_count.sh missed $fails case(s)"
  exit 1
fi
echo "check_test_count.sh rejects every drift"
