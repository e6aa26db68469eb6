#!/usr/bin/env bash
# Proves tools/check_layering.sh can fail: builds small trees with one violation each and
# expects the checker to reject every one, and to accept a clean tree.
# Usage: check_layering_detects.sh PATH/TO/check_layering.sh
set -u
checker=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

make_tree() {  # make_tree DIR: a minimal clean tree
  mkdir -p "$1"/runtime/core/include/gnnpipe/core "$1"/samplers/src "$1"/models/src "$1"/runtime/graph/src \
           "$1"/runtime/core/cuda "$1"/models/cuda
  echo '#include "gnnpipe/core/error.hpp"' > "$1"/runtime/graph/src/ok.cpp
  echo '#include <cuda_runtime.h>' > "$1"/runtime/core/cuda/ok.cu
}
case_expect() {  # case_expect NAME WANT(0|1) FILE CONTENT
  local dir=$tmp/$1
  make_tree "$dir"
  mkdir -p "$(dirname "$dir/$3")"
  printf '%s\n' "$4" >> "$dir/$3"
  bash "$checker" "$dir" >"$tmp/$1.log" 2>&1
  local got=$?
  if { [ "$2" -eq 0 ] && [ $got -ne 0 ]; } || { [ "$2" -ne 0 ] && [ $got -eq 0 ]; }; then
    echo "FAIL: $1 (checker exited $got)"; cat "$tmp/$1.log"; fails=$((fails + 1))
  else
    echo "ok: $1"
  fi
}
case_expect clean 0 samplers/src/a.cpp '#include "gnnpipe/graph/block.hpp"'
case_expect core_includes_graph 1 runtime/core/include/gnnpipe/core/x.hpp '#include "gnnpipe/graph/csr_graph.hpp"'
case_expect samplers_include_models 1 samplers/src/a.cpp '#include "gnnpipe/models/layer.hpp"'
case_expect models_include_samplers 1 models/src/a.cpp '#include <gnnpipe/samplers/sampler.hpp>'
case_expect memory_includes_graph 1 memory/src/m.cpp '#include "gnnpipe/graph/block.hpp"'
case_expect pipeline_includes_experiments 1 runtime/pipeline/src/p.cpp '#include "gnnpipe/experiments/cli.hpp"'
case_expect experiments_includes_all_below 0 experiments/src/e.cpp '#include "gnnpipe/pipeline/x.hpp"
#include "gnnpipe/samplers/s.hpp"
#include "gnnpipe/models/m.hpp"
#include "gnnpipe/core/c.hpp"'
case_expect graph_includes_pipeline 1 runtime/graph/src/b.cpp '#include "gnnpipe/pipeline/trainer.hpp"'
case_expect public_header_includes_cuda 1 runtime/core/include/gnnpipe/core/y.hpp '#include <cuda_runtime.h>'
case_expect cu_includes_tbb 1 models/cuda/k.cu '#include <tbb/flow_graph.h>'
case_expect cu_includes_spdlog 1 models/cuda/k.cu '#include "gnnpipe/core/log.hpp"'
[ "$fails" -eq 0 ]
