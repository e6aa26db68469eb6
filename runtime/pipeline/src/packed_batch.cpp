#include "gnnpipe/pipeline/packed_batch.hpp"

#include <algorithm>
#include <cstring>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::pipeline {
namespace {

constexpr std::size_t kAlign = 256;

class Packer {
 public:
  template <class T>
  Section add(std::size_t count) {
    Section s{end_, count * sizeof(T)};
    end_ = (end_ + s.bytes + kAlign - 1) / kAlign * kAlign;
    return s;
  }
  std::size_t end() const { return end_; }

 private:
  std::size_t end_ = 0;
};

template <class T>
void put(std::byte* base, Section s, const graph::HostArray<T>& a) {
  if (s.bytes > 0) std::memcpy(base + s.offset, a.data(), s.bytes);
}

template <class T>
graph::HostArray<T> view(const std::shared_ptr<const void>& owner, std::byte* base, Section s) {
  return graph::HostArray<T>::view(owner, reinterpret_cast<T*>(base + s.offset), s.bytes / sizeof(T));
}

// Rows `ids` into the layout's features section, in its dtype: a float32 layout takes any store's
// rows (16-bit ones widened here, as layer-wise inference's float32 chunks need them); a 16-bit
// layout takes the rows as the store holds them (the same dtype: checked).
void gather_into(const graph::FeatureStore& features, std::span<const graph::NodeId> ids, const BatchLayout& layout,
                 std::byte* dst) {
  if (layout.feature_dtype == graph::FeatureDType::kFloat32) {
    features.gather(ids, std::span<float>(reinterpret_cast<float*>(dst + layout.features.offset),
                                          layout.features.bytes / sizeof(float)));
  } else {
    GNNPIPE_CHECK(features.dtype() == layout.feature_dtype, "pack: the features are {}, the layout's {}",
                  graph::to_string(features.dtype()), graph::to_string(layout.feature_dtype));
    features.gather_raw(ids, std::span<uint16_t>(reinterpret_cast<uint16_t*>(dst + layout.features.offset),
                                                 layout.features.bytes / sizeof(uint16_t)));
  }
}

// A batch's counts, as lay_out reads them (block_edges: each block's edges, which may be fewer
// than it holds: a cut's prefix).
PackedCounts counts_of(const graph::MiniBatch& batch, std::span<const int64_t> block_edges) {
  GNNPIPE_CHECK(block_edges.size() == batch.blocks.size(), "layout: {} edge counts for {} blocks", block_edges.size(),
                batch.blocks.size());
  PackedCounts c{.inputs = static_cast<int64_t>(batch.input_nodes.size()),
                 .targets = static_cast<int64_t>(batch.targets.size()),
                 .loss_rows = static_cast<int64_t>(batch.loss_rows.size()),
                 .loss_weights = static_cast<int64_t>(batch.loss_weights.size()),
                 .blocks = {}};
  const auto counts = [](const graph::Block& b, int64_t edges) {
    return PackedCounts::BlockCounts{.num_dst = b.num_dst,
                                     .num_src = b.num_src,
                                     .edges = edges,
                                     .weighted = !b.weights.empty(),
                                     .offsets = static_cast<int64_t>(b.offsets.size()),
                                     .t_offsets = static_cast<int64_t>(b.t_offsets.size()),
                                     .t_indices = !b.t_indices.empty(),
                                     .t_edges = !b.t_edges.empty()};
  };
  for (std::size_t i = 0; i < batch.blocks.size(); ++i) c.blocks.push_back(counts(batch.blocks[i], block_edges[i]));
  for (const graph::MiniBatch::AugmentedView& v : batch.views) {
    for (const graph::Block& b : v.blocks) c.view_blocks.push_back(counts(b, b.num_edges()));
  }
  c.views = static_cast<int64_t>(batch.views.size());
  c.node_weights = static_cast<int64_t>(batch.node_weights.size());
  return c;
}

// The layout of a batch with counts `c`, with `cached_rows` of its input rows held by a feature
// cache (-1: no cache): the features section holds the other rows, and the cache's three row lists
// come last. The one statement of the packed sections' order and sizes (BatchLayout::of and
// packed_bytes both read it).
BatchLayout lay_out(const PackedCounts& c, int64_t feature_cols, graph::FeatureDType dtype, int64_t cached_rows) {
  BatchLayout l;
  Packer p;
  l.feature_rows = c.inputs;
  l.feature_cols = feature_cols;
  l.feature_dtype = dtype;
  l.cached = cached_rows >= 0;
  l.cached_rows = std::max<int64_t>(0, cached_rows);
  const auto misses = static_cast<std::size_t>(l.feature_rows - l.cached_rows);
  const auto values = misses * static_cast<std::size_t>(feature_cols);
  l.features = dtype == graph::FeatureDType::kFloat32 ? p.add<float>(values) : p.add<uint16_t>(values);
  l.input_nodes = p.add<graph::NodeId>(static_cast<std::size_t>(c.inputs));
  l.labels = p.add<int32_t>(static_cast<std::size_t>(c.targets));
  l.loss_rows = p.add<int32_t>(static_cast<std::size_t>(c.loss_rows));
  l.loss_weights = p.add<float>(static_cast<std::size_t>(c.loss_weights));
  const auto block_sections = [&](const PackedCounts::BlockCounts& b) {
    const auto edges = static_cast<std::size_t>(b.edges);
    BlockSections s;
    s.num_dst = b.num_dst;
    s.num_src = b.num_src;
    s.offsets = p.add<graph::EdgeOffset>(static_cast<std::size_t>(b.offsets));
    s.indices = p.add<graph::NodeId>(edges);
    s.weights = p.add<float>(b.weighted ? edges : 0);
    s.t_offsets = p.add<graph::EdgeOffset>(static_cast<std::size_t>(b.t_offsets));
    s.t_indices = p.add<graph::NodeId>(b.t_indices ? edges : 0);
    s.t_edges = p.add<graph::EdgeOffset>(b.t_edges ? edges : 0);
    return s;
  };
  for (const PackedCounts::BlockCounts& b : c.blocks) l.blocks.push_back(block_sections(b));
  for (const PackedCounts::BlockCounts& b : c.view_blocks) l.view_blocks.push_back(block_sections(b));
  for (int64_t v = 0; v < c.views; ++v) l.view_factors.push_back(p.add<float>(static_cast<std::size_t>(c.inputs)));
  l.node_weights = p.add<float>(static_cast<std::size_t>(c.node_weights));
  if (l.cached) {
    l.cache_hits = p.add<int32_t>(static_cast<std::size_t>(l.cached_rows));
    l.cache_slots = p.add<int32_t>(static_cast<std::size_t>(l.cached_rows));
    l.cache_misses = p.add<int32_t>(misses);
  }
  l.total_bytes = p.end();
  return l;
}

// lay_out of `batch`, with identity_rows (device-gathered rows that are the matrix itself).
BatchLayout lay_out(const graph::MiniBatch& batch, int64_t feature_cols, std::span<const int64_t> block_edges,
                    graph::FeatureDType dtype, int64_t cached_rows) {
  BatchLayout l = lay_out(counts_of(batch, block_edges), feature_cols, dtype, cached_rows);
  if (feature_cols == 0) {
    const auto ids = batch.input_nodes.span();
    graph::NodeId next = 0;
    l.identity_rows = std::all_of(ids.begin(), ids.end(), [&](graph::NodeId v) { return v == next++; });
  }
  return l;
}

}  // namespace

