#!/usr/bin/env bash
# On the dev machine: downloads the .deb files listed in tools/device/packages.txt into the
# git-ignored .deps/ folder, for a device-tool call that carries `.deps` (see docs/DEVICE.md).
# Also copies the datasets named as arguments from ../shared/datasets into .deps/datasets/
# (the device machine cannot see ../shared), e.g.: prepare.sh cora ogbn-arxiv
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
deps=$root/.deps
mkdir -p "$deps/debs"
mapfile -t pkgs < <(grep -v '^#' "$root/tools/device/packages.txt" | tr ' ' '\n' | grep -v '^$')
[ -n "$(find /var/lib/apt/lists -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update
(cd "$deps/debs" && apt-get download "${pkgs[@]}")
for name in "$@"; do
  src=$root/../shared/datasets/$name
  [ -d "$src" ] || { echo "prepare: no dataset $src"; exit 1; }
  mkdir -p "$deps/datasets"
  cp -r "$src" "$deps/datasets/"
done
# PyG's own full-batch GCN timing script (../shared/reference/peers), for the bench phase.
if [ -d "$root/../shared/reference/peers" ]; then
  mkdir -p "$deps/peers"
  cp "$root/../shared/reference/peers/"*.py "$deps/peers/"
fi
du -sh "$deps"
echo "prepare: ${#pkgs[@]} packages in $deps/debs; carry '.deps' in the device call"
