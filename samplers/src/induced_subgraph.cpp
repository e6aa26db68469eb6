#include "induced_subgraph.hpp"

namespace gnnpipe::samplers::detail {

using graph::EdgeOffset;
using graph::NodeId;

void induced_rows(const graph::CsrGraph& graph, std::span<const NodeId> nodes, std::span<const NodeId> local_of,
                  bool add_self_loops, InducedRows& out) {
  out.offsets.assign(1, 0);
  out.indices.clear();
  out.edge_ids.clear();
  const auto offsets = graph.offsets();
  const auto indices = graph.indices();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    const auto local_v = static_cast<NodeId>(i);
    bool loop_placed = !add_self_loops;
    for (EdgeOffset e = offsets[static_cast<std::size_t>(v)]; e < offsets[static_cast<std::size_t>(v) + 1]; ++e) {
      const NodeId u = indices[static_cast<std::size_t>(e)];
      const NodeId local_u = local_of[static_cast<std::size_t>(u)];
      if (local_u < 0) continue;
      if (add_self_loops) {
        if (u == v) continue;  // the added self-loop stands for it, once
        if (!loop_placed && local_u > local_v) {  // keeps sorted rows sorted
          out.indices.push_back(local_v);
          out.edge_ids.push_back(-1);
          loop_placed = true;
        }
      }
      out.indices.push_back(local_u);
      out.edge_ids.push_back(e);
    }
    if (!loop_placed) {
      out.indices.push_back(local_v);
      out.edge_ids.push_back(-1);
    }
    out.offsets.push_back(static_cast<EdgeOffset>(out.indices.size()));
  }
}

}  // namespace gnnpipe::samplers::detail