std::size_t packed_bytes(const PackedCounts& c, int64_t feature_cols, graph::FeatureDType dtype) {
  return lay_out(c, feature_cols, dtype, -1).total_bytes;
}

std::size_t packed_block_batch_bytes(int64_t num_src, int64_t num_dst, int64_t edges, int64_t feature_cols,
                                     bool weighted) {
  // The sections of lay_out, in its order, each at its largest.
  const auto src = static_cast<std::size_t>(num_src), dst = static_cast<std::size_t>(num_dst);
  const auto e = static_cast<std::size_t>(edges);
  Packer p;
  p.add<float>(src * static_cast<std::size_t>(feature_cols));
  p.add<graph::NodeId>(src);
  p.add<int32_t>(dst);  // labels
  p.add<int32_t>(dst);  // loss rows
  p.add<float>(dst);    // loss weights
  p.add<graph::EdgeOffset>(dst + 1);
  p.add<graph::NodeId>(e);
  p.add<float>(weighted ? e : 0);
  p.add<graph::EdgeOffset>(src + 1);
  p.add<graph::NodeId>(e);
  p.add<graph::EdgeOffset>(e);
  return p.end();
}

BatchLayout BatchLayout::of(const graph::MiniBatch& batch, int64_t feature_cols, std::span<const int32_t> cache_slot_of,
                            graph::FeatureDType dtype) {
  std::vector<int64_t> edges;
  for (const graph::Block& b : batch.blocks) edges.push_back(b.num_edges());
  if (cache_slot_of.empty()) return lay_out(batch, feature_cols, edges, dtype, -1);
  int64_t hits = 0;
  for (graph::NodeId v : batch.input_nodes.span()) {
    GNNPIPE_CHECK_DATA(v >= 0 && static_cast<std::size_t>(v) < cache_slot_of.size(), "input node {} is outside [0, {})", v,
                       cache_slot_of.size());
    hits += cache_slot_of[static_cast<std::size_t>(v)] >= 0 ? 1 : 0;
  }
  return lay_out(batch, feature_cols, edges, dtype, hits);
}

