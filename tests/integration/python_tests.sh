#!/usr/bin/env bash
# The Python package's pytest suite (python/tests) under Debian's python3, importing the module
# from the build tree (the 4th argument: one test file of python/tests). Skips (77) without
# python3-pytest.
set -euo pipefail
module_dir=$1 gnnpipe=$2 root=$3 tests=${4:-}
py=/usr/bin/python3
"$py" -c "import pytest" 2>/dev/null || { echo "SKIP: $py has no pytest (python3-pytest)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# torch's OpenMP threads wait for work passively: spinning, they took the CPUs from OpenBLAS's and
# gnnpipe's threads beside them (the loader test's torch epochs 15 % faster on the 2-core VM).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
PYTHONPATH=$module_dir GNNPIPE_BIN=$gnnpipe GNNPIPE_DATA_DIR=${GNNPIPE_DATA_DIR:-$root/../shared/datasets} \
  "$py" -m pytest -q -rs -p no:cacheprovider "$root/python/tests${tests:+/$tests}"
