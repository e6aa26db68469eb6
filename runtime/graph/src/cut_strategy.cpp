#include "gnnpipe/graph/cut_strategy.hpp"

#include <array>
#include <string>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph {
namespace {

constexpr std::array kStrategies{CutStrategy::kRandom, CutStrategy::kDegreeSum, CutStrategy::kDegreeProduct,
                                 CutStrategy::kPagerankSum, CutStrategy::kPagerankProduct};

}  // namespace

std::string_view to_string(CutStrategy strategy) {
  switch (strategy) {
    case CutStrategy::kRandom: return "random";
    case CutStrategy::kDegreeSum: return "degree_sum";
    case CutStrategy::kDegreeProduct: return "degree_product";
    case CutStrategy::kPagerankSum: return "pagerank_sum";
    case CutStrategy::kPagerankProduct: return "pagerank_product";
  }
  return "unknown";
}

CutStrategy parse_cut_strategy(std::string_view name) {
  std::string names;
  for (const CutStrategy s : kStrategies) {
    if (to_string(s) == name) return s;
    names += (names.empty() ? "" : ", ") + std::string(to_string(s));
  }
  GNNPIPE_THROW(ConfigError, "memory.cut: '{}' is not one of {}", name, names);
}

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
