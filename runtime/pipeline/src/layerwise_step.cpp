#include "layerwise_step.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kFloat = sizeof(float);

// Host memory of the step (pinned on a GPU), grown with 1/8 headroom and never shrunk.
template <class T>
T* grow(core::Buffer<T>& buffer, std::size_t n, core::Device device) {
  if (buffer.size() < n) {
    buffer = core::Buffer<T>();
    buffer = core::Buffer<T>(n + n / 8, core::MemoryKind::kStaging, device);
  }
  return buffer.data();
}

// Rows [first, last) of positions `rows` (ascending) shifted by -first.
std::pair<std::size_t, std::size_t> rows_within(std::span<const int32_t> rows, int64_t first, int64_t last) {
  const auto lo = std::lower_bound(rows.begin(), rows.end(), first);
  const auto hi = std::lower_bound(lo, rows.end(), last);
  return {static_cast<std::size_t>(lo - rows.begin()), static_cast<std::size_t>(hi - rows.begin())};
}

}  // namespace

int64_t LayerwisePlan::total_chunks() const { return std::accumulate(chunks.begin(), chunks.end(), int64_t{0}); }

LayerwisePlan plan_chunks(const models::GnnModel<float>& model, const graph::MiniBatch& batch, int64_t chunk_rows,
                          bool exact, bool device_outputs) {
  GNNPIPE_CHECK(chunk_rows >= 1, "layer-wise: {} destinations per chunk", chunk_rows);
  const std::size_t layers = model.num_layers();
  const std::vector<const graph::Block*> blocks = batch.layer_blocks(layers);
  LayerwisePlan plan;
  plan.chunk_rows = chunk_rows;
  plan.exact = exact;
  plan.device_outputs = device_outputs;
  const std::span<const int32_t> loss_rows = batch.loss_rows.span();
  const graph::Block* counted = nullptr;  // the block `counts` describes (a full batch shares one)
  std::vector<graph::ChunkCounts> counts;
  for (std::size_t l = 0; l < layers; ++l) {
    const graph::Block& b = *blocks[l];
    const int64_t in = model.layer_in_dim(l), out = model.layer_out_dim(l);
    if (counted != &b) {
      counts.clear();
      std::optional<graph::BlockChunker> chunker;
      if (exact) chunker.emplace(b);
      for (int64_t first = 0; first < b.num_dst; first += chunk_rows) {
        const int64_t last = std::min<int64_t>(first + chunk_rows, b.num_dst);
        if (exact) {
          counts.push_back(chunker->count(static_cast<graph::NodeId>(first), static_cast<graph::NodeId>(last)));
        } else {
          const int64_t edges = b.offsets[static_cast<std::size_t>(last)] - b.offsets[static_cast<std::size_t>(first)];
          counts.push_back({last - first, std::min<int64_t>(b.num_src, last - first + edges), edges});
        }
      }
      counted = &b;
    }
    models::BlockShape largest;
    for (std::size_t c = 0; c < counts.size(); ++c) {
      const graph::ChunkCounts& k = counts[c];
      largest = {std::max(largest.num_dst, k.num_dst), std::max(largest.num_src, k.num_src),
                 std::max(largest.edges, k.edges)};
      const std::size_t packed = packed_block_batch_bytes(k.num_src, k.num_dst, k.edges, 0);
      const auto x = static_cast<std::size_t>(k.num_src * in) * kFloat;
      const auto y = static_cast<std::size_t>(k.num_dst * out) * kFloat;
      // Forward (hidden layers): chunk and rows in, outputs back. The last layer: chunk and rows
      // in, its input gradient back. Backward (hidden layers): chunk, rows and output gradient in,
      // the input gradient back (not for layer 0).
      // With the outputs on the device only the chunk (and its sources' ids) and layer 0's rows move.
      const std::size_t dx = l > 0 ? x : 0;
      if (device_outputs) {
        const std::size_t ids = static_cast<std::size_t>(k.num_src) * sizeof(graph::NodeId);
        const std::size_t in_rows = l == 0 ? x : ids;
        plan.moved_bytes += l + 1 < layers ? 2 * (packed + in_rows) : packed + in_rows;
      } else {
        plan.moved_bytes += l + 1 < layers ? (packed + x + y) + (packed + x + y + dx) : packed + x + dx;
      }
      if (l + 1 == layers) {
        const int64_t first = static_cast<int64_t>(c) * chunk_rows;
        const auto [lo, hi] = rows_within(loss_rows, first, first + k.num_dst);
        plan.loss_rows = std::max(plan.loss_rows, hi - lo);
      }
    }
    plan.chunks.push_back(static_cast<int64_t>(counts.size()));
    plan.largest.push_back(largest);
    plan.packed.push_back(packed_block_batch_bytes(largest.num_src, largest.num_dst, largest.edges, 0));
    if (l + 1 < layers) plan.outputs_bytes += static_cast<std::size_t>(b.num_dst * out) * kFloat;
    if (l > 0) plan.gradient_bytes = std::max(plan.gradient_bytes, static_cast<std::size_t>(b.num_src * in) * kFloat);
  }
  return plan;
}

