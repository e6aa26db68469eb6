#pragma once
// A batch packed into one contiguous byte range (a staging slot), so that it crosses to the device
// in one copy (docs/DESIGN.md §3): the gathered feature rows, the global ids of those rows (the batch's
// input nodes, which key dropout), the labels of the targets, the loss rows and weights, and every
// block's arrays (CSR, weights, transpose). Sections are 256-byte aligned (the
// CUDA allocation granularity that keeps every section aligned for vector loads).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::pipeline {

struct Section {
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

struct BlockSections {
  graph::NodeId num_dst = 0, num_src = 0;
  Section offsets, indices, weights, t_offsets, t_indices, t_edges;
};

// Where each array of a batch lives in its packed form.
// feature_cols 0: the batch carries no feature rows (device-resident features: the train stage
// gathers its input_nodes' rows on the device), and identity_rows says whether they are every node
// in id order (a full batch: the device matrix itself, no gather).
// With a feature cache (memory.features cache: cache_slot_of maps a node to its row of the device
// cache, or -1), `cached` is set, the features section holds only the rows the cache misses, in
// input order, and the batch carries where the cached rows go (cache_hits: positions among its
// input rows; cache_slots: their cache rows) and where the missed ones go (cache_misses).
// feature_dtype: how the features section holds its rows, as the store does (fp16/bf16 rows travel
// in 16 bits and are widened on the device: PackedBatchView::features16).
struct BatchLayout {
  int64_t feature_rows = 0, feature_cols = 0;
  graph::FeatureDType feature_dtype = graph::FeatureDType::kFloat32;
  bool identity_rows = false;
  bool cached = false;
  int64_t cached_rows = 0;  // of feature_rows
  Section features, input_nodes, labels, loss_rows, loss_weights;
  Section cache_hits, cache_slots, cache_misses;
  std::vector<BlockSections> blocks;  // as in MiniBatch::blocks (one shared block stays one)
  // MH-Aug's views (MiniBatch::views): every view's blocks (view after view, each as many as
  // `blocks`), per view its row factors; node_weights.
  std::vector<BlockSections> view_blocks;
  std::vector<Section> view_factors;
  Section node_weights;
  std::size_t total_bytes = 0;

  static BatchLayout of(const graph::MiniBatch& batch, int64_t feature_cols, std::span<const int32_t> cache_slot_of = {},
                        graph::FeatureDType dtype = graph::FeatureDType::kFloat32);
  // The layout `batch` would have with block b holding block_edges[b] edges and its node counts
  // and lists unchanged (what graph::EdgeCutPlan::cut gives: a block without edges has no
  // weights), without building that batch.
  static BatchLayout of(const graph::MiniBatch& batch, int64_t feature_cols, std::span<const int64_t> block_edges,
                        graph::FeatureDType dtype = graph::FeatureDType::kFloat32);
  std::size_t feature_bytes() const { return feature_dtype == graph::FeatureDType::kFloat32 ? 4 : 2; }
};

// The counts the packed size of a batch without a feature cache depends on, for a batch that is
// not built (the memory governor's candidate micro-batches: graph::split_sizes).
struct PackedCounts {
  struct BlockCounts {
    int64_t num_dst = 0, num_src = 0, edges = 0;
    bool weighted = false;  // carries edge weights
    // Its offset arrays' lengths and which transpose arrays it has: as Block::from_csr builds a
    // block, num_dst + 1 and num_src + 1 with the transpose (what a split's parts have).
    int64_t offsets = num_dst + 1, t_offsets = num_src + 1;
    bool t_indices = true, t_edges = true;
  };
  int64_t inputs = 0, targets = 0, loss_rows = 0, loss_weights = 0;
  std::vector<BlockCounts> blocks;
  std::vector<BlockCounts> view_blocks{};  // MH-Aug's views' blocks, view after view
  int64_t views = 0;                      // each with `inputs` row factors
  int64_t node_weights = 0;
};
// BatchLayout::of(batch, feature_cols, {}, dtype).total_bytes of a batch with these counts.
std::size_t packed_bytes(const PackedCounts& counts, int64_t feature_cols,
                         graph::FeatureDType dtype = graph::FeatureDType::kFloat32);

// The packed bytes of a one-block batch of `num_src` float32 rows of `feature_cols`, `num_dst`
// targets (each with a label, a loss row and a weight) and `edges` edges (weighted unless
// `weighted` is false: a block norm without weights, graph::BlockNorm kNone and kSelfLoops) with
// their transpose, laid out as BatchLayout::of lays a batch out: at least the total_bytes of any
// such batch with at most these counts. For planning from shapes (layer-wise inference's chunks).
std::size_t packed_block_batch_bytes(int64_t num_src, int64_t num_dst, int64_t edges, int64_t feature_cols,
                                     bool weighted = true);

// Writes `batch` into `dst` (layout.total_bytes bytes): features (unless layout.feature_cols is 0) gathered straight from `features`
// (no intermediate copy; the gather is parallel; a float32 layout widens a 16-bit store's rows, a
// 16-bit layout needs a store of its dtype), the input node ids, labels[targets[i]] for every
// target, and the arrays of the batch. `labels` is indexed by global node id; empty `labels` (inference) leave the
// label section unwritten.
void pack_batch(const graph::MiniBatch& batch, const graph::FeatureStore& features, std::span<const int32_t> labels,
                const BatchLayout& layout, std::byte* dst, std::span<const int32_t> cache_slot_of = {});

// A packed batch read in place from host-accessible memory (a slot, or device memory of the CPU
// backend): views into the bytes, kept alive by `owner`. The blocks alias the packed arrays.
struct PackedBatchView {
  models::MatrixView<const float> features;  // float32 rows (null data when they are 16-bit)
  const uint16_t* features16 = nullptr;       // fp16/bf16 rows (layout.feature_dtype), features.rows x cols
  std::span<const graph::NodeId> input_nodes;  // global id of each feature row (forward's row_ids)
  std::span<const int32_t> labels;             // per target
  std::span<const int32_t> loss_rows;
  std::span<const float> loss_weights;
  std::span<const int32_t> cache_hits, cache_slots, cache_misses;  // layout.cached
  std::vector<graph::Block> blocks;
  // MH-Aug (BatchLayout::view_blocks): the views' blocks (view after view), their row factors, the
  // node weights.
  std::vector<graph::Block> view_blocks;
  std::vector<std::span<const float>> view_factors;
  std::span<const float> node_weights;

  static PackedBatchView of(const BatchLayout& layout, std::shared_ptr<const void> owner, std::byte* base);
};

}  // namespace gnnpipe::pipeline
