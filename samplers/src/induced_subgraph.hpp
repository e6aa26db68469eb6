#pragma once
// The subgraph induced by a node set: every full-graph edge whose two endpoints were chosen.
// Private to gnnpipe::samplers (GraphSAINT; the shape any subgraph sampler needs).
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers::detail {

// Rows of an induced subgraph over local ids, kept in a workspace and reused across batches.
// indices and edge_ids hold num_edges entries; the vectors themselves only grow (to the largest
// bound seen), so a warm workspace neither reallocates nor re-zeroes them.
struct InducedRows {
  std::vector<graph::EdgeOffset> offsets;   // [nodes + 1]
  std::vector<graph::NodeId> indices;       // local source ids
  std::vector<graph::EdgeOffset> edge_ids;  // full-graph CSR position of each entry; -1 for an added self-loop
  std::size_t num_edges = 0;
};

// Fills `out` with the rows of `nodes` (global ids; local id i is nodes[i]) where local_of maps
// every chosen global id to its local id and every other node to -1. Row i lists, in the order of
// the full graph's row, each in-neighbor that was chosen. With `add_self_loops` every row gets
// exactly one i -> i (edge id -1), placed before the first in-neighbor >= v (so sorted rows stay
// sorted), and the graph's own self-loops are skipped (as the neighbor sampler does): the rows of
// induced_phases.hpp, which the GPU sampler and the twins build.
// O(sum of the full in-degrees of `nodes`).
void induced_rows(const graph::CsrGraph& graph, std::span<const graph::NodeId> nodes,
                  std::span<const graph::NodeId> local_of, bool add_self_loops, InducedRows& out);

// A subgraph sampler's batch (GraphSAINT, Cluster-GCN, and their twins): one square block over
// `nodes` (sorted rows and the transpose, Block::from_csr) shared by `num_layers` layers, every
// node an input and a target, the loss over `loss_rows` (weighted when loss_weights is not empty).
graph::MiniBatch assemble_subgraph_batch(const BatchSpec& spec, std::span<const graph::NodeId> nodes,
                                         graph::HostArray<graph::EdgeOffset> offsets, graph::HostArray<graph::NodeId> indices,
                                         graph::HostArray<float> weights, std::vector<int32_t> loss_rows,
                                         std::vector<float> loss_weights, std::size_t num_layers, std::string_view what);

}  // namespace gnnpipe::samplers::detail