BatchLayout BatchLayout::of(const graph::MiniBatch& batch, int64_t feature_cols, std::span<const int64_t> block_edges,
                            graph::FeatureDType dtype) {
  return lay_out(batch, feature_cols, block_edges, dtype, -1);
}

void pack_batch(const graph::MiniBatch& batch, const graph::FeatureStore& features, std::span<const int32_t> labels,
                const BatchLayout& layout, std::byte* dst, std::span<const int32_t> cache_slot_of) {
  if (layout.cached) {
    GNNPIPE_CHECK(!cache_slot_of.empty() && features.cols() == layout.feature_cols,
                  "pack: a cached layout needs the cache's slots and {} feature columns", layout.feature_cols);
    auto* hits = reinterpret_cast<int32_t*>(dst + layout.cache_hits.offset);
    auto* slots = reinterpret_cast<int32_t*>(dst + layout.cache_slots.offset);
    auto* misses = reinterpret_cast<int32_t*>(dst + layout.cache_misses.offset);
    std::vector<graph::NodeId> missed;
    missed.reserve(layout.cache_misses.bytes / sizeof(int32_t));
    const auto ids = batch.input_nodes.span();
    for (std::size_t r = 0; r < ids.size(); ++r) {
      const int32_t slot = cache_slot_of[static_cast<std::size_t>(ids[r])];
      if (slot >= 0) {
        *hits++ = static_cast<int32_t>(r);
        *slots++ = slot;
      } else {
        *misses++ = static_cast<int32_t>(r);
        missed.push_back(ids[r]);
      }
    }
    gather_into(features, missed, layout, dst);
  } else if (layout.feature_cols > 0) {
    GNNPIPE_CHECK(features.cols() == layout.feature_cols, "pack: features have {} columns, the layout {}",
                  features.cols(), layout.feature_cols);
    gather_into(features, batch.input_nodes.span(), layout, dst);
  }
  put(dst, layout.input_nodes, batch.input_nodes);
  auto* target_labels = reinterpret_cast<int32_t*>(dst + layout.labels.offset);
  for (std::size_t i = 0; i < batch.targets.size() && !labels.empty(); ++i) {
    const auto v = static_cast<std::size_t>(batch.targets[i]);
    GNNPIPE_CHECK(v < labels.size(), "pack: target {} has no label ({} labels)", v, labels.size());
    target_labels[i] = labels[v];
  }
  put(dst, layout.loss_rows, batch.loss_rows);
  put(dst, layout.loss_weights, batch.loss_weights);
  const auto put_block = [&](const graph::Block& b, const BlockSections& s) {
    put(dst, s.offsets, b.offsets);
    put(dst, s.indices, b.indices);
    put(dst, s.weights, b.weights);
    put(dst, s.t_offsets, b.t_offsets);
    put(dst, s.t_indices, b.t_indices);
    put(dst, s.t_edges, b.t_edges);
  };
  for (std::size_t k = 0; k < batch.blocks.size(); ++k) put_block(batch.blocks[k], layout.blocks[k]);
  GNNPIPE_CHECK(batch.views.size() == layout.view_factors.size(), "pack: {} augmented views for a layout of {}",
                batch.views.size(), layout.view_factors.size());
  std::size_t block = 0;
  for (std::size_t k = 0; k < batch.views.size(); ++k) {
    for (const graph::Block& b : batch.views[k].blocks) {
      GNNPIPE_CHECK(block < layout.view_blocks.size(), "pack: more view blocks than the layout's {}",
                    layout.view_blocks.size());
      put_block(b, layout.view_blocks[block++]);
    }
    put(dst, layout.view_factors[k], batch.views[k].row_factors);
  }
  put(dst, layout.node_weights, batch.node_weights);
}

