#!/usr/bin/env bash
# Installs the Debian packages gnnpipe's build needs (and tools/plot.py's matplotlib), when they are missing:
# OpenMPI for data-parallel ranks (its mpirun wants an rsh agent even on one machine: openssh-client),
# pybind11 and the Python headers for the Python module, pytest, numpy, scipy and torch (the
# loader's training test, CPU) for its tests.
# As root: runs `apt-get update` once, then installs what is missing. Otherwise: prints the one
# command to run and exits 1. Prints nothing to do when everything is there.
set -euo pipefail

packages=(cmake ninja-build g++ ccache pkg-config libtbb-dev libspdlog-dev libfmt-dev libyaml-cpp-dev catch2
          libopenblas-dev libmetis-dev libcli11-dev nlohmann-json3-dev zlib1g-dev libbenchmark-dev libmatio-dev
          python3-matplotlib python3-numpy libopenmpi-dev openmpi-bin
          pybind11-dev python3-dev python3-pytest python3-scipy python3-torch openssh-client)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} build packages are installed"
  exit 0
fi

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}"
  echo "setup: run as root:  $cmd"
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
