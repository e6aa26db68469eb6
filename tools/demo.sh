#!/usr/bin/env bash
# The main job, end to end on this machine: set up, Release build, then run gnnpipe.
# Until training lands (issue #4) the run is a smoke run of what exists: the build's identity and
# `gnnpipe doctor`, which exercises devices, streams, events, pinned and device buffers and copy
# bandwidth on the CPU backend and on every visible GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-release}

bash "$root/tools/setup.sh"
bash "$root/tools/build.sh" "$build_dir" Release
gnnpipe=$build_dir/experiments/gnnpipe

echo
echo "== gnnpipe --version"
"$gnnpipe" --version
echo
echo "== gnnpipe doctor"
"$gnnpipe" doctor
echo
echo "demo: built gnnpipe (Release) in $build_dir and checked this machine with 'gnnpipe doctor'."
echo "demo: 'gnnpipe run configs/quickstart.yaml' becomes the demo once training lands (issue #4)."
