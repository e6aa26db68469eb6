#include "gnnpipe/graph/cut_strategy.hpp"

namespace gnnpipe::graph {

CutNodeValue node_value_of(CutStrategy strategy) {
  switch (strategy) {
    case CutStrategy::kRandom: return CutNodeValue::kNone;
    case CutStrategy::kDegreeSum:
    case CutStrategy::kDegreeProduct: return CutNodeValue::kDegree;
    case CutStrategy::kPagerankSum:
    case CutStrategy::kPagerankProduct: return CutNodeValue::kPagerank;
  }
  return CutNodeValue::kNone;
}

}  // namespace gnnpipe::graph
