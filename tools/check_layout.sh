#!/usr/bin/env bash
# Checks that the map matches the house (issue 37):
#   1. every folder named in README.md's "## Layout" table (its first column, in backquotes) exists;
#   2. every top-level folder of the tree (tracked files only in a git checkout; hidden and build*
#      folders left out) is named there, itself or through a folder under it (runtime/core names
#      runtime);
#   3. docs/ARCHITECTURE.md states the module order that tools/check_layering.sh enforces (the line
#      `check_layering.sh --order` prints, in backquotes).
# Usage: check_layout.sh [ROOT]   (default: the repository this script is in)
# Prints one line per problem and exits 1 if there is any.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=${1:-$(cd "$here/.." && pwd)}
cd "$root" || { echo "check_layout: cannot enter $root"; exit 2; }
problems=0
report() { echo "layout: $*"; problems=$((problems + 1)); }

[ -f README.md ] || { echo "layout: $root/README.md is missing"; exit 1; }
named=$(awk '/^## Layout/ {on = 1; next} /^## / {on = 0} on && /^\| `/' README.md |
        sed -E 's/^\| `([^`]+)`.*/\1/' | sed -E 's#/$##')
[ -n "$named" ] || report "README.md has no \"## Layout\" table with folders in its first column"
for folder in $named; do
  [ -d "$folder" ] || report "README.md's layout table names $folder, which does not exist"
done

if git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  top=$(git -C "$root" ls-files | awk -F/ 'NF > 1 {print $1}' | sort -u)
else
  top=$(find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi
for folder in $top; do
  case $folder in .* | build*) continue ;; esac
  found=0
  for n in $named; do
    [ "$n" = "$folder" ] || [ "${n%%/*}" = "$folder" ] && { found=1; break; }
  done
  [ $found -eq 1 ] || report "top-level folder $folder is not named in README.md's layout table"
done

order=$(bash "$here/check_layering.sh" --order)
if [ ! -f docs/ARCHITECTURE.md ]; then
  report "docs/ARCHITECTURE.md is missing"
elif ! grep -qF "\`$order\`" docs/ARCHITECTURE.md; then
  report "docs/ARCHITECTURE.md does not state the module order \`$order\` (tools/check_layering.sh --order)"
fi

if [ "$problems" -gt 0 ]; then
  echo "layout: $problems problem(s)"
  exit 1
fi
echo "layout: ok ($(echo $named | wc -w) folders named, module order $order)"
