#include "gnnpipe/graph/block.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "parallel_find.hpp"

namespace gnnpipe::graph {
namespace {

using Range = tbb::blocked_range<std::size_t>;

// Rows up to this long are sorted in place by insertion: a sampled block's rows hold a fanout's
// picks (5-25), and allocating an order and two copies per row was a quarter of a products-size
// neighbour batch's sampling time.
constexpr std::size_t kInsertionRow = 32;

// Sorts row r's indices ascending, permuting its weights along (stable for equal ids).
void sort_row_with_weights(std::span<NodeId> ids, std::span<float> w) {
  if (std::is_sorted(ids.begin(), ids.end())) return;
  if (ids.size() <= kInsertionRow) {
    const bool weighted = !w.empty();
    for (std::size_t k = 1; k < ids.size(); ++k) {
      const NodeId id = ids[k];
      const float weight = weighted ? w[k] : 0.0f;
      std::size_t j = k;
      for (; j > 0 && ids[j - 1] > id; --j) {  // strictly greater: equal ids keep their order
        ids[j] = ids[j - 1];
        if (weighted) w[j] = w[j - 1];
      }
      ids[j] = id;
      if (weighted) w[j] = weight;
    }
    return;
  }
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
  std::vector<NodeId> sorted_ids(ids.size());
  std::vector<float> sorted_w(w.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    sorted_ids[k] = ids[order[k]];
    if (!w.empty()) sorted_w[k] = w[order[k]];
  }
  std::copy(sorted_ids.begin(), sorted_ids.end(), ids.begin());
  std::copy(sorted_w.begin(), sorted_w.end(), w.begin());
}

}  // namespace

Block Block::from_csr(NodeId num_dst, NodeId num_src, HostArray<EdgeOffset> offsets, HostArray<NodeId> indices,
                      HostArray<float> weights, std::string_view what, RowOrder order) {
  GNNPIPE_CHECK_DATA(num_dst >= 0 && num_dst <= num_src, "{}: {} destinations but {} sources (destinations are a "
                     "prefix of sources)", what, num_dst, num_src);
  GNNPIPE_CHECK_DATA(offsets.size() == static_cast<std::size_t>(num_dst) + 1, "{}: {} offsets for {} destinations",
                     what, offsets.size(), num_dst);
  GNNPIPE_CHECK_DATA(offsets[0] == 0 && offsets[static_cast<std::size_t>(num_dst)] == static_cast<EdgeOffset>(indices.size()),
                     "{}: offsets run from {} to {} for {} edges", what, offsets[0],
                     offsets[static_cast<std::size_t>(num_dst)], indices.size());
  GNNPIPE_CHECK_DATA(weights.empty() || weights.size() == indices.size(), "{}: {} weights for {} edges", what,
                     weights.size(), indices.size());
  const auto nd = static_cast<std::size_t>(num_dst);
  const std::size_t bad_row = detail::first_index_where(nd, [&](std::size_t v) { return offsets[v + 1] < offsets[v]; });
  GNNPIPE_CHECK_DATA(bad_row == nd, "{}: offsets decrease at row {}", what, bad_row);
  const std::size_t bad = detail::first_index_where(indices.size(), [&](std::size_t e) {
    return indices[e] < 0 || indices[e] >= num_src;
  });
  GNNPIPE_CHECK_DATA(bad == indices.size(), "{}: source id {} at edge {} is outside [0, {})", what,
                     bad < indices.size() ? indices[bad] : 0, bad, num_src);

  if (order == RowOrder::kSort) {
    tbb::parallel_for(Range(0, nd, 256), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t v = r.begin(); v < r.end(); ++v) {
        const auto b = static_cast<std::size_t>(offsets[v]);
        const auto n = static_cast<std::size_t>(offsets[v + 1] - offsets[v]);
        sort_row_with_weights(indices.span().subspan(b, n),
                              weights.empty() ? std::span<float>() : weights.span().subspan(b, n));
      }
    }));
  }

  // Transpose by counting sort over sources; walking destinations in order keeps every
  // transposed row sorted by destination id, so the result is deterministic.
  const auto ns = static_cast<std::size_t>(num_src);
  HostArray<EdgeOffset> t_offsets(ns + 1);
  for (NodeId u : indices) ++t_offsets[static_cast<std::size_t>(u) + 1];
  std::partial_sum(t_offsets.begin(), t_offsets.end(), t_offsets.begin());
  std::vector<EdgeOffset> cursor(t_offsets.begin(), t_offsets.end() - 1);
  HostArray<NodeId> t_indices(indices.size());
  HostArray<EdgeOffset> t_edges(indices.size());
  for (std::size_t v = 0; v < nd; ++v) {
    for (auto e = offsets[v]; e < offsets[v + 1]; ++e) {
      const auto slot = static_cast<std::size_t>(cursor[static_cast<std::size_t>(indices[static_cast<std::size_t>(e)])]++);
      t_indices[slot] = static_cast<NodeId>(v);
      t_edges[slot] = e;
    }
  }
  Block b;
  b.num_dst = num_dst;
  b.num_src = num_src;
  b.offsets = std::move(offsets);
  b.indices = std::move(indices);
  b.weights = std::move(weights);
  b.t_offsets = std::move(t_offsets);
  b.t_indices = std::move(t_indices);
  b.t_edges = std::move(t_edges);
  return b;
}

Block full_graph_block(const CsrGraph& graph, BlockNorm norm) {
  const NodeId n = graph.num_nodes();
  const bool self_loops = norm == BlockNorm::kGcn || norm == BlockNorm::kSelfLoops;
  const CsrGraph g = self_loops ? graph.normalized({.self_loops = SelfLoops::kAdd}) : graph;
  HostArray<EdgeOffset> offsets(std::vector<EdgeOffset>(g.offsets().begin(), g.offsets().end()));
  HostArray<NodeId> indices(std::vector<NodeId>(g.indices().begin(), g.indices().end()));
  HostArray<float> weights;
  if (norm == BlockNorm::kMean || norm == BlockNorm::kGcn) {
    weights = HostArray<float>(indices.size());
    const auto nn = static_cast<std::size_t>(n);
    // In-degree counts (with the self-loop for kGcn); PyG's gcn_norm uses the target's degree for both ends.
    std::vector<double> inv_sqrt(nn);
    for (std::size_t v = 0; v < nn; ++v) {
      const auto deg = static_cast<double>(offsets[v + 1] - offsets[v]);
      inv_sqrt[v] = deg > 0 ? 1.0 / std::sqrt(deg) : 0.0;
    }
    tbb::parallel_for(Range(0, nn, 1024), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t v = r.begin(); v < r.end(); ++v) {
        const auto deg = offsets[v + 1] - offsets[v];
        for (auto e = offsets[v]; e < offsets[v + 1]; ++e) {
          const auto u = static_cast<std::size_t>(indices[static_cast<std::size_t>(e)]);
          weights[static_cast<std::size_t>(e)] =
              norm == BlockNorm::kMean ? static_cast<float>(1.0 / static_cast<double>(deg))
                                       : static_cast<float>(inv_sqrt[u] * inv_sqrt[v]);
        }
      }
    }));
  }
  return Block::from_csr(n, n, std::move(offsets), std::move(indices), std::move(weights), "full graph");
}

}  // namespace gnnpipe::graph
