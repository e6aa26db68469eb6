#!/usr/bin/env bash
# Installs the gnnpipe Python package (issue #43, docs/PYTHON.md) for Debian's python3: builds the
# module if needed (BUILD_DIR, default build/) and copies python/gnnpipe (the module and the
# package's files) into that interpreter's site-packages (/usr/local/lib/python3.X/dist-packages as
# root, else the user's site-packages). Usage: bash tools/install_python.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
py=/usr/bin/python3
[ -x "$py" ] || { echo "install_python: no $py (Debian's python3)"; exit 1; }
if [ ! -d "$build_dir" ]; then
  echo "install_python: no build in $build_dir: run bash tools/test.sh (or tools/build.sh) first"
  exit 1
fi
cmake --build "$build_dir" --target gnnpipe_python
package=$build_dir/python/gnnpipe
[ -f "$package/__init__.py" ] || { echo "install_python: $package was not built (pybind11-dev, python3-dev: tools/setup.sh)"; exit 1; }
if [ "$(id -u)" = 0 ]; then
  dest=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib", "posix_local"))' 2>/dev/null ||
         "$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
else
  dest=$("$py" -m site --user-site)
fi
mkdir -p "$dest"
rm -rf "$dest/gnnpipe"
cp -r "$package" "$dest/gnnpipe"
cd /
"$py" -c 'import gnnpipe, sys; print("install_python: gnnpipe", gnnpipe.__file__, "for", sys.executable)'
