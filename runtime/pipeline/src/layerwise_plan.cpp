// The layer-wise plan (layerwise_step.hpp): a batch's chunks, their largest shapes, the step's
// device arrays and the bytes a step moves, under a placement.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "layerwise_step.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kFloat = sizeof(float);

}  // namespace

int64_t LayerwisePlan::total_chunks() const { return std::accumulate(chunks.begin(), chunks.end(), int64_t{0}); }

const char* to_string(LayerOutputs where) {
  switch (where) {
    case LayerOutputs::kHost: return "host";
    case LayerOutputs::kLayer: return "layer";
    case LayerOutputs::kDevice: return "device";
  }
  return "?";
}

const char* to_string(LayerInputs where) {
  switch (where) {
    case LayerInputs::kHost: return "host";
    case LayerInputs::kDevice: return "device";
    case LayerInputs::kFeatures: return "features";
  }
  return "?";
}

namespace {

// Every chunk's counts of block b in chunks of `chunk_rows` destinations (see plan_chunks); the
// exact counts on every thread (a chunker each: one scratch map of the block's sources).
std::vector<graph::ChunkCounts> chunk_counts(const graph::Block& b, int64_t chunk_rows, bool exact) {
  const auto n = static_cast<std::size_t>((b.num_dst + chunk_rows - 1) / chunk_rows);
  std::vector<graph::ChunkCounts> counts(n);
  const auto range_of = [&](std::size_t c) {
    const int64_t first = static_cast<int64_t>(c) * chunk_rows;
    return std::pair{first, std::min<int64_t>(first + chunk_rows, b.num_dst)};
  };
  if (!exact) {
    for (std::size_t c = 0; c < n; ++c) {
      const auto [first, last] = range_of(c);
      const int64_t edges = b.offsets[static_cast<std::size_t>(last)] - b.offsets[static_cast<std::size_t>(first)];
      counts[c] = {last - first, std::min<int64_t>(b.num_src, last - first + edges), edges};
    }
    return counts;
  }
  tbb::enumerable_thread_specific<std::optional<graph::BlockChunker>> chunkers;
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, n), core::tsan::fork_join([&](const Range& r) {
    std::optional<graph::BlockChunker>& chunker = chunkers.local();
    if (!chunker) chunker.emplace(b);
    for (std::size_t c = r.begin(); c != r.end(); ++c) {
      const auto [first, last] = range_of(c);
      counts[c] = chunker->count(static_cast<graph::NodeId>(first), static_cast<graph::NodeId>(last));
    }
  }));
  return counts;
}

}  // namespace

bool rows_gathered_on_device(const LayerwisePlacement& p, std::size_t l) {
  return l == 0 ? p.inputs != LayerInputs::kHost : p.outputs != LayerOutputs::kHost;
}

bool uploads_ids(const LayerwisePlan& plan, std::size_t l) {
  // A transform-once chunk gathers its transformed rows where the store is: on the device with kDevice.
  const bool on_device = plan.once_at(l) ? plan.placement.outputs == LayerOutputs::kDevice
                                         : rows_gathered_on_device(plan.placement, l);
  if (!on_device) return false;
  // The packed chunk's global ids serve a gather by global id, and one by local id where the two agree.
  return !(l == 0 && plan.placement.inputs == LayerInputs::kFeatures) && !plan.identity_inputs;
}

std::pair<std::size_t, std::size_t> rows_within(std::span<const int32_t> rows, int64_t first, int64_t last) {
  const auto lo = std::lower_bound(rows.begin(), rows.end(), first);
  const auto hi = std::lower_bound(lo, rows.end(), last);
  return {static_cast<std::size_t>(lo - rows.begin()), static_cast<std::size_t>(hi - rows.begin())};
}

