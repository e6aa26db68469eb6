#!/usr/bin/env bash
# Checks the module layering (docs/ARCHITECTURE.md, "Floors") and the header hygiene of
# docs/DESIGN.md §2 on a source tree:
#   1. a module includes gnnpipe/<m>/ headers only of itself and of modules on lower floors; two
#      modules on one floor (samplers, models) never include each other;
#   2. public headers (*/include/) never include CUDA headers;
#   3. .cu/.cuh files never include oneTBB, spdlog or yaml-cpp (nvcc cannot compile them),
#      directly or through gnnpipe/core/log.hpp.
# Usage: check_layering.sh [ROOT]   (default: the repository this script is in)
#        check_layering.sh --order   prints the module order line (the map states the same line)
# Prints one line per violation and exits 1 if there is any.
set -u

# The module order, bottom floor first: the one statement of it (docs/ARCHITECTURE.md quotes the
# line `--order` prints, and a test keeps the two equal). Modules on one floor are separated by a
# space.
floors=("core" "memory" "graph" "samplers models" "pipeline" "experiments")
# Where each module's sources live (the design's folders: runtime/ holds the bottom floors, core
# and graph, and the top floor's pipeline).
declare -A dir_of=(
  [core]=runtime/core [memory]=memory [graph]=runtime/graph [samplers]=samplers
  [models]=models [pipeline]=runtime/pipeline [experiments]=experiments)

order_line() {
  local line="" floor
  for floor in "${floors[@]}"; do
    [ -n "$line" ] && line+=" < "
    if [[ $floor == *" "* ]]; then line+="{${floor// /, }}"; else line+=$floor; fi
  done
  echo "$line"
}
if [ "${1:-}" = "--order" ]; then
  order_line
  exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "check_layering: cannot enter $root"; exit 2; }

# allowed[m]: m itself and every module on a lower floor.
declare -A allowed=()
below=""
for floor in "${floors[@]}"; do
  for module in $floor; do allowed[$module]="$module $below"; done
  below="$floor $below"
done

violations=0
report() { echo "layering: $*"; violations=$((violations + 1)); }

sources() { [ -d "$1" ] && find "$1" -type f \( -name '*.hpp' -o -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \); }

for module in "${!dir_of[@]}"; do
  dir=${dir_of[$module]}
  # For runtime/core etc. the folder itself; experiments never nests other modules.
  while IFS= read -r file; do
    [ -n "$file" ] || continue
    while IFS= read -r used; do
      [ -n "$used" ] || continue
      case " ${allowed[$module]} " in
        *" $used "*) ;;
        *) report "$file ($module) includes gnnpipe/$used/, which is not below it" ;;
      esac
    done < <(grep -hoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]gnnpipe/[a-z_]+/' "$file" |
             sed -E 's|.*gnnpipe/([a-z_]+)/|\1|' | sort -u)
  done < <(sources "$dir")
done

# Public headers stay free of CUDA headers.
while IFS= read -r file; do
  [ -n "$file" ] || continue
  if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](cuda|cuda_runtime|cuda_runtime_api|cublas|cublas_v2|cusparse|cuda_fp16|cuda_bf16|thrust/|cub/|nvtx)' "$file"; then
    report "$file is a public header and includes a CUDA header"
  fi
done < <(find . -path ./build -prune -o -path '*/include/*' -type f \( -name '*.hpp' -o -name '*.h' \) -print)

# nvcc-compiled files stay free of TBB, spdlog and yaml-cpp.
while IFS= read -r file; do
  [ -n "$file" ] || continue
  if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](tbb/|oneapi/tbb|spdlog/|yaml-cpp/|gnnpipe/core/log\.hpp)' "$file"; then
    report "$file is compiled by nvcc and includes oneTBB, spdlog or yaml-cpp"
  fi
done < <(find . -path ./build -prune -o -type f \( -name '*.cu' -o -name '*.cuh' \) -print)

if [ "$violations" -gt 0 ]; then
  echo "layering: $violations violation(s)"
  exit 1
fi
echo "layering: ok ($(order_line))"
