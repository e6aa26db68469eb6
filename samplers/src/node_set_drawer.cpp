#include "node_set_drawer.hpp"

#include <algorithm>

namespace gnnpipe::samplers::detail {

using graph::EdgeOffset;
using graph::NodeId;

NodeSetDrawer::NodeSetDrawer(const graph::CsrGraph& graph, SaintMode mode, int budget, int walk_length)
    : graph_(graph), mode_(mode), budget_(budget), walk_length_(walk_length) {
  if (mode_ == SaintMode::kNode) {
    // P(v) = in-degree(v) / E: PyG draws a uniformly random edge and takes its destination.
    std::vector<double> weights(static_cast<std::size_t>(graph_.num_nodes()));
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) weights[static_cast<std::size_t>(v)] = static_cast<double>(graph_.in_degree(v));
    table_ = AliasTable(weights);
  } else if (mode_ == SaintMode::kEdge) {
    // P(u -> v) proportional to 1/deg(u) + 1/deg(v) (the paper's edge sampler); deg is the
    // in-degree, at least 1 so that a source without in-edges (directed graphs) stays finite.
    std::vector<double> inv_degree(static_cast<std::size_t>(graph_.num_nodes()));
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
      inv_degree[static_cast<std::size_t>(v)] = 1.0 / static_cast<double>(std::max<EdgeOffset>(1, graph_.in_degree(v)));
    }
    const auto offsets = graph_.offsets();
    const auto indices = graph_.indices();
    std::vector<double> weights(indices.size());
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
      for (auto e = static_cast<std::size_t>(offsets[static_cast<std::size_t>(v)]);
           e < static_cast<std::size_t>(offsets[static_cast<std::size_t>(v) + 1]); ++e) {
        weights[e] = inv_degree[static_cast<std::size_t>(indices[e])] + inv_degree[static_cast<std::size_t>(v)];
      }
    }
    table_ = AliasTable(weights);
  }
}

void NodeSetDrawer::draw(core::Rng& rng, NodeSetScratch& scratch) const {
  switch (mode_) {
    case SaintMode::kNode:
      for (int i = 0; i < budget_; ++i) scratch.choose(static_cast<NodeId>(table_.draw(rng)));
      return;
    case SaintMode::kEdge: {
      const auto offsets = graph_.offsets();
      for (int i = 0; i < budget_; ++i) {
        const EdgeOffset e = table_.draw(rng);
        // The destination is the row holding position e: the last row starting at or before e.
        // A binary search (O(log V)) instead of an E-sized row array keeps memory at 8 bytes/edge.
        const auto row = std::upper_bound(offsets.begin(), offsets.end(), e) - offsets.begin() - 1;
        scratch.choose(graph_.indices()[static_cast<std::size_t>(e)]);
        scratch.choose(static_cast<NodeId>(row));
      }
      return;
    }
    case SaintMode::kRandomWalk: {
      const auto n = static_cast<uint64_t>(graph_.num_nodes());
      for (int r = 0; r < budget_; ++r) {
        auto v = static_cast<NodeId>(rng.below(n));
        scratch.choose(v);
        for (int step = 0; step < walk_length_; ++step) {
          const auto neighbors = graph_.in_neighbors(v);
          if (neighbors.empty()) break;  // a dead end stops the walk
          v = neighbors[rng.below(neighbors.size())];
          scratch.choose(v);
        }
      }
      return;
    }
  }
}

}  // namespace gnnpipe::samplers::detail