LayerwisePlan plan_chunks(const models::GnnModel<float>& model, const graph::MiniBatch& batch, int64_t chunk_rows,
                          bool exact, LayerwisePlacement placement) {
  GNNPIPE_CHECK(chunk_rows >= 1, "layer-wise: {} destinations per chunk", chunk_rows);
  const std::size_t layers = model.num_layers();
  const std::vector<const graph::Block*> blocks = batch.layer_blocks(layers);
  LayerwisePlan plan;
  plan.chunk_rows = chunk_rows;
  plan.exact = exact;
  plan.placement = placement;
  graph::NodeId next = 0;
  const std::span<const graph::NodeId> inputs = batch.input_nodes.span();
  plan.identity_inputs = std::all_of(inputs.begin(), inputs.end(), [&](graph::NodeId v) { return v == next++; });
  const std::span<const int32_t> loss_rows = batch.loss_rows.span();
  // Blocks of an unweighted norm (GAT's self-loops) carry no edge weights.
  const bool weighted = model.block_norm() != graph::BlockNorm::kNone && model.block_norm() != graph::BlockNorm::kSelfLoops;
  const graph::Block* counted = nullptr;  // the block `counts` describes (a full batch shares one)
  std::vector<graph::ChunkCounts> counts;
  for (std::size_t l = 0; l < layers; ++l) {
    const graph::Block& b = *blocks[l];
    const int64_t in = model.layer_in_dim(l), out = model.layer_out_dim(l);
    if (counted != &b) {
      counts = chunk_counts(b, chunk_rows, exact);
      counted = &b;
    }
    // A hidden layer's chunks run twice (forward, then recomputed in backward); the last layer's once.
    const bool hidden = l + 1 < layers;
    const std::size_t passes = hidden ? 2 : 1;
    const auto layer_in = static_cast<std::size_t>(b.num_src * in) * kFloat;
    const bool once = model.transforms_rows(l);
    plan.once.push_back(once);
    // Transform-once: per source row, its transformed row and per-head terms, and d(loss)/dh.
    const auto z_row = once ? static_cast<std::size_t>(model.transform_width(l) + model.transform_heads(l)) * kFloat : 0;
    const auto dh_row = once ? static_cast<std::size_t>(model.transform_width(l)) * kFloat : 0;
    models::BlockShape largest;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const graph::ChunkCounts& k = counts[c];
      largest = {std::max(largest.num_dst, k.num_dst), std::max(largest.num_src, k.num_src),
                 std::max(largest.edges, k.edges)};
      const std::size_t packed = packed_block_batch_bytes(k.num_src, k.num_dst, k.edges, 0, weighted);
      // A forward pass's chunk carries no transpose (its sections' bytes, less their padding: still a bound).
      const std::size_t transpose = static_cast<std::size_t>(k.num_src + 1) * sizeof(graph::EdgeOffset) +
                                    static_cast<std::size_t>(k.edges) * (sizeof(graph::NodeId) + sizeof(graph::EdgeOffset));
      const auto x = static_cast<std::size_t>(k.num_src * in) * kFloat;
      const auto y = static_cast<std::size_t>(k.num_dst * out) * kFloat;
      const std::size_t ids = uploads_ids(plan, l) ? static_cast<std::size_t>(k.num_src) * sizeof(graph::NodeId) : 0;
      if (once) {
        // Every pass: the chunk and its ids in, and its sources' transformed rows unless the store
        // is on the device (then d(loss)/dh of its sources stays there too); outputs off the
        // device: a hidden chunk's outputs back (forward) and output gradient in (backward).
        const auto sources = static_cast<std::size_t>(k.num_src);
        const bool store_on_device = placement.outputs == LayerOutputs::kDevice;
        plan.moved_bytes += passes * (packed + ids);
        if (!store_on_device) plan.moved_bytes += passes * sources * z_row + sources * dh_row + (hidden ? 2 * y : 0);
      } else {
        // Every pass: the chunk and its input rows (or their ids, unless it carries them) in.
        plan.moved_bytes += passes * (packed + (rows_gathered_on_device(placement, l) ? ids : x));
        // Outputs off the device: a hidden chunk's outputs back (forward) and its output gradient
        // in (backward); kHost: the input gradient back too (not for layer 0).
        if (placement.outputs != LayerOutputs::kDevice) {
          if (hidden) plan.moved_bytes += 2 * y;
          if (l > 0 && placement.outputs == LayerOutputs::kHost) plan.moved_bytes += x;
        }
      }
      if (hidden) plan.moved_bytes -= transpose;
      if (l + 1 == layers) {
        const int64_t first = static_cast<int64_t>(c) * chunk_rows;
        const auto [lo, hi] = rows_within(loss_rows, first, first + k.num_dst);
        plan.loss_rows = std::max(plan.loss_rows, hi - lo);
      }
    }
    // kLayer: a layer above the first loads its input rows once a pass (not a transform-once
    // layer's: its chunks read none) and sends their gradient back once.
    if (placement.outputs == LayerOutputs::kLayer && l > 0) plan.moved_bytes += (once ? 0 : passes * layer_in) + layer_in;
    if (once) {
      // The row transform a pass: its rows' ids in, and its rows unless they are on the device
      // (layer 0's loaded for the step, or the device outputs below); the transformed rows back
      // unless the store is on the device. Then its backward's ids and rows in, d(loss)/dh in
      // from a host store, and (host outputs) the input gradient back.
      const auto rows = static_cast<std::size_t>(b.num_src);
      const bool store_on_device = placement.outputs == LayerOutputs::kDevice;
      const bool rows_on_device = l == 0 ? placement.inputs == LayerInputs::kDevice : store_on_device;
      const std::size_t rows_in = (rows_on_device ? 0 : layer_in) + rows * sizeof(graph::NodeId);
      plan.moved_bytes += passes * (rows_in + (store_on_device ? 0 : rows * z_row)) + rows_in +
                          (store_on_device ? 0 : rows * dh_row) +
                          (l > 0 && placement.outputs == LayerOutputs::kHost ? layer_in : 0);
      const auto store = static_cast<std::size_t>(b.num_src * (2 * model.transform_width(l) + model.transform_heads(l))) * kFloat;
      if (store_on_device) plan.transformed_bytes = std::max(plan.transformed_bytes, store);
    }
    plan.chunks.push_back(static_cast<int64_t>(counts.size()));
    plan.largest.push_back(largest);
    plan.packed.push_back(packed_block_batch_bytes(largest.num_src, largest.num_dst, largest.edges, 0, weighted));
    plan.layer_inputs.push_back(layer_in);
    if (hidden) plan.outputs_bytes += static_cast<std::size_t>(b.num_dst * out) * kFloat;
    if (l > 0) plan.gradient_bytes = std::max(plan.gradient_bytes, layer_in);
  }
  if (placement.inputs == LayerInputs::kDevice) {
    plan.inputs_bytes = plan.layer_inputs.front();
    plan.moved_bytes += plan.inputs_bytes;  // once a step
  }
  return plan;
}

