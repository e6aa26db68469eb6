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
    // row_of_block_[b]: the row holding edge position b * 2^kRowBlockShift.
    row_of_block_.resize(((indices.size() - 1) >> kRowBlockShift) + 1);
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
      const auto begin = static_cast<std::size_t>(offsets[static_cast<std::size_t>(v)]);
      const auto end = static_cast<std::size_t>(offsets[static_cast<std::size_t>(v) + 1]);
      // The block starts that fall in [begin, end).
      for (std::size_t b = (begin + (std::size_t{1} << kRowBlockShift) - 1) >> kRowBlockShift;
           (b << kRowBlockShift) < end; ++b) {
        row_of_block_[b] = v;
      }
    }
  }
}

void NodeSetDrawer::draw(core::RngKey key, NodeSetScratch& scratch) const {
  switch (mode_) {
    case SaintMode::kNode:
      for (int i = 0; i < budget_; ++i) {
        DrawCursor draws = saint::draw_cursor(key, i);
        scratch.choose(static_cast<NodeId>(table_.draw(draws)));
      }
      return;
    case SaintMode::kEdge: {
      const auto offsets = graph_.offsets();
      for (int i = 0; i < budget_; ++i) {
        DrawCursor draws = saint::draw_cursor(key, i);
        const EdgeOffset e = table_.draw(draws);
        scratch.choose(graph_.indices()[static_cast<std::size_t>(e)]);
        scratch.choose(saint::row_of_position(offsets.data(), row_of_block_.data(), static_cast<int64_t>(row_of_block_.size()),
                                              graph_.num_nodes(), e, kRowBlockShift));
      }
      return;
    }
    case SaintMode::kRandomWalk:
      for (int w = 0; w < budget_; ++w) {
        saint::random_walk(key, w, graph_.offsets().data(), graph_.indices().data(), graph_.num_nodes(), walk_length_,
                           [&](NodeId v) { scratch.choose(v); });
      }
      return;
  }
}

}  // namespace gnnpipe::samplers::detail
