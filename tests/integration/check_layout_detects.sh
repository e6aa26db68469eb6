#!/usr/bin/env bash
# Proves tools/check_layout.sh can fail: small trees with one problem each (a named folder missing,
# a top-level folder not named, the map without the module order) are rejected; a clean one passes.
# Usage: check_layout_detects.sh PATH/TO/tools   (the folder of check_layout.sh and check_layering.sh)
set -u
tools=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
order=$(bash "$tools/check_layering.sh" --order)

make_tree() {  # make_tree DIR: a tree the check accepts
  mkdir -p "$1"/runtime/core "$1"/models/cuda "$1"/docs
  printf '# x\n\n## Layout\n\n| folder | what |\n|---|---|\n| `runtime/core` | core |\n| `models` | m |\n| `models/cuda` | k |\n| `docs` | d |\n\n## Next\n| `nothere` | not in the table |\n' > "$1"/README.md
  printf '# Map\n\n`%s`\n' "$order" > "$1"/docs/ARCHITECTURE.md
}
expect() {  # expect NAME WANT(0|1)
  bash "$tools/check_layout.sh" "$tmp/$1" >"$tmp/$1.log" 2>&1
  local got=$?
  if { [ "$2" -eq 0 ] && [ $got -ne 0 ]; } || { [ "$2" -ne 0 ] && [ $got -ne 1 ]; }; then
    echo "FAIL: $1 (check exited $got)"; cat "$tmp/$1.log"; fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}
make_tree "$tmp/clean"; expect clean 0
make_tree "$tmp/missing"; rm -r "$tmp/missing/models/cuda"; expect missing 1
make_tree "$tmp/unnamed"; mkdir -p "$tmp/unnamed/samplers"; expect unnamed 1
make_tree "$tmp/no_order"; printf '# Map\n' > "$tmp/no_order/docs/ARCHITECTURE.md"; expect no_order 1
make_tree "$tmp/hidden_and_build"; mkdir -p "$tmp/hidden_and_build/.ci" "$tmp/hidden_and_build/build-x"; expect hidden_and_build 0
[ "$fails" -eq 0 ]
