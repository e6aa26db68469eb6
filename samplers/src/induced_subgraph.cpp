#include "induced_subgraph.hpp"

#include <algorithm>

namespace gnnpipe::samplers::detail {

using graph::EdgeOffset;
using graph::NodeId;

void induced_rows(const graph::CsrGraph& graph, std::span<const NodeId> nodes, std::span<const NodeId> local_of,
                  bool add_self_loops, InducedRows& out) {
  const auto offsets = graph.offsets();
  const NodeId* indices = graph.indices().data();
  // Room for every in-edge of every chosen node (plus its self-loop), so the scan below can write
  // each candidate unconditionally and keep it by advancing a count: about a third of the
  // candidates are kept on arxiv-like graphs, which as a branch would be mispredicted half the time.
  std::size_t bound = 0;
  for (NodeId v : nodes) {
    bound += static_cast<std::size_t>(offsets[static_cast<std::size_t>(v) + 1] - offsets[static_cast<std::size_t>(v)]);
  }
  if (add_self_loops) bound += nodes.size();
  if (out.indices.size() < bound) {
    out.indices.resize(bound);
    out.edge_ids.resize(bound);
  }
  out.offsets.resize(nodes.size() + 1);
  out.offsets[0] = 0;
  NodeId* kept_local = out.indices.data();
  EdgeOffset* kept_edge = out.edge_ids.data();
  std::size_t n = 0;
  // Appends the chosen sources among positions [begin, end) of v's row; with self-loops the
  // graph's own v -> v is not kept.
  auto scan = [&](EdgeOffset begin, EdgeOffset end, NodeId v) {
    for (EdgeOffset e = begin; e < end; ++e) {
      const NodeId u = indices[e];
      const NodeId local_u = local_of[static_cast<std::size_t>(u)];
      kept_local[n] = local_u;
      kept_edge[n] = e;
      n += static_cast<std::size_t>((local_u >= 0) & (!add_self_loops | (u != v)));
    }
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    const EdgeOffset begin = offsets[static_cast<std::size_t>(v)];
    const EdgeOffset end = offsets[static_cast<std::size_t>(v) + 1];
    if (add_self_loops) {
      // Before the first in-neighbor >= v (induced_phases.hpp; for a sorted row, its lower bound).
      const EdgeOffset split = std::find_if(indices + begin, indices + end, [v](NodeId u) { return u >= v; }) - indices;
      scan(begin, split, v);
      kept_local[n] = static_cast<NodeId>(i);
      kept_edge[n] = -1;
      ++n;
      scan(split, end, v);
    } else {
      scan(begin, end, v);
    }
    out.offsets[i + 1] = static_cast<EdgeOffset>(n);
  }
  out.num_edges = n;
}

graph::MiniBatch assemble_subgraph_batch(const BatchSpec& spec, std::span<const NodeId> nodes,
                                         graph::HostArray<EdgeOffset> offsets, graph::HostArray<NodeId> indices,
                                         graph::HostArray<float> weights, std::vector<int32_t> loss_rows,
                                         std::vector<float> loss_weights, std::size_t num_layers, std::string_view what) {
  graph::MiniBatch batch;
  batch.epoch = spec.epoch;
  batch.index = spec.index;
  const auto k = static_cast<NodeId>(nodes.size());
  batch.blocks.push_back(graph::Block::from_csr(k, k, std::move(offsets), std::move(indices), std::move(weights), what));
  batch.input_nodes = graph::HostArray<NodeId>(std::vector<NodeId>(nodes.begin(), nodes.end()));
  batch.targets = batch.input_nodes;  // one shared array: the block is square
  batch.loss_rows = graph::HostArray<int32_t>(std::move(loss_rows));
  batch.loss_weights = graph::HostArray<float>(std::move(loss_weights));
  batch.compute_shape(0, num_layers);
  return batch;
}

}  // namespace gnnpipe::samplers::detail