std::vector<std::size_t> layerwise_arrays(const models::GnnModel<float>& model, const LayerwisePlan& plan, std::size_t l) {
  const models::BlockShape& s = plan.largest.at(l);
  const auto x = static_cast<std::size_t>(s.num_src * model.layer_in_dim(l)) * kFloat;
  const bool dev = plan.device_outputs;
  return {plan.packed.at(l),
          x,
          static_cast<std::size_t>(s.num_dst * model.layer_out_dim(l)) * kFloat,
          l > 0 ? x : 0,
          dev ? plan.outputs_bytes : 0,
          dev ? plan.gradient_bytes : 0,
          dev && model.num_layers() > 2 ? plan.gradient_bytes : 0,
          dev && l > 0 ? static_cast<std::size_t>(s.num_src) * sizeof(graph::NodeId) : 0};
}

struct LayerwiseStep::Chunk {
  int64_t first = 0;
  std::vector<graph::NodeId> sources;        // the batch's local ids of the chunk's sources
  std::span<const graph::NodeId> on_device;  // the same on the device (outputs on the device, l > 0)
  PackedBatchView view;                      // in device memory
  models::MatrixView<float> x;               // the sources' input rows, on the device
};

LayerwiseStep::LayerwiseStep(models::GnnModel<float>& model, const graph::FeatureStore& features)
    : model_(model), ctx_(model.context()), stream_(ctx_.stream()), features_(features) {}

void LayerwiseStep::release() {
  for (models::DeviceArray<float>* a : {&x_, &dy_, &dx_, &outputs_dev_, &grad_dev_[0], &grad_dev_[1]}) a->release(stream_);
  packed_.release(stream_);
  sources_dev_.release(stream_);
}

models::MatrixView<float> LayerwiseStep::outputs_of(std::size_t l) {
  const Rows& r = output_rows_.at(l);
  if (device_outputs_) return {outputs_dev_.data() + r.offset, r.rows, r.cols};
  return {outputs_[l].data(), r.rows, r.cols};
}

