#include "layerwise_step.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kFloat = sizeof(float);


}  // namespace

// A chunk built and packed on the host (prepare), waiting to be copied and run (issue).
struct LayerwiseStep::Prepared {
  int64_t first = 0;
  std::vector<graph::NodeId> sources;  // the batch's local ids of the chunk's sources
  std::vector<graph::NodeId> ids;      // their global ids, kept only where the host gathers layer 0's rows
  BatchLayout layout;
  core::Buffer<std::byte> packed;      // host (pinned on a GPU), grow-only
  core::Buffer<graph::NodeId> upload;  // the ids a device gather reads (pinned on a GPU), grow-only
};

// A window of chunks prepared together; its host buffers are refilled once `done` (recorded after
// its last chunk was issued) completed.
struct LayerwiseStep::Round {
  explicit Round(core::Device device) : done(device) {}
  std::vector<Prepared> chunks;  // grown to the window, reused
  std::size_t count = 0;         // prepared now
  core::Event done;
  bool pending = false;
};

// Every thread's chunker of one block (a scratch map of its sources each), kept for the passes of
// one step over that block (a full batch's layers share one).
struct LayerwiseStep::Chunkers {
  const graph::Block* block = nullptr;
  tbb::enumerable_thread_specific<std::optional<graph::BlockChunker>> local;
};

struct LayerwiseStep::Chunk {
  int64_t first = 0;
  int slot = 0;                              // the device slot its packed chunk and ids were copied into
  std::span<const graph::NodeId> sources;    // the batch's local ids of the chunk's sources
  std::span<const graph::NodeId> on_device;  // the same on the device (rows gathered there), or global ids (kFeatures)
  PackedBatchView view;                      // in device memory
  models::MatrixView<float> x;               // the sources' input rows, on the device
};

LayerwiseStep::LayerwiseStep(models::GnnModel<float>& model, const graph::FeatureStore& features)
    : model_(model), ctx_(model.context()), stream_(ctx_.stream()), features_(features),
      chunkers_(std::make_unique<Chunkers>()), copy_stream_(ctx_.device()), synced_(ctx_.device()),
      copied_{core::Event(ctx_.device()), core::Event(ctx_.device())},
      read_{core::Event(ctx_.device()), core::Event(ctx_.device())} {
  rounds_.emplace_back(std::make_unique<Round>(ctx_.device()));
  rounds_.emplace_back(std::make_unique<Round>(ctx_.device()));
}

LayerwiseStep::~LayerwiseStep() {
  // Copies in flight still read the rounds' host buffers.
  for (const auto& r : rounds_) {
    if (r->pending) r->done.synchronize();
  }
}

void LayerwiseStep::release() {
  for (models::DeviceArray<float>* a :
       {&x_, &dy_, &dx_, &outputs_dev_, &grad_dev_[0], &grad_dev_[1], &layer_in_, &layer_grad_, &inputs_dev_}) {
    a->release(stream_);
  }
  // The slots are the copy stream's: their frees wait for the train stream's last reads.
  synced_.record(stream_);
  copy_stream_.wait(synced_);
  for (int s = 0; s < 2; ++s) {
    packed_[s].release(copy_stream_);
    sources_dev_[s].release(copy_stream_);
    slot_read_[s] = false;
  }
  rows16_.release(stream_);
}

models::MatrixView<float> LayerwiseStep::outputs_of(std::size_t l) {
  const Rows& r = output_rows_.at(l);
  if (outputs_on(LayerOutputs::kDevice)) return {outputs_dev_.data() + r.offset, r.rows, r.cols};
  return {outputs_[l].data(), r.rows, r.cols};
}

models::MatrixView<const float> LayerwiseStep::rows_on_device(std::size_t l) const {
  if (l == 0) return plan_->placement.inputs == LayerInputs::kDevice ? inputs_view_ : models::MatrixView<const float>{};
  switch (plan_->placement.outputs) {
    case LayerOutputs::kDevice: {
      const Rows& r = output_rows_.at(l - 1);
      return {outputs_dev_.data() + r.offset, r.rows, r.cols};
    }
    case LayerOutputs::kLayer: return layer_in_view_;
    case LayerOutputs::kHost: break;
  }
  return {};
}

