#include "gnnpipe/samplers/mh_views.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"

namespace gnnpipe::samplers::mh {
namespace {

using Range = tbb::blocked_range<int64_t>;

// Checks that every block's local ids are input_nodes' numbering.
void check_blocks(const graph::MiniBatch& batch) {
  GNNPIPE_CHECK(!batch.blocks.empty(), "MH-Aug: batch {} of epoch {} has no blocks", batch.index, batch.epoch);
  for (const graph::Block& b : batch.blocks) {
    GNNPIPE_CHECK(static_cast<std::size_t>(b.num_src) <= batch.input_nodes.size() && b.num_dst <= b.num_src,
                  "MH-Aug: batch {} of epoch {}: a block of {} sources over {} input nodes", batch.index, batch.epoch,
                  b.num_src, batch.input_nodes.size());
  }
}

}  // namespace

graph::CsrGraph chain_graph(const graph::CsrGraph& graph) {
  return graph.normalized({.self_loops = graph::SelfLoops::kRemove});
}

ViewState ViewState::of(const graph::CsrGraph& chain, MhMasks masks) {
  const auto n = static_cast<std::size_t>(chain.num_nodes());
  GNNPIPE_CHECK_DATA(masks.edge_keep.size() == static_cast<std::size_t>(chain.num_edges()) && masks.node_keep.size() == n,
                     "MH-Aug: a state of {} edge and {} node flags for a graph of {} entries and {} nodes",
                     masks.edge_keep.size(), masks.node_keep.size(), chain.num_edges(), n);
  ViewState s;
  s.dropped_in.assign(n, 0);
  const auto offsets = chain.offsets();
  for (std::size_t v = 0; v < n; ++v) {
    int32_t dropped = 0;
    for (auto e = offsets[v]; e < offsets[v + 1]; ++e) dropped += masks.edge_keep[static_cast<std::size_t>(e)] == 0 ? 1 : 0;
    s.dropped_in[v] = dropped;
  }
  const auto nodes = static_cast<double>(n);
  s.feature_factor =
      masks.nodes_masked == 0 ? 1.0f : static_cast<float>(nodes / (nodes - static_cast<double>(masks.nodes_masked)));
  s.masks = std::move(masks);
  return s;
}

ViewBuilder::ViewBuilder(const graph::CsrGraph& graph, const graph::CsrGraph& chain, ViewSupport support)
    : graph_(graph), chain_(chain), support_(support) {
  GNNPIPE_CHECK(graph.num_nodes() == chain.num_nodes(), "MH-Aug: the chain's graph has {} nodes, the sampler's {}",
                chain.num_nodes(), graph.num_nodes());
}

std::vector<int64_t> ViewBuilder::block_entries(const graph::MiniBatch& batch, const graph::Block& b) const {
  const auto ids = batch.input_nodes.span();
  const auto chain_offsets = chain_.offsets();
  const auto chain_indices = chain_.indices();
  std::vector<int64_t> entry(static_cast<std::size_t>(b.num_edges()));
  tbb::parallel_for(Range(0, b.num_dst, 256), core::tsan::fork_join([&](const Range& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      const graph::NodeId v = ids[static_cast<std::size_t>(i)];
      GNNPIPE_CHECK_DATA(v >= 0 && v < chain_.num_nodes(), "MH-Aug: batch {}: node {} is outside the graph's {}",
                         batch.index, v, chain_.num_nodes());
      const auto row_begin = chain_indices.begin() + chain_offsets[static_cast<std::size_t>(v)];
      const auto row_end = chain_indices.begin() + chain_offsets[static_cast<std::size_t>(v) + 1];
      int64_t occurrence = 0;  // repeated entries (a multigraph) map to the graph's in turn
      for (auto e = b.offsets[static_cast<std::size_t>(i)]; e < b.offsets[static_cast<std::size_t>(i) + 1]; ++e) {
        const graph::NodeId local = b.indices[static_cast<std::size_t>(e)];
        const graph::NodeId u = ids[static_cast<std::size_t>(local)];
        occurrence = e > b.offsets[static_cast<std::size_t>(i)] && b.indices[static_cast<std::size_t>(e) - 1] == local
                         ? occurrence + 1
                         : 0;
        if (u == v) {
          entry[static_cast<std::size_t>(e)] = -1;
          continue;
        }
        const auto first = std::lower_bound(row_begin, row_end, u);
        GNNPIPE_CHECK_DATA(first < row_end && *first == u, "MH-Aug: batch {} has the entry {} -> {}, which the graph lacks",
                           batch.index, u, v);
        // The k-th copy of a repeated entry (a multigraph) is the graph's k-th; a neighbor drawn
        // more often than the graph holds it (with replacement) reads its first copy again.
        const auto at = first + occurrence < row_end && *(first + occurrence) == u ? first + occurrence : first;
        entry[static_cast<std::size_t>(e)] = at - chain_indices.begin();
      }
    }
  }));
  return entry;
}

std::vector<std::vector<int64_t>> ViewBuilder::chain_entries(const graph::MiniBatch& batch) const {
  check_blocks(batch);
  std::vector<std::vector<int64_t>> entries;
  for (const graph::Block& b : batch.blocks) entries.push_back(block_entries(batch, b));
  return entries;
}