LayerwiseStep::Chunk LayerwiseStep::stage(graph::BlockChunker& chunker, const graph::MiniBatch& batch, std::size_t l,
                                          int64_t first, int64_t last, std::span<const float> loss_weights) {
  Chunk chunk;
  chunk.first = first;
  graph::BlockChunk built = chunker.build(static_cast<graph::NodeId>(first), static_cast<graph::NodeId>(last));
  chunk.sources = std::move(built.sources);
  graph::MiniBatch part;
  part.epoch = batch.epoch;
  part.index = batch.index;
  std::vector<graph::NodeId> ids(chunk.sources.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = batch.input_nodes[static_cast<std::size_t>(chunk.sources[i])];
  part.targets = graph::HostArray<graph::NodeId>(std::vector<graph::NodeId>(ids.begin(), ids.begin() + (last - first)));
  part.input_nodes = graph::HostArray<graph::NodeId>(std::move(ids));
  if (!loss_weights.empty()) {
    const auto [lo, hi] = rows_within(batch.loss_rows.span(), first, last);
    std::vector<int32_t> rows(hi - lo);
    for (std::size_t i = lo; i < hi; ++i) rows[i - lo] = batch.loss_rows[i] - static_cast<int32_t>(first);
    part.loss_rows = graph::HostArray<int32_t>(std::move(rows));
    part.loss_weights = graph::HostArray<float>(std::vector<float>(loss_weights.begin() + static_cast<std::ptrdiff_t>(lo),
                                                                   loss_weights.begin() + static_cast<std::ptrdiff_t>(hi)));
  }
  part.blocks.push_back(std::move(built.block));
  const core::Device device = ctx_.device();
  const BatchLayout layout = BatchLayout::of(part, 0);
  pack_batch(part, features_, labels_, layout, grow(packed_host_, layout.total_bytes, device));
  std::byte* packed = packed_.ensure(ctx_, layout.total_bytes);
  core::copy_bytes_async(packed, packed_host_.data(), layout.total_bytes, stream_);
  chunk.view = PackedBatchView::of(layout, nullptr, packed);
  moved_ += layout.total_bytes;
  // The sources' input rows: features for layer 0 (gathered on the host), the layer below's
  // outputs above it (gathered where they live).
  const int64_t in = model_.layer_in_dim(l);
  const std::size_t rows = chunk.sources.size(), cols = static_cast<std::size_t>(in);
  chunk.x = x_.matrix(ctx_, static_cast<int64_t>(rows), in);
  if (l > 0 && device_outputs_) {
    graph::NodeId* ids_host = grow(sources_host_, rows, device);
    std::copy(chunk.sources.begin(), chunk.sources.end(), ids_host);
    graph::NodeId* ids_dev = sources_dev_.ensure(ctx_, rows);
    core::copy_bytes_async(ids_dev, ids_host, rows * sizeof(graph::NodeId), stream_);
    moved_ += rows * sizeof(graph::NodeId);
    chunk.on_device = {ids_dev, rows};
    models::ops::copy_rows<float>(ctx_, outputs_of(l - 1), chunk.on_device, chunk.x, {});
    return chunk;
  }
  float* staged = grow(x_host_, rows * cols, device);
  if (l == 0) {
    features_.gather(part.input_nodes.span(), std::span<float>(staged, rows * cols));
  } else {
    const float* below = outputs_[l - 1].data();
    using Range = tbb::blocked_range<std::size_t>;
    tbb::parallel_for(Range(0, rows, 1024), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        std::memcpy(staged + i * cols, below + static_cast<std::size_t>(chunk.sources[i]) * cols, cols * kFloat);
      }
    }));
  }
  core::copy_bytes_async(chunk.x.data, staged, rows * cols * kFloat, stream_);
  moved_ += rows * cols * kFloat;
  return chunk;
}

void LayerwiseStep::add_input_gradient(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad) {
  if (device_outputs_) {
    models::ops::add_rows<float>(ctx_, dx, grad, chunk.on_device);  // a chunk's sources are distinct
    return;
  }
  const std::size_t rows = chunk.sources.size(), cols = static_cast<std::size_t>(dx.cols);
  float* host = grow(dx_host_, rows * cols, ctx_.device());
  core::copy_bytes_async(host, dx.data, rows * cols * kFloat, stream_);
  moved_ += rows * cols * kFloat;
  stream_.synchronize();
  // A chunk's sources are distinct: each row is added by one thread.
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, rows, 256), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      float* out = grad.data + static_cast<std::size_t>(chunk.sources[i]) * cols;
      const float* in = host + i * cols;
      for (std::size_t j = 0; j < cols; ++j) out[j] += in[j];
    }
  }));
}

models::MatrixView<float> LayerwiseStep::gradient(int which, int64_t rows, int64_t cols) {
  const auto n = static_cast<std::size_t>(rows * cols);
  if (device_outputs_) {
    const models::MatrixView<float> g = grad_dev_[which].matrix(ctx_, rows, cols);
    models::ops::zero<float>(ctx_, g);
    return g;
  }
  float* g = grow(grad_host_[which], n, ctx_.device());
  std::fill(g, g + n, 0.f);
  return {g, rows, cols};
}