std::span<const graph::NodeId> LayerwiseStep::upload_ids(const graph::NodeId* host, std::size_t n, int slot) {
  graph::NodeId* dev = sources_dev_[slot].ensure(ctx_.allocator(), copy_stream_, n);
  core::copy_bytes_async(dev, host, n * sizeof(graph::NodeId), copy_stream_);
  moved_ += n * sizeof(graph::NodeId);
  return {dev, n};
}

void LayerwiseStep::prepare(Round& round, const graph::Block& b, const graph::MiniBatch& batch, std::size_t l,
                            int64_t first_chunk, std::size_t n, std::span<const float> loss_weights, bool transpose) {
  if (round.pending) round.done.synchronize();  // its last copies read the buffers refilled here
  round.pending = false;
  if (round.chunks.size() < n) round.chunks.resize(n);
  round.count = n;
  const bool uploads = uploads_ids(*plan_, l);
  const bool host_rows = l == 0 && !rows_gathered_on_device(plan_->placement, l) && !plan_->once_at(l);
  const core::Device device = ctx_.device();
  if (chunkers_->block != &b) {
    chunkers_->local.clear();
    chunkers_->block = &b;
  }
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, n, 1), core::tsan::fork_join([&](const Range& r) {
    std::optional<graph::BlockChunker>& chunker = chunkers_->local.local();
    if (!chunker) chunker.emplace(b);
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      Prepared& p = round.chunks[i];
      p.first = (first_chunk + static_cast<int64_t>(i)) * plan_->chunk_rows;
      const int64_t last = std::min(p.first + plan_->chunk_rows, static_cast<int64_t>(b.num_dst));
      graph::BlockChunk built =
          chunker->build(static_cast<graph::NodeId>(p.first), static_cast<graph::NodeId>(last), transpose);
      p.sources = std::move(built.sources);
      graph::MiniBatch part;
      part.epoch = batch.epoch;
      part.index = batch.index;
      std::vector<graph::NodeId> ids(p.sources.size());
      for (std::size_t k = 0; k < ids.size(); ++k) ids[k] = batch.input_nodes[static_cast<std::size_t>(p.sources[k])];
      part.targets = graph::HostArray<graph::NodeId>(std::vector<graph::NodeId>(ids.begin(), ids.begin() + (last - p.first)));
      if (host_rows) p.ids = ids;  // (only a host gather reads them after packing)
      part.input_nodes = graph::HostArray<graph::NodeId>(std::move(ids));
      if (!loss_weights.empty()) {
        const auto [lo, hi] = rows_within(batch.loss_rows.span(), p.first, last);
        std::vector<int32_t> rows(hi - lo);
        for (std::size_t k = lo; k < hi; ++k) rows[k - lo] = batch.loss_rows[k] - static_cast<int32_t>(p.first);
        part.loss_rows = graph::HostArray<int32_t>(std::move(rows));
        part.loss_weights = graph::HostArray<float>(std::vector<float>(
            loss_weights.begin() + static_cast<std::ptrdiff_t>(lo), loss_weights.begin() + static_cast<std::ptrdiff_t>(hi)));
      }
      part.blocks.push_back(std::move(built.block));
      p.layout = BatchLayout::of(part, 0);
      pack_batch(part, features_, labels_, p.layout, grow(p.packed, p.layout.total_bytes, device));
      if (uploads) std::copy(p.sources.begin(), p.sources.end(), grow(p.upload, p.sources.size(), device));
    }
  }));
}

