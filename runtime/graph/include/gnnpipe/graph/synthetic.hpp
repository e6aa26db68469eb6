#pragma once
// Synthetic datasets: a degree-corrected stochastic block model with power-law expected degrees
// (Chung-Lu weights), class-centroid features and random splits. For benchmarks at any size
// (ogbn-products scale in well under two minutes on two cores) and for tests.
//
// The model. Every node gets a community, which is also its label; communities have sizes
// floor(n/K) or ceil(n/K) and are assigned by a seeded permutation (ids carry no class order).
// Every node gets a weight w_v ~ Pareto with tail exponent `power_law_exponent` (P(w > x) ~
// x^-(exponent-1)), capped at sqrt(nodes * avg_degree) (the Chung-Lu condition, which keeps hub
// pairs from needing more than one edge). Each undirected edge picks its first endpoint u with
// probability proportional to w_u; with probability `homophily` the second endpoint is drawn
// in proportion to weight inside u's community, otherwise in proportion to weight from the other
// communities. So `homophily` is the expected edge homophily (fraction of edges joining nodes of
// one class) and expected degrees follow the weights. Self-loops are dropped and parallel
// edges merged; edges are added until the symmetrized CSR has about nodes * avg_degree entries.
//
// Features: row v = centroid[label v] + N(0, feature_noise^2) per dimension, float32, where each
// class centroid has N(0, 1) entries. Splits: a seeded permutation cut into train / val / test by
// the fractions, each part sorted ascending.
//
// Determinism: every random draw is keyed by (seed, purpose, chunk or node index) with Philox,
// so the output depends only on the options, never on the thread count.
#include <cstdint>
#include <span>
#include <string>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph {

struct SyntheticOptions {
  int64_t nodes = 100000;
  double avg_degree = 20;  // average undirected degree: the CSR holds about nodes * avg_degree entries
  int features = 64;
  int classes = 16;
  uint64_t seed = 0;
  double homophily = 0.8;            // expected fraction of edges inside one community
  double power_law_exponent = 2.5;   // degree distribution tail, > 2 (finite mean)
  double feature_noise = 1.0;        // std-dev of the Gaussian noise around the class centroid
  double train_fraction = 0.6;
  double val_fraction = 0.2;         // the rest is test

  bool operator==(const SyntheticOptions&) const = default;
};

// Throws ConfigError naming the field ("synthetic.nodes must be > 0, got 0") on a bad option.
void validate(const SyntheticOptions& options);

// The graph part: symmetric, sorted rows, no self-loops, no duplicates; communities[v] in
// [0, classes) is node v's community (= label).
struct SyntheticGraph {
  CsrGraph graph;
  HostArray<int32_t> communities;
};
SyntheticGraph make_synthetic_graph(const SyntheticOptions& options);

// Features for nodes labeled `labels` (labels.size() x options.features values, row-major).
HostArray<float> make_synthetic_features(const SyntheticOptions& options, std::span<const int32_t> labels);

// A seeded random split of nodes [0, num_nodes) by options.train_fraction / val_fraction.
Splits make_random_splits(const SyntheticOptions& options, NodeId num_nodes);

// One line describing the generator and every parameter (recorded in Dataset::synthesized).
std::string describe(const SyntheticOptions& options);

// The whole dataset, named "synthetic-<nodes>": validates the options, then assembles the parts
// above. Uses oneTBB for the parallel parts.
Dataset make_synthetic(const SyntheticOptions& options);

}  // namespace gnnpipe::graph
