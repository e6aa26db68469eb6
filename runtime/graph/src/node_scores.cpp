#include "gnnpipe/graph/node_scores.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/pagerank_cache.hpp"

namespace gnnpipe::graph {

NodeScores node_scores(const CsrGraph& graph, CutStrategy strategy, const NodeScoreOptions& options) {
  NodeScores scores{.strategy = strategy, .values = nullptr};
  switch (node_value_of(strategy)) {
    case CutNodeValue::kNone: break;
    case CutNodeValue::kDegree: {
      const auto n = static_cast<std::size_t>(graph.num_nodes());
      auto values = std::make_shared<std::vector<double>>(n);
      const auto offsets = graph.offsets();
      using Range = tbb::blocked_range<std::size_t>;
      tbb::parallel_for(Range(0, n, 1 << 14), core::tsan::fork_join([&](const Range& r) {
        for (std::size_t v = r.begin(); v < r.end(); ++v) (*values)[v] = static_cast<double>(offsets[v + 1] - offsets[v]) + 1.0;
      }));
      scores.values = std::move(values);
      break;
    }
    case CutNodeValue::kPagerank: {
      std::shared_ptr<const PageRank> pr = cached_pagerank(graph, options.pagerank, options.cache_dir).pagerank;
      const std::vector<double>* values = &pr->scores;
      scores.values = std::shared_ptr<const std::vector<double>>(std::move(pr), values);  // shares the cache's object
      break;
    }
  }
  return scores;
}

}  // namespace gnnpipe::graph
