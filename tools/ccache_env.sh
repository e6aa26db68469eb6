# Sourced by the build scripts (build.sh, sanitizers/common.sh, fuzz.sh, device/ready.sh); expects
# `root` (the repository). When ccache is installed: sets `ccache_launchers` (the cmake arguments
# for C++ and CUDA) and `ccache_cxx_launcher` (C++ only), and lets a build in another clone of the
# repository on this machine (CI's fresh clone) hit the cache this one filled: paths under the
# repository are hashed relative to it (CCACHE_BASEDIR), and the build folder's own path is left
# out of the hash (CCACHE_NOHASHDIR). The cost: the debug info of an object taken from the cache
# names the build folder that compiled it as its compilation directory. Error messages are not
# affected (core::Error prints a source file's base name). Either variable, set already, wins.
ccache_launchers=()
ccache_cxx_launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  ccache_cxx_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  ccache_launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