LayerwiseStep::Chunk LayerwiseStep::issue(const Prepared& p, std::size_t l) {
  Chunk chunk;
  chunk.first = p.first;
  chunk.sources = p.sources;
  // The chunk and its ids cross on the copy stream into one of two slots, while the train stream
  // still runs the chunk before (the slot's last reader, two chunks back, comes first).
  const int slot = chunk.slot = next_slot_;
  next_slot_ = 1 - next_slot_;
  if (slot_read_[slot]) copy_stream_.wait(read_[slot]);
  const std::size_t bytes = p.layout.total_bytes;
  std::byte* packed = packed_[slot].ensure(ctx_.allocator(), copy_stream_, bytes);
  core::copy_bytes_async(packed, p.packed.data(), bytes, copy_stream_);
  moved_ += bytes;
  chunk.view = PackedBatchView::of(p.layout, nullptr, packed);
  const bool uploads = uploads_ids(*plan_, l);
  const std::span<const graph::NodeId> uploaded = uploads ? upload_ids(p.upload.data(), p.sources.size(), slot)
                                                          : std::span<const graph::NodeId>();
  copied_[slot].record(copy_stream_);
  stream_.wait(copied_[slot]);
  const auto ids = [&] { return uploads ? uploaded : chunk.view.input_nodes; };
  if (plan_->once_at(l)) {
    if (transformed_on_device()) chunk.on_device = ids();
    fill_transformed(p.sources, chunk.on_device, l);
    return chunk;
  }
  // The sources' input rows: gathered on the device (the placed features by global id, or a device
  // array by local id), or on the host (layer 0's features, or the layer below's host outputs).
  const int64_t in = model_.layer_in_dim(l);
  const std::size_t rows = p.sources.size(), cols = static_cast<std::size_t>(in);
  chunk.x = x_.matrix(ctx_, static_cast<int64_t>(rows), in);
  if (l == 0 && plan_->placement.inputs == LayerInputs::kFeatures) {
    chunk.on_device = ids();
    const auto n = static_cast<int64_t>(rows);
    if (placed_.dtype == graph::FeatureDType::kFloat32) {
      const models::MatrixView<const float> all{reinterpret_cast<const float*>(placed_.data), placed_.rows, placed_.cols};
      models::ops::copy_rows<float>(ctx_, all, chunk.on_device, chunk.x, {});
    } else {
      const models::MatrixView<const uint16_t> all{reinterpret_cast<const uint16_t*>(placed_.data), placed_.rows,
                                                   placed_.cols};
      const models::MatrixView<uint16_t> narrow = rows16_.matrix(ctx_, n, in);
      models::ops::copy_rows<uint16_t>(ctx_, all, chunk.on_device, narrow, {});
      models::ops::widen_16bit(ctx_, narrow.data, placed_.dtype == graph::FeatureDType::kBFloat16, n * in, chunk.x.data);
    }
    return chunk;
  }
  if (const models::MatrixView<const float> source = rows_on_device(l); source.data != nullptr) {
    chunk.on_device = ids();
    models::ops::copy_rows<float>(ctx_, source, chunk.on_device, chunk.x, {});
    return chunk;
  }
  stream_.synchronize();  // the last chunk's rows were copied out of x_host_
  float* staged = grow(x_host_, rows * cols, ctx_.device());
  if (l == 0) {
    features_.gather(p.ids, std::span<float>(staged, rows * cols));
  } else {
    const float* below = outputs_[l - 1].data();
    using Range = tbb::blocked_range<std::size_t>;
    tbb::parallel_for(Range(0, rows, 1024), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        std::memcpy(staged + i * cols, below + static_cast<std::size_t>(p.sources[i]) * cols, cols * kFloat);
      }
    }));
  }
  core::copy_bytes_async(chunk.x.data, staged, rows * cols * kFloat, stream_);
  moved_ += rows * cols * kFloat;
  return chunk;
}

