#pragma once
// Dataset: everything a run trains on. A graph, node features, labels (single-label int32 with -1
// for unlabeled, or multi-label 0/1 rows), train/val/test node sets, the class count, a name, and
// a record of anything synthesized (random features, a generated split) that reports must state.
#include <cstdint>
#include <string>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph {

struct Labels {
  // Single-label: one class id per node in [0, num_classes), or -1 for unlabeled.
  HostArray<int32_t> single;
  // Multi-label: num_nodes x num_classes values of 0 or 1, row-major (empty for single-label).
  HostArray<uint8_t> multi;
  int32_t num_classes = 0;  // 0: the dataset has no labels (e.g. a bare edge list)

  bool is_multi_label() const { return !multi.empty(); }
  bool empty() const { return single.empty() && multi.empty(); }
};

struct Splits {
  HostArray<NodeId> train;
  HostArray<NodeId> val;
  HostArray<NodeId> test;
};

struct Dataset {
  std::string name;
  CsrGraph graph;
  FeatureStore features;
  Labels labels;
  Splits splits;
  // One line per synthesized part, e.g. "features: random normal 128-dim, seed 0".
  std::vector<std::string> synthesized;

  NodeId num_nodes() const { return graph.num_nodes(); }

  // Checks that the parts agree: feature rows (when there are features) and label count equal
  // num_nodes; a dataset without labels has num_classes 0 and no splits; labels lie in
  // [-1, num_classes) (multi-label: 0 or 1), split members are in range, unique within a split
  // and labeled, and features are finite. Throws DataError naming `source` and the problem.
  void validate(const std::string& source) const;
};

}  // namespace gnnpipe::graph
