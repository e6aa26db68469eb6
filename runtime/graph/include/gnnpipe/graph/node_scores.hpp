#pragma once
// The per-node values an edge-cut strategy scores edges with (cut_strategy.hpp), by global node id,
// computed once per run from the full graph; and the score of one edge.
#include <filesystem>
#include <memory>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/cut_strategy.hpp"
#include "gnnpipe/graph/pagerank.hpp"

namespace gnnpipe::graph {

struct NodeScoreOptions {
  PageRankOptions pagerank{};           // the PageRank strategies only
  std::filesystem::path cache_dir{};    // PageRank's disk cache (pagerank_cache.hpp); empty: none
};

struct NodeScores {
  CutStrategy strategy = CutStrategy::kRandom;
  // [num_nodes] by global id: in-degree + 1 (degree strategies) or PageRank (PageRank strategies);
  // null for kRandom. Shared and immutable (the PageRank one is the cache's object).
  std::shared_ptr<const std::vector<double>> values;
};

// The values `strategy` needs for `graph`: O(n) for degrees; PageRank through cached_pagerank.
NodeScores node_scores(const CsrGraph& graph, CutStrategy strategy, const NodeScoreOptions& options = {});

// The score of an edge u -> v from the values of its ends (see cut_strategy.hpp): 1 / (a + b) or
// 1 / (a * b) in double; 0 for kRandom (its order is all tie-breaks, see edge_cut.hpp).
inline double edge_score(CutStrategy strategy, double value_u, double value_v) {
  switch (strategy) {
    case CutStrategy::kDegreeSum:
    case CutStrategy::kPagerankSum: return 1.0 / (value_u + value_v);
    case CutStrategy::kDegreeProduct:
    case CutStrategy::kPagerankProduct: return 1.0 / (value_u * value_v);
    case CutStrategy::kRandom: break;
  }
  return 0.0;
}

}  // namespace gnnpipe::graph