void LayerwiseStep::run_pass(const graph::Block& b, const graph::MiniBatch& batch, std::size_t l, bool backward,
                             std::span<const float> loss_weights, const std::function<void(const Chunk&, std::size_t)>& body) {
  const int64_t chunks = (b.num_dst + plan_->chunk_rows - 1) / plan_->chunk_rows;
  // A window of chunks is built on every thread while the device runs the window before it; the
  // two windows' host buffers (twice kWindowBytes at most, or two chunks) alternate.
  const std::size_t largest = std::max<std::size_t>(1, plan_->packed.at(l));
  const auto threads = static_cast<std::size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  const std::size_t window = std::clamp<std::size_t>(kWindowBytes / largest, 1, threads);
  Round* now = rounds_[0].get();
  Round* next = rounds_[1].get();
  prepare(*now, b, batch, l, 0, std::min<std::size_t>(window, static_cast<std::size_t>(chunks)), loss_weights,
          backward);
  for (int64_t start = 0; start < chunks; start += static_cast<int64_t>(window)) {
    for (std::size_t i = 0; i < now->count; ++i) {
      const Chunk chunk = issue(now->chunks[i], l);
      body(chunk, static_cast<std::size_t>(start) + i);
      read_[chunk.slot].record(stream_);  // the slot's last reader: this chunk's work
      slot_read_[chunk.slot] = true;
    }
    now->done.record(copy_stream_);  // the round's host buffers are read by its copies only
    now->pending = true;
    const int64_t after = start + static_cast<int64_t>(window);
    if (after < chunks) {
      prepare(*next, b, batch, l, after, std::min<std::size_t>(window, static_cast<std::size_t>(chunks - after)),
              loss_weights, backward);
    }
    std::swap(now, next);
  }
}

void LayerwiseStep::add_input_gradient(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad) {
  if (outputs_on(LayerOutputs::kDevice)) {
    models::ops::add_rows<float>(ctx_, dx, grad, chunk.on_device);  // a chunk's sources are distinct
    return;
  }
  if (outputs_on(LayerOutputs::kLayer)) {
    models::ops::add_rows<float>(ctx_, dx, {layer_grad_.data(), layer_in_view_.rows, layer_in_view_.cols},
                                 chunk.on_device);
    return;
  }
  add_on_host(chunk, dx, grad);
}

void LayerwiseStep::add_transformed_gradient(const Chunk& chunk, models::MatrixView<const float> dh) {
  if (transformed_on_device()) {
    models::ops::add_rows<float>(ctx_, dh, transformed_.dh, chunk.on_device);
  } else {
    add_on_host(chunk, dh, transformed_.dh);
  }
}

void LayerwiseStep::add_on_host(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad) {
  const std::size_t rows = chunk.sources.size(), cols = static_cast<std::size_t>(dx.cols);
  float* host = grow(dx_host_, rows * cols, ctx_.device());
  core::copy_bytes_async(host, dx.data, rows * cols * kFloat, stream_);
  moved_ += rows * cols * kFloat;
  stream_.synchronize();
  // On the host (a chunk's sources are distinct: each row is added by one thread).
  models::ops::add_rows<float>(models::OpContext::host(), {host, static_cast<int64_t>(rows), dx.cols}, grad,
                               chunk.sources);
}

models::MatrixView<float> LayerwiseStep::gradient(int which, int64_t rows, int64_t cols) {
  const auto n = static_cast<std::size_t>(rows * cols);
  if (outputs_on(LayerOutputs::kDevice)) {
    const models::MatrixView<float> g = grad_dev_[which].matrix(ctx_, rows, cols);
    models::ops::zero<float>(ctx_, g);
    return g;
  }
  float* g = grow(grad_host_[which], n, ctx_.device());
  if (outputs_on(LayerOutputs::kHost)) std::fill(g, g + n, 0.f);
  return {g, rows, cols};
}

void LayerwiseStep::load_inputs(const graph::MiniBatch& batch) {
  const std::span<const graph::NodeId> ids = batch.input_nodes.span();
  const int64_t cols = model_.layer_in_dim(0);
  const auto rows = static_cast<int64_t>(ids.size());
  const models::MatrixView<float> all = inputs_dev_.matrix(ctx_, rows, cols);
  // Through pinned host memory a piece at a time (at most 64 MiB, or one row).
  const auto row_bytes = static_cast<std::size_t>(cols) * kFloat;
  const std::size_t piece = std::max<std::size_t>(1, (std::size_t{64} << 20) / std::max<std::size_t>(1, row_bytes));
  float* staged = grow(x_host_, std::min(piece, ids.size()) * static_cast<std::size_t>(cols), ctx_.device());
  for (std::size_t begin = 0; begin < ids.size(); begin += piece) {
    const std::size_t n = std::min(piece, ids.size() - begin);
    features_.gather(ids.subspan(begin, n), std::span<float>(staged, n * static_cast<std::size_t>(cols)));
    core::copy_bytes_async(all.data + begin * static_cast<std::size_t>(cols), staged, n * row_bytes, stream_);
    stream_.synchronize();  // the staging is refilled for the next piece
  }
  moved_ += ids.size() * row_bytes;
  inputs_view_ = all;
}

