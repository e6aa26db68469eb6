#pragma once
// PageRank of a CsrGraph by power iteration (Page et al. 1999), for the PageRank-based edge-cut
// strategies (edge_cut.hpp, issue #13). Every CSR entry (row v, column u) is one edge u -> v, so a
// repeated edge carries its multiplicity and a self-loop keeps mass at its node. Each step is
//   pr'[v] = (1 - d) / n + d * (sum over in-neighbors u of pr[u] / out_degree(u) + D / n),
// where D is the rank held by dangling nodes (no out-edges), spread uniformly over all nodes; the
// ranks start uniform at 1/n and always sum to 1 (up to rounding).
//
// Deterministic for any thread count: rows are summed in CSR order, and the dangling mass and the
// L1 change are reduced over fixed-size node chunks whose partial sums are added in chunk order
// (no floating-point atomics), so one thread and sixteen give the same bits.
#include <cstdint>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"

namespace gnnpipe::graph {

struct PageRankOptions {
  double damping = 0.85;    // d, in [0, 1)
  // Stop once the L1 change of an iteration, sum_v |pr'[v] - pr[v]|, falls below this. Not scaled
  // by n (networkx compares with n * tol): the error after stopping is about tolerance * d / (1 - d)
  // in total, far below the 1/n of an average node even for 10^8 nodes.
  double tolerance = 1e-6;
  int max_iterations = 100;  // at most this many steps, converged or not (>= 1)
};

struct PageRank {
  std::vector<double> scores;  // [num_nodes], by node id, sums to 1
  int iterations = 0;          // steps taken
  double delta = 0.0;          // L1 change of the last step
  bool converged = false;      // delta < tolerance (false also when max_iterations stopped it)
};

// Computes PageRank in parallel (oneTBB) in O(iterations * (n + E)) time and O(n) extra memory.
// A graph without nodes gives empty scores. Throws ConfigError for options outside their ranges;
// logs a warning when max_iterations is reached before the tolerance. Thread-safe (reads `graph`).
PageRank pagerank(const CsrGraph& graph, const PageRankOptions& options = {});

}  // namespace gnnpipe::graph