graph::Block ViewBuilder::view_block(const graph::MiniBatch& batch, const graph::Block& b,
                                     std::span<const int64_t> chain_entry, const ViewState& state) const {
  const auto n = static_cast<std::size_t>(b.num_dst);
  const auto ids = batch.input_nodes.span();
  const auto keeps = [&](int64_t e) {
    const int64_t c = chain_entry[static_cast<std::size_t>(e)];
    return c < 0 || state.masks.edge_keep[static_cast<std::size_t>(c)] != 0;
  };
  // Kept entries per row, then the rows in the original order.
  graph::HostArray<graph::EdgeOffset> offsets(n + 1);
  offsets[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    graph::EdgeOffset kept = 0;
    for (auto e = b.offsets[i]; e < b.offsets[i + 1]; ++e) kept += keeps(e) ? 1 : 0;
    offsets[i + 1] = offsets[i] + kept;
  }
  const auto edges = static_cast<std::size_t>(offsets[n]);
  graph::HostArray<graph::NodeId> indices(edges);
  graph::HostArray<float> weights(b.weighted() ? edges : 0);
  const bool gcn = support_.norm == graph::BlockNorm::kGcn;
  const bool reweight = b.weighted() && (gcn || support_.norm == graph::BlockNorm::kMean);
  // A node's degree as the sampler's weights counted it, and without the dropped entries.
  const auto degrees = [&](std::size_t local) -> std::pair<double, double> {
    if (support_.degrees == ViewDegrees::kBatchRows) {
      GNNPIPE_CHECK(local < n, "MH-Aug: batch {}: a row degree of source {}, which has no row ({} rows)", batch.index,
                    local, n);
      return {static_cast<double>(b.offsets[local + 1] - b.offsets[local]),
              static_cast<double>(offsets[local + 1] - offsets[local])};
    }
    const graph::NodeId v = ids[local];
    const double d = !gcn                       ? static_cast<double>(graph_.in_degree(v))
                     : support_.counts_self_loops ? static_cast<double>(graph_.in_degree(v)) + 1.0
                                                  : static_cast<double>(chain_.in_degree(v)) + 1.0;
    return {d, d - state.dropped_in[static_cast<std::size_t>(v)]};
  };
  tbb::parallel_for(Range(0, static_cast<int64_t>(n), 256), core::tsan::fork_join([&](const Range& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      const auto i = static_cast<std::size_t>(row);
      auto out = static_cast<std::size_t>(offsets[i]);
      const auto [d_v, kept_v] = degrees(i);
      for (auto e = b.offsets[i]; e < b.offsets[i + 1]; ++e) {
        if (!keeps(e)) continue;
        const graph::NodeId local = b.indices[static_cast<std::size_t>(e)];
        indices[out] = local;
        if (b.weighted()) {
          double w = b.weights[static_cast<std::size_t>(e)];
          if (reweight && gcn) {
            const auto [d_u, kept_u] = degrees(static_cast<std::size_t>(local));
            w *= std::sqrt(d_u * d_v / (kept_u * kept_v));
          } else if (reweight) {
            w *= d_v / kept_v;
          }
          weights[out] = static_cast<float>(w);
        }
        ++out;
      }
    }
  }));
  return graph::Block::from_csr(b.num_dst, b.num_src, std::move(offsets), std::move(indices), std::move(weights),
                                "MH-Aug view", graph::Block::RowOrder::kKeep);
}

graph::MiniBatch::AugmentedView ViewBuilder::view(const graph::MiniBatch& batch,
                                                  const std::vector<std::vector<int64_t>>& chain_entries,
                                                  const ViewState& state) const {
  check_blocks(batch);
  GNNPIPE_CHECK(chain_entries.size() == batch.blocks.size(), "MH-Aug: {} entry lists for {} blocks",
                chain_entries.size(), batch.blocks.size());
  graph::MiniBatch::AugmentedView view;
  for (std::size_t k = 0; k < batch.blocks.size(); ++k) {
    view.blocks.push_back(view_block(batch, batch.blocks[k], chain_entries[k], state));
  }
  const auto ids = batch.input_nodes.span();
  const auto rows = static_cast<std::size_t>(batch.blocks.front().num_src);
  view.row_factors = graph::HostArray<float>(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    view.row_factors[i] = state.masks.node_keep[static_cast<std::size_t>(ids[i])] != 0 ? state.feature_factor : 0.0f;
  }
  return view;
}

graph::HostArray<float> ViewBuilder::node_weights(const graph::MiniBatch& batch) const {
  const std::size_t n = batch.targets.size();
  graph::HostArray<float> w(n);
  const double nodes = static_cast<double>(graph_.num_nodes());
  for (std::size_t i = 0; i < n; ++i) {
    w[i] = support_.node_counts.empty()
               ? static_cast<float>(1.0 / static_cast<double>(n))
               : static_cast<float>(support_.norm_samples /
                                    (induced::count_or_floor(support_.node_counts[static_cast<std::size_t>(batch.targets[i])]) *
                                     nodes));
  }
  return w;
}

void ViewBuilder::attach(graph::MiniBatch& batch, const ViewState& previous, const ViewState& next) const {
  const std::vector<std::vector<int64_t>> entry = chain_entries(batch);
  std::vector<graph::MiniBatch::AugmentedView> views;
  views.push_back(view(batch, entry, previous));
  views.push_back(view(batch, entry, next));
  batch.views = std::move(views);
  batch.node_weights = node_weights(batch);
}

}  // namespace gnnpipe::samplers::mh
