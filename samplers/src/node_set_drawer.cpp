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

void NodeSetDrawer::draw(core::Rng& rng, NodeSetScratch& scratch) const {
  switch (mode_) {
    case SaintMode::kNode:
      for (int i = 0; i < budget_; ++i) scratch.choose(static_cast<NodeId>(table_.draw(rng)));
      return;
    case SaintMode::kEdge: {
      const auto offsets = graph_.offsets();
      for (int i = 0; i < budget_; ++i) {
        const EdgeOffset e = table_.draw(rng);
        // The destination is the row holding position e: it lies between the rows holding the
        // first positions of e's block and of the next one, a search over a few adjacent offsets
        // (about 64 / mean degree) instead of all V.
        const std::size_t b = static_cast<std::size_t>(e) >> kRowBlockShift;
        const std::size_t lo = static_cast<std::size_t>(row_of_block_[b]);
        const std::size_t hi = b + 1 < row_of_block_.size() ? static_cast<std::size_t>(row_of_block_[b + 1])
                                                            : static_cast<std::size_t>(graph_.num_nodes()) - 1;
        const auto row = std::upper_bound(offsets.begin() + static_cast<std::ptrdiff_t>(lo) + 1,
                                          offsets.begin() + static_cast<std::ptrdiff_t>(hi) + 2, e) - offsets.begin() - 1;
        scratch.choose(graph_.indices()[static_cast<std::size_t>(e)]);
        scratch.choose(static_cast<NodeId>(row));
      }
      return;
    }
    case SaintMode::kRandomWalk: {
      // All walks advance in lockstep, one step at a time: the steps of different walks are
      // independent loads that the CPU overlaps, where one walk after another would wait on a
      // cache miss per step. The order of draws is still fixed (roots, then step 1 of every live
      // walk, ...), so the set depends only on the key.
      std::vector<NodeId>& at = scratch.walk_heads;
      at.resize(static_cast<std::size_t>(budget_));
      const auto n = static_cast<uint64_t>(graph_.num_nodes());
      for (NodeId& v : at) {
        v = static_cast<NodeId>(rng.below(n));
        scratch.choose(v);
      }
      for (int step = 0; step < walk_length_ && !at.empty(); ++step) {
        std::size_t live = 0;
        for (const NodeId v : at) {
          const auto neighbors = graph_.in_neighbors(v);
          if (neighbors.empty()) continue;  // a dead end stops the walk
          const NodeId u = neighbors[rng.below(neighbors.size())];
          scratch.choose(u);
          at[live++] = u;
        }
        at.resize(live);
      }
      return;
    }
  }
}

}  // namespace gnnpipe::samplers::detail
