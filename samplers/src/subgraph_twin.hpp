#pragma once
// The phases GraphSAINT's and Cluster-GCN's twins share (issue #40): a node set marked per graph
// node, compacted in ascending order by a scan of the marks; the rows it induces
// (induced_phases.hpp); its loss rows. Private to gnnpipe::samplers.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"

namespace gnnpipe::samplers::twin {

// Marks and local ids per graph node (0 and -1 between batches: clear() restores them) and the
// batch's node set and rows, reused across batches.
struct SubgraphArrays {
  explicit SubgraphArrays(graph::NodeId num_nodes)
      : mark(static_cast<std::size_t>(num_nodes), 0), local_of(static_cast<std::size_t>(num_nodes), -1) {}
  std::vector<int32_t> mark, local_of;
  std::vector<int64_t> rank;
  std::vector<int32_t> nodes;
  std::vector<int64_t> lengths, row_start, edge_ids;
  std::vector<int32_t> row_indices;
  std::vector<int32_t> is_loss;
  std::vector<int64_t> loss_start;

  // Every marked node into `nodes` in ascending order, with its local id.
  void compact_marked();
  // The rows the set induces (edge ids too when `with_edge_ids`).
  void induced_rows(const graph::CsrGraph& graph, bool self_loops, bool with_edge_ids);
  // The local ids of the set's training nodes, ascending.
  std::vector<int32_t> loss_rows(std::span<const uint8_t> is_train);
  // Marks and local ids back to 0 and -1.
  void clear();
};

// Calls arrays.clear() when a batch is done, also when it throws.
struct ClearOnExit {
  SubgraphArrays& arrays;
  ~ClearOnExit() { arrays.clear(); }
};

}  // namespace gnnpipe::samplers::twin
