#include "gnnpipe/graph/pagerank.hpp"

#include <tbb/parallel_for.h>

#include <cmath>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::graph {
namespace {

// Nodes per reduction chunk. Fixed, so partial sums and their order never depend on threads.
constexpr std::size_t kChunk = 4096;

// Adds partial sums in chunk order.
double ordered_sum(const std::vector<double>& partial) {
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace

PageRank pagerank(const CsrGraph& graph, const PageRankOptions& o) {
  GNNPIPE_CHECK_CONFIG(o.damping >= 0.0 && o.damping < 1.0, "pagerank: damping must be in [0, 1), got {}", o.damping);
  GNNPIPE_CHECK_CONFIG(o.tolerance >= 0.0, "pagerank: tolerance must be >= 0, got {}", o.tolerance);
  GNNPIPE_CHECK_CONFIG(o.max_iterations >= 1, "pagerank: max_iterations must be >= 1, got {}", o.max_iterations);
  PageRank result;
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  if (n == 0) {
    result.converged = true;
    return result;
  }
  const core::Stopwatch watch;
  const std::vector<EdgeOffset> out_degree = graph.out_degrees();  // integer atomics: exact
  const double inv_n = 1.0 / static_cast<double>(n);
  std::vector<double> rank(n, inv_n);
  std::vector<double> next(n);
  std::vector<double> contrib(n);  // pr[u] / out_degree(u), 0 for a dangling u
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(chunks);
  auto chunk_end = [&](std::size_t c) { return std::min(n, (c + 1) * kChunk); };
  const auto offsets = graph.offsets();
  const auto indices = graph.indices();

  for (int it = 1; it <= o.max_iterations; ++it) {
    tbb::parallel_for(std::size_t{0}, chunks, core::tsan::fork_join([&](std::size_t c) {
      double dangling = 0.0;
      for (std::size_t u = c * kChunk; u < chunk_end(c); ++u) {
        const EdgeOffset d = out_degree[u];
        if (d > 0) {
          contrib[u] = rank[u] / static_cast<double>(d);
        } else {
          contrib[u] = 0.0;
          dangling += rank[u];
        }
      }
      partial[c] = dangling;
    }));
    const double base = (1.0 - o.damping) * inv_n + o.damping * ordered_sum(partial) * inv_n;
    tbb::parallel_for(std::size_t{0}, chunks, core::tsan::fork_join([&](std::size_t c) {
      double change = 0.0;
      for (std::size_t v = c * kChunk; v < chunk_end(c); ++v) {
        double sum = 0.0;
        for (auto e = offsets[v]; e < offsets[v + 1]; ++e) sum += contrib[static_cast<std::size_t>(indices[static_cast<std::size_t>(e)])];
        next[v] = base + o.damping * sum;
        change += std::abs(next[v] - rank[v]);
      }
      partial[c] = change;
    }));
    rank.swap(next);
    result.iterations = it;
    result.delta = ordered_sum(partial);
    if (result.delta < o.tolerance) {
      result.converged = true;
      break;
    }
  }
  if (!result.converged) {
    core::logger().warn("PageRank: not converged after {} iterations (L1 change {:.3g}, tolerance {:.3g})",
                        result.iterations, result.delta, o.tolerance);
  }
  core::logger().debug("PageRank: {} nodes, {} edges, {} iterations in {:.3f} s (L1 change {:.3g})", n,
                       graph.num_edges(), result.iterations, watch.seconds(), result.delta);
  result.scores = std::move(rank);
  return result;
}

}  // namespace gnnpipe::graph