void LayerwiseStep::load_layer(std::size_t l) {
  if (!outputs_on(LayerOutputs::kLayer) || l == 0) return;
  const models::MatrixView<const float> below = outputs_of(l - 1);
  const models::MatrixView<float> rows = layer_in_.matrix(ctx_, below.rows, below.cols);
  const auto bytes = static_cast<std::size_t>(below.rows * below.cols) * kFloat;
  core::copy_bytes_async(rows.data, below.data, bytes, stream_);
  moved_ += bytes;
  layer_in_view_ = rows;
}

void LayerwiseStep::forward_hidden(const graph::MiniBatch& batch, std::span<const graph::Block* const> blocks,
                                   core::RngKey key) {
  for (std::size_t l = 0; l + 1 < blocks.size(); ++l) {
    const models::MatrixView<float> outputs = outputs_of(l);
    stream_.synchronize();  // the last pass's host outputs and staged rows are settled before this one reads them
    const bool once = plan_->once_at(l);
    if (once) {
      transform_pass(batch, l, *blocks[l], key);  // (its chunks read no input rows: nothing to load)
    } else {
      load_layer(l);
    }
    run_pass(*blocks[l], batch, l, false, {}, [&](const Chunk& c, std::size_t) {
      const graph::Block& block = c.view.blocks.front();
      const models::MatrixView<const float> z = once ? model_.forward_transformed(l, block, c.view.input_nodes, key)
                                                     : model_.forward_layer(l, block, c.x, c.view.input_nodes, key);
      const std::size_t bytes = static_cast<std::size_t>(z.rows * z.cols) * kFloat;
      core::copy_bytes_async(outputs.data + c.first * outputs.cols, z.data, bytes, stream_);
      if (!outputs_on(LayerOutputs::kDevice)) moved_ += bytes;
    });
  }
}