PackedBatchView PackedBatchView::of(const BatchLayout& layout, std::shared_ptr<const void> owner, std::byte* base) {
  PackedBatchView v;
  v.features = {reinterpret_cast<const float*>(base + layout.features.offset), layout.feature_rows, layout.feature_cols};
  if (layout.feature_dtype != graph::FeatureDType::kFloat32) {
    v.features16 = reinterpret_cast<const uint16_t*>(base + layout.features.offset);
    v.features.data = nullptr;
  }
  v.input_nodes = {reinterpret_cast<const graph::NodeId*>(base + layout.input_nodes.offset),
                   layout.input_nodes.bytes / sizeof(graph::NodeId)};
  v.labels = {reinterpret_cast<const int32_t*>(base + layout.labels.offset), layout.labels.bytes / sizeof(int32_t)};
  v.loss_rows = {reinterpret_cast<const int32_t*>(base + layout.loss_rows.offset), layout.loss_rows.bytes / sizeof(int32_t)};
  v.loss_weights = {reinterpret_cast<const float*>(base + layout.loss_weights.offset), layout.loss_weights.bytes / sizeof(float)};
  if (layout.cached) {
    v.features.rows = layout.feature_rows - layout.cached_rows;  // the missed rows
    const auto ints = [&](Section s) {
      return std::span<const int32_t>(reinterpret_cast<const int32_t*>(base + s.offset), s.bytes / sizeof(int32_t));
    };
    v.cache_hits = ints(layout.cache_hits);
    v.cache_slots = ints(layout.cache_slots);
    v.cache_misses = ints(layout.cache_misses);
  }
  const auto block_of = [&](const BlockSections& s) {
    graph::Block b;
    b.num_dst = s.num_dst;
    b.num_src = s.num_src;
    b.offsets = view<graph::EdgeOffset>(owner, base, s.offsets);
    b.indices = view<graph::NodeId>(owner, base, s.indices);
    b.weights = view<float>(owner, base, s.weights);
    b.t_offsets = view<graph::EdgeOffset>(owner, base, s.t_offsets);
    b.t_indices = view<graph::NodeId>(owner, base, s.t_indices);
    b.t_edges = view<graph::EdgeOffset>(owner, base, s.t_edges);
    return b;
  };
  const auto floats = [&](Section s) {
    return std::span<const float>(reinterpret_cast<const float*>(base + s.offset), s.bytes / sizeof(float));
  };
  for (const BlockSections& s : layout.blocks) v.blocks.push_back(block_of(s));
  for (const BlockSections& s : layout.view_blocks) v.view_blocks.push_back(block_of(s));
  for (const Section& s : layout.view_factors) v.view_factors.push_back(floats(s));
  v.node_weights = floats(layout.node_weights);
  return v;
}

}  // namespace gnnpipe::pipeline
