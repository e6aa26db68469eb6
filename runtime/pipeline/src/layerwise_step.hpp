#pragma once
// LayerwiseStep: the gradients of one optimizer step over a batch too large for the device as a
// whole (memory.policy layerwise, and what split falls back to when splitting cannot shrink a
// batch's trees: ROC, MLSys 2020; HongTu, SIGMOD 2024). The model runs one layer at a time over
// chunks of that layer's destination rows (graph::BlockChunker): a chunk's block and ids are
// packed on the host and copied to the device, and the layer runs there (GnnModel::forward_layer).
// Every hidden layer's outputs and the input gradients live either on the device (the plan's
// device_outputs, where the budget holds them: a chunk's rows are gathered there, ops::copy_rows,
// and its input gradient added there, ops::add_rows) or in host memory (pinned on a GPU: a chunk's
// rows are gathered on the host and copied in, its outputs and input gradient copied back). The last layer's chunks compute the loss and run backward at once;
// every lower layer's chunks then recompute their forward (dropout masks are redrawn from the
// counter-based RNG by global node id, never stored) and run backward, their input gradients
// added into a host matrix in chunk order. Parameter gradients accumulate over the chunks; the
// caller runs one optimizer step. Exact: the same loss and gradients as the whole batch's step, up
// to the order of the sums over chunks. The device holds one chunk's arrays at a time, and the
// device memory this takes is what plan_chunks sizes (the memory governor's prediction).
// The host waits for each chunk before packing the next (no copy/compute overlap yet).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"

namespace gnnpipe::pipeline::detail {

// A batch's layer-wise plan: destinations per chunk, and the largest chunk of each layer.
struct LayerwisePlan {
  int64_t chunk_rows = 0;                  // destinations per chunk (a layer's last chunk may have fewer)
  std::vector<int64_t> chunks;             // per layer
  std::vector<models::BlockShape> largest; // per layer: the most destinations, sources and edges of a chunk
  std::vector<std::size_t> packed;         // per layer: a packed chunk's bytes at most
  std::size_t loss_rows = 0;               // the most loss rows of a last-layer chunk
  std::size_t moved_bytes = 0;             // host <-> device bytes of one step (at most)
  bool exact = false;                      // largest counts a chunk's distinct sources (else a bound)
  bool device_outputs = false;             // hidden outputs and input gradients on the device
  std::size_t outputs_bytes = 0;           // every hidden layer's outputs
  std::size_t gradient_bytes = 0;          // the widest input gradient of a layer above the first
  int64_t total_chunks() const;
};

// The plan of `batch` in chunks of `chunk_rows` destinations. exact: every chunk's distinct
// sources counted (one pass over the batch's edges per distinct block); else bounded by the
// chunk's destinations plus its edges (O(chunks), nothing read per edge).
LayerwisePlan plan_chunks(const models::GnnModel<float>& model, const graph::MiniBatch& batch, int64_t chunk_rows,
                          bool exact, bool device_outputs);

// The step's own device arrays, appended to the governor's needs after the train stage's, in this
// order: the packed chunk, its input rows, the output gradient, the input gradient, and with the
// outputs on the device: every hidden output, the two input gradients, the chunk's source ids.
inline constexpr std::size_t kLayerwiseArrays = 8;
// Per layer l: the bytes of those arrays for `plan`'s largest chunk of l.
std::vector<std::size_t> layerwise_arrays(const models::GnnModel<float>& model, const LayerwisePlan& plan, std::size_t l);

class LayerwiseStep {
 public:
  // The loss of a last-layer chunk: its logits, the packed chunk (labels, loss rows and weights
  // in device memory), its index among the layer's chunks; writes d(loss)/d(logits).
  using Loss = std::function<void(const PackedBatchView& chunk, models::MatrixView<const float> logits,
                                  models::MatrixView<float> dlogits, std::size_t index)>;

  // `features` (the layer-0 rows, by global id) outlives the step.
  LayerwiseStep(models::GnnModel<float>& model, const graph::FeatureStore& features);

  // Accumulates the gradients of `batch` under `plan` (the caller zeroed them), with dropout keyed
  // by `key`; returns the bytes copied between host and device. Every loss row's weight is the
  // batch's (or 1 / its loss rows), so the chunks' losses add up to the batch's loss. `labels`:
  // what a packed chunk carries per target, by global id (InputPlacement::label_source).
  std::size_t run(const graph::MiniBatch& batch, const LayerwisePlan& plan, core::RngKey key,
                  std::span<const int32_t> labels, const Loss& loss);
  // Gives the device arrays back (the governor's trim).
  void release();

 private:
  struct Chunk;
  // Builds chunk [begin, end) of layer l, packs it and its input rows, and copies both to the device.
  // loss_weights: every loss row's weight (the last layer), or empty.
  Chunk stage(graph::BlockChunker& chunker, const graph::MiniBatch& batch, std::size_t l, int64_t begin, int64_t end,
              std::span<const float> loss_weights);
  // Adds the input gradient of `chunk` (on the device) into rows of `grad` [.. x in] (where the
  // outputs live).
  void add_input_gradient(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad);
  // Hidden layer l's outputs, where they live.
  models::MatrixView<float> outputs_of(std::size_t l);
  // Gradient buffer `which` (0 or 1, alternating by layer) as a zeroed [rows x cols] matrix.
  models::MatrixView<float> gradient(int which, int64_t rows, int64_t cols);

  models::GnnModel<float>& model_;
  const models::OpContext& ctx_;
  const core::Stream& stream_;
  const graph::FeatureStore& features_;
  std::span<const int32_t> labels_;
  std::size_t moved_ = 0;
  bool device_outputs_ = false;  // the running plan's
  struct Rows {
    std::size_t offset = 0;  // in outputs_dev_
    int64_t rows = 0, cols = 0;
  };
  std::vector<Rows> output_rows_;  // per hidden layer
  // Device (the model's context): one chunk at a time; with device_outputs also every hidden
  // layer's outputs, the two gradient buffers and the chunk's source ids.
  models::DeviceArray<std::byte> packed_;
  models::DeviceArray<float> x_, dy_, dx_;
  models::DeviceArray<float> outputs_dev_, grad_dev_[2];
  models::DeviceArray<graph::NodeId> sources_dev_;
  // Host (pinned on a GPU), grow-only across steps: a chunk on its way, and without
  // device_outputs every hidden layer's outputs and the two gradient buffers.
  core::Buffer<std::byte> packed_host_;
  core::Buffer<float> x_host_, dx_host_;
  core::Buffer<graph::NodeId> sources_host_;
  std::vector<core::Buffer<float>> outputs_;
  core::Buffer<float> grad_host_[2];
};

}  // namespace gnnpipe::pipeline::detail