// Backward from the top: the last layer's chunks compute the loss and run backward at once; each
// layer below recomputes its chunk's forward first. `below` collects the input gradient of the
// layer being run, `above` holds that of the layer above (this layer's outputs); the two gradient
// buffers alternate. kLayer collects a layer's input gradient on the device and sends it back whole.
void LayerwiseStep::backward_all(const graph::MiniBatch& batch, std::span<const graph::Block* const> blocks,
                                 core::RngKey key, std::span<const float> weights, const Loss& loss) {
  const std::size_t layers = blocks.size();
  models::MatrixView<float> above{};
  int which = 0;
  for (std::size_t l = layers; l-- > 0;) {
    const bool top = l + 1 == layers;
    const graph::Block& b = *blocks[l];
    const int64_t in = model_.layer_in_dim(l), out = model_.layer_out_dim(l);
    // The last pass's host outputs and staged rows are settled, and the host gradient buffer
    // refilled below (read two layers up) is free.
    stream_.synchronize();
    const bool once = plan_->once_at(l);
    if (!once) load_layer(l);
    const models::MatrixView<float> below = l > 0 ? gradient(which, b.num_src, in) : models::MatrixView<float>{};
    if (l > 0 && outputs_on(LayerOutputs::kLayer)) models::ops::zero<float>(ctx_, layer_grad_.matrix(ctx_, b.num_src, in));
    // Transform-once: the row transform first, and every chunk's d(loss)/dh gathered in its store.
    if (once) {
      transform_pass(batch, l, b, key);
      const models::MatrixView<float> dh = transformed_.dh;
      if (transformed_on_device()) {
        models::ops::zero<float>(ctx_, dh);
      } else {
        std::fill(dh.data, dh.data + dh.size(), 0.f);
      }
    }
    run_pass(b, batch, l, true, top ? weights : std::span<const float>(), [&](const Chunk& c, std::size_t index) {
      const graph::Block& block = c.view.blocks.front();
      const models::MatrixView<const float> z = once ? model_.forward_transformed(l, block, c.view.input_nodes, key)
                                                     : model_.forward_layer(l, block, c.x, c.view.input_nodes, key);
      const models::MatrixView<float> dy = dy_.matrix(ctx_, z.rows, z.cols);
      if (top) {
        loss(c.view, z, dy, index);
      } else {
        const std::size_t bytes = static_cast<std::size_t>(dy.rows * dy.cols) * kFloat;
        core::copy_bytes_async(dy.data, above.data + c.first * out, bytes, stream_);
        if (!outputs_on(LayerOutputs::kDevice)) moved_ += bytes;
      }
      if (once) {
        add_transformed_gradient(c, model_.backward_transformed(l, block, dy));
      } else if (l > 0) {
        const models::MatrixView<float> dx = dx_.matrix(ctx_, block.num_src, in);
        model_.backward_layer(l, block, dy, dx);
        add_input_gradient(c, dx, below);
      } else {
        model_.backward_layer(l, block, dy, {nullptr, block.num_src, in});
      }
    });
    if (once) {
      // The input gradient where the layer's lives: the device's (kLayer: the running layer's, sent
      // back whole below), or the host's.
      const bool device = !outputs_on(LayerOutputs::kHost);
      const models::MatrixView<float> dx =
          outputs_on(LayerOutputs::kLayer) && l > 0 ? layer_grad_.matrix(ctx_, b.num_src, in) : below;
      transform_backward_pass(batch, l, b, key, dx, device);
    }
    if (l > 0 && outputs_on(LayerOutputs::kLayer)) {
      const auto bytes = static_cast<std::size_t>(below.rows * below.cols) * kFloat;
      core::copy_bytes_async(below.data, layer_grad_.data(), bytes, stream_);
      moved_ += bytes;
    }
    above = below;
    which = 1 - which;
  }
}

std::size_t LayerwiseStep::run(const graph::MiniBatch& batch, const LayerwisePlan& plan, core::RngKey key,
                               std::span<const int32_t> labels, const Loss& loss, const PlacedFeatures& placed) {
  moved_ = 0;
  labels_ = labels;
  placed_ = placed;
  layer_in_view_ = inputs_view_ = {};
  plan_ = &plan;
  chunkers_->local.clear();  // (a block of the last step may have had this one's address)
  chunkers_->block = nullptr;
  const std::size_t layers = model_.num_layers();
  const std::vector<const graph::Block*> blocks = batch.layer_blocks(layers);
  GNNPIPE_CHECK(plan.chunk_rows >= 1 && plan.chunks.size() == layers, "layer-wise: a plan of {} layers for a {}-layer model",
                plan.chunks.size(), layers);
  GNNPIPE_CHECK(plan_->placement.inputs != LayerInputs::kFeatures ||
                    (placed.data != nullptr && placed.cols == model_.layer_in_dim(0)),
                "layer-wise: the plan reads layer 0's rows from device features the step was not given");
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
  if (outputs_on(LayerOutputs::kDevice)) {
    // After them, the transformed rows (h, terms) and d(loss)/dh of the widest transform-once layer.
    transformed_offset_ = total;
    outputs_dev_.ensure(ctx_, total + plan.transformed_bytes / kFloat);
  } else {
    outputs_.resize(layers - 1);
    for (std::size_t l = 0; l + 1 < layers; ++l) {
      grow(outputs_[l], static_cast<std::size_t>(output_rows_[l].rows * output_rows_[l].cols), device);
    }
  }
  if (plan_->placement.inputs == LayerInputs::kDevice) load_inputs(batch);
  forward_hidden(batch, blocks, key);
  backward_all(batch, blocks, key, weights, loss);
  chunkers_->local.clear();  // their scratch maps are the size of the batch's sources, per thread
  chunkers_->block = nullptr;
  return moved_;
}

}  // namespace gnnpipe::pipeline::detail