std::size_t LayerwiseStep::run(const graph::MiniBatch& batch, const LayerwisePlan& plan, core::RngKey key,
                               std::span<const int32_t> labels, const Loss& loss) {
  moved_ = 0;
  labels_ = labels;
  device_outputs_ = plan.device_outputs;
  const std::size_t layers = model_.num_layers();
  const std::vector<const graph::Block*> blocks = batch.layer_blocks(layers);
  const int64_t step = plan.chunk_rows;
  GNNPIPE_CHECK(step >= 1 && plan.chunks.size() == layers, "layer-wise: a plan of {} layers for a {}-layer model",
                plan.chunks.size(), layers);
  const core::Device device = ctx_.device();
  // Every loss row's weight, so that the chunks' weighted losses add up to the batch's.
  std::vector<float> weights(batch.loss_rows.size());
  if (batch.loss_weights.empty()) {
    std::fill(weights.begin(), weights.end(), weights.empty() ? 0.f : 1.f / static_cast<float>(weights.size()));
  } else {
    std::copy(batch.loss_weights.begin(), batch.loss_weights.end(), weights.begin());
  }
  // Where every hidden layer's outputs go: one device array (in layer order), or a host buffer each.
  output_rows_.clear();
  std::size_t total = 0;
  for (std::size_t l = 0; l + 1 < layers; ++l) {
    output_rows_.push_back({total, blocks[l]->num_dst, model_.layer_out_dim(l)});
    total += static_cast<std::size_t>(blocks[l]->num_dst * model_.layer_out_dim(l));
  }
  if (device_outputs_) {
    outputs_dev_.ensure(ctx_, total);
  } else {
    outputs_.resize(layers - 1);
    for (std::size_t l = 0; l + 1 < layers; ++l) {
      grow(outputs_[l], static_cast<std::size_t>(output_rows_[l].rows * output_rows_[l].cols), device);
    }
  }
  // Forward through the hidden layers.
  for (std::size_t l = 0; l + 1 < layers; ++l) {
    const graph::Block& b = *blocks[l];
    const models::MatrixView<float> outputs = outputs_of(l);
    graph::BlockChunker chunker(b);
    for (int64_t first = 0; first < b.num_dst; first += step) {
      const int64_t last = std::min(first + step, static_cast<int64_t>(b.num_dst));
      Chunk c = stage(chunker, batch, l, first, last, {});
      const models::MatrixView<const float> z = model_.forward_layer(l, c.view.blocks.front(), c.x, c.view.input_nodes, key);
      const std::size_t bytes = static_cast<std::size_t>(z.rows * z.cols) * kFloat;
      core::copy_bytes_async(outputs.data + first * outputs.cols, z.data, bytes, stream_);
      if (!device_outputs_) moved_ += bytes;
      stream_.synchronize();  // the host staging buffers are refilled for the next chunk
    }
  }
  // Backward from the top: the last layer's chunks compute the loss and run backward at once; each
  // layer below recomputes its chunk's forward first. `below` collects the input gradient of the
  // layer being run, `above` holds that of the layer above (this layer's outputs); the two
  // gradient buffers alternate.
  models::MatrixView<float> above{};
  int which = 0;
  for (std::size_t l = layers; l-- > 0;) {
    const bool top = l + 1 == layers;
    const graph::Block& b = *blocks[l];
    const int64_t in = model_.layer_in_dim(l), out = model_.layer_out_dim(l);
    const models::MatrixView<float> below = l > 0 ? gradient(which, b.num_src, in) : models::MatrixView<float>{};
    graph::BlockChunker chunker(b);
    std::size_t index = 0;
    for (int64_t first = 0; first < b.num_dst; first += step, ++index) {
      const int64_t last = std::min(first + step, static_cast<int64_t>(b.num_dst));
      Chunk c = stage(chunker, batch, l, first, last, top ? std::span<const float>(weights) : std::span<const float>());
      const graph::Block& block = c.view.blocks.front();
      const models::MatrixView<const float> z = model_.forward_layer(l, block, c.x, c.view.input_nodes, key);
      const models::MatrixView<float> dy = dy_.matrix(ctx_, z.rows, z.cols);
      if (top) {
        loss(c.view, z, dy, index);
      } else {
        const std::size_t bytes = static_cast<std::size_t>(dy.rows * dy.cols) * kFloat;
        core::copy_bytes_async(dy.data, above.data + first * out, bytes, stream_);
        if (!device_outputs_) moved_ += bytes;
      }
      if (l > 0) {
        const models::MatrixView<float> dx = dx_.matrix(ctx_, block.num_src, in);
        model_.backward_layer(l, block, dy, dx);
        add_input_gradient(c, dx, below);
      } else {
        model_.backward_layer(l, block, dy, {nullptr, block.num_src, in});
      }
      stream_.synchronize();  // the host staging buffers are refilled for the next chunk
    }
    above = below;
    which = 1 - which;
  }
  return moved_;
}

}  // namespace gnnpipe::pipeline::detail