std::vector<std::size_t> layerwise_arrays(const models::GnnModel<float>& model, const LayerwisePlan& plan, std::size_t l) {
  const models::BlockShape& s = plan.largest.at(l);
  const int64_t in = model.layer_in_dim(l);
  const auto x = static_cast<std::size_t>(s.num_src * in) * kFloat;
  const LayerwisePlacement& p = plan.placement;
  const bool device = p.outputs == LayerOutputs::kDevice, layer = p.outputs == LayerOutputs::kLayer && l > 0;
  const bool rows16 = l == 0 && p.inputs == LayerInputs::kFeatures && p.features16;
  // (A transform-once layer's runs of rows upload their ids: as many as a chunk's sources.)
  const std::size_t ids =
      uploads_ids(plan, l) || plan.once_at(l) ? static_cast<std::size_t>(s.num_src) * sizeof(graph::NodeId) : 0;
  return {plan.packed.at(l),
          x,
          static_cast<std::size_t>(s.num_dst * model.layer_out_dim(l)) * kFloat,
          l > 0 ? x : 0,
          device ? plan.outputs_bytes + plan.transformed_bytes : layer ? plan.layer_inputs.at(l) : 0,
          device ? plan.gradient_bytes : layer ? plan.layer_inputs.at(l) : 0,
          device && model.num_layers() > 2 ? plan.gradient_bytes : 0,
          ids,
          plan.inputs_bytes,
          rows16 ? static_cast<std::size_t>(s.num_src * in) * sizeof(uint16_t) : 0,
          plan.packed.at(l),
          ids};
}

}  // namespace gnnpipe::pipeline::detail
