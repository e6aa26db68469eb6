#pragma once
// LayerwiseStep: the gradients of one optimizer step over a batch too large for the device as a
// whole (memory.policy layerwise, and what split falls back to when splitting cannot shrink a
// batch's trees: ROC, MLSys 2020; HongTu, SIGMOD 2024). The model runs one layer at a time over
// chunks of that layer's destination rows (graph::BlockChunker): a chunk's block and ids are
// packed on the host and copied to the device, and the layer runs there (GnnModel::forward_layer).
// The last layer's chunks compute the loss and run backward at once; every lower layer's chunks
// then recompute their forward (dropout masks are redrawn from the counter-based RNG by global
// node id, never stored) and run backward. Parameter gradients accumulate over the chunks; the
// caller runs one optimizer step. Exact: the same loss and gradients as the whole batch's step, up
// to the order of the sums over chunks.
//
// What outlives a chunk has a placement (LayerwisePlacement, the governor's choice: the least
// bytes moved that leaves chunks of a useful size):
// - the hidden layers' outputs and the input gradients (LayerOutputs):
//     kDevice: all of them on the device for the step; a chunk's rows are gathered there
//              (ops::copy_rows) and its input gradient added there (ops::add_rows);
//     kLayer:  the running layer's input rows and their gradient on the device (loaded whole once
//              per pass of that layer, the gradient sent back once), every hidden output and
//              gradient in host memory; a chunk's outputs and output gradient cross as
//              contiguous row ranges. The device holds one layer at a time;
//     kHost:   all in host memory (pinned on a GPU); a chunk's rows are gathered on the host and
//              copied in, its outputs and input gradient copied back;
// - layer 0's input rows (LayerInputs):
//     kFeatures: read from the feature matrix placed on the device (memory.features) by global id;
//     kDevice:   the batch's rows gathered once a step into a device array of the step's;
//     kHost:     gathered on the host for every chunk (on a dense graph, most of the graph a chunk).
// The device holds one chunk's arrays at a time beside those; plan_chunks sizes them (the memory
// governor's prediction) and counts the bytes a step moves between host and device.
// Chunks are built and packed a window at a time on every thread, the next window while the
// device runs this one (the host waits for the device only where it reads or refills what the
// device reads: host-gathered rows, host input gradients, a new layer). A chunk's block and ids
// cross on a copy stream of the step's into one of two device slots, so that on a GPU the copy of
// one chunk overlaps the compute of the one before.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"

namespace gnnpipe::pipeline::detail {

// Host memory of the step (pinned on a GPU), grown with 1/8 headroom and never shrunk.
template <class T>
T* grow(core::Buffer<T>& buffer, std::size_t n, core::Device device) {
  if (buffer.size() < n) {
    buffer = core::Buffer<T>();
    buffer = core::Buffer<T>(n + n / 8, core::MemoryKind::kStaging, device);
  }
  return buffer.data();
}

enum class LayerOutputs : uint8_t { kHost, kLayer, kDevice };
enum class LayerInputs : uint8_t { kHost, kDevice, kFeatures };
const char* to_string(LayerOutputs where);
const char* to_string(LayerInputs where);

struct LayerwisePlacement {
  LayerOutputs outputs = LayerOutputs::kHost;
  LayerInputs inputs = LayerInputs::kHost;
  bool features16 = false;  // kFeatures: the placed matrix holds fp16/bf16 rows (widened per chunk)
  bool operator==(const LayerwisePlacement&) const = default;
};

// The feature matrix placed on the device (InputPlacement), rows by global id.
struct PlacedFeatures {
  const std::byte* data = nullptr;
  int64_t rows = 0, cols = 0;
  graph::FeatureDType dtype = graph::FeatureDType::kFloat32;
};

// Whether a chunk of layer l gathers its input rows on the device (only their ids cross).
bool rows_gathered_on_device(const LayerwisePlacement& p, std::size_t l);
struct LayerwisePlan;
// Whether a chunk of layer l copies its sources' ids to the device for its gather: not where the
// packed chunk's input nodes (global ids) are what the gather reads.
bool uploads_ids(const LayerwisePlan& plan, std::size_t l);
// The positions [lo, hi) of `rows` (ascending) that lie in [first, last).
std::pair<std::size_t, std::size_t> rows_within(std::span<const int32_t> rows, int64_t first, int64_t last);

// Transform-once (LayerwisePlan::once: a layer with GnnModel::transforms_rows, GAT): a pass first
// runs the layer's row transform over all its input rows, in runs of its largest chunk's sources,
// into a layer-wide store; its chunks then gather the transformed rows (h and the per-head terms)
// instead of the input rows, and their backward scatters d(loss)/dh into the store, from which a
// last run over the rows forms dW and the input gradient. At degree 50 a chunk's sources are most
// of the graph: every chunk transforming its own would transform the graph once a chunk. The
// store lives beside the hidden outputs on the device where they do (LayerOutputs::kDevice: the
// plan's transformed_bytes, after them in the same array), else in host memory; a run of rows
// uses the arrays a chunk of as many sources uses (the layer's h, terms and dh; x, dx and ids).
//
// A batch's layer-wise plan: destinations per chunk, and the largest chunk of each layer.
struct LayerwisePlan {
  int64_t chunk_rows = 0;                  // destinations per chunk (a layer's last chunk may have fewer)
  std::vector<int64_t> chunks;             // per layer
  std::vector<models::BlockShape> largest; // per layer: the most destinations, sources and edges of a chunk
  std::vector<std::size_t> packed;         // per layer: a packed chunk's bytes at most
  std::vector<std::size_t> layer_inputs;   // per layer: its input rows' bytes, [sources x in] (kLayer's arrays)
  std::size_t loss_rows = 0;               // the most loss rows of a last-layer chunk
  std::size_t moved_bytes = 0;             // host <-> device bytes of one step (at most)
  bool exact = false;                      // largest counts a chunk's distinct sources (else a bound)
  LayerwisePlacement placement;
  std::vector<bool> once;                  // per layer: transforms its rows once a pass (above)
  bool once_at(std::size_t l) const { return l < once.size() && once[l]; }
  bool identity_inputs = false;            // the batch's input nodes are 0, 1, ... (local ids are global ids)
  std::size_t outputs_bytes = 0;           // every hidden layer's outputs
  std::size_t transformed_bytes = 0;       // kDevice: the widest transform-once layer's store (h, terms, dh)
  std::size_t gradient_bytes = 0;          // the widest input gradient of a layer above the first
  std::size_t inputs_bytes = 0;            // layer 0's input rows, [batch inputs x features] (LayerInputs::kDevice)
  int64_t total_chunks() const;
};

// The plan of `batch` in chunks of `chunk_rows` destinations. exact: every chunk's distinct
// sources counted (one pass over the batch's edges per distinct block); else bounded by the
// chunk's destinations plus its edges (O(chunks), nothing read per edge).
LayerwisePlan plan_chunks(const models::GnnModel<float>& model, const graph::MiniBatch& batch, int64_t chunk_rows,
                          bool exact, LayerwisePlacement placement);

// The step's own device arrays, appended to the governor's needs after the train stage's, in this
// order: the packed chunk, its input rows, the output gradient, the input gradient, the outputs
// (kDevice: every hidden output; kLayer: the layer's input rows), the two gradient buffers
// (kDevice; kLayer: the layer's input gradient in the first), the chunk's source ids, layer 0's
// input rows (LayerInputs::kDevice), a chunk's 16-bit feature rows (kFeatures, fp16/bf16), and
// the second slot's packed chunk and ids (the copy of one chunk overlaps the compute of the last).
inline constexpr std::size_t kLayerwiseArrays = 12;
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
  ~LayerwiseStep();
  LayerwiseStep(const LayerwiseStep&) = delete;
  LayerwiseStep& operator=(const LayerwiseStep&) = delete;

  // Accumulates the gradients of `batch` under `plan` (the caller zeroed them), with dropout keyed
  // by `key`; returns the bytes copied between host and device. Every loss row's weight is the
  // batch's (or 1 / its loss rows), so the chunks' losses add up to the batch's loss. `labels`:
  // what a packed chunk carries per target, by global id (InputPlacement::label_source).
  // `placed`: the device feature matrix (LayerInputs::kFeatures needs it).
  std::size_t run(const graph::MiniBatch& batch, const LayerwisePlan& plan, core::RngKey key,
                  std::span<const int32_t> labels, const Loss& loss, const PlacedFeatures& placed = {});
  // Gives the device arrays back (the governor's trim).
  void release();

 private:
  struct Prepared;
  struct Round;
  struct Chunkers;
  struct Chunk;
  // Builds and packs chunks first_chunk .. first_chunk + n - 1 of layer l (block b) into `round`
  // on every thread (each its own chunker), after the round's last copies completed.
  // loss_weights: every loss row's weight (the last layer), or empty. `transpose`: the chunks'
  // blocks carry their transpose (a backward pass; a forward pass's chunks have none to build or copy).
  void prepare(Round& round, const graph::Block& b, const graph::MiniBatch& batch, std::size_t l, int64_t first_chunk,
               std::size_t n, std::span<const float> loss_weights, bool transpose);
  // Copies a prepared chunk of layer l to the device and puts its input rows there.
  Chunk issue(const Prepared& p, std::size_t l);
  // Every chunk of layer l through `body(chunk, index)` in order, the next window prepared on the
  // host while the device runs this one; `backward`: a backward follows each chunk's forward.
  void run_pass(const graph::Block& b, const graph::MiniBatch& batch, std::size_t l, bool backward,
                std::span<const float> loss_weights, const std::function<void(const Chunk&, std::size_t)>& body);
  // Copies n ids (host memory that stays valid until the copy ran) to slot `slot`'s ids array, on
  // the copy stream.
  std::span<const graph::NodeId> upload_ids(const graph::NodeId* host, std::size_t n, int slot);
  // The device matrix a chunk of layer l gathers its input rows from by the batch's local ids, or
  // an empty view (gathered on the host, or from the placed features by global id).
  models::MatrixView<const float> rows_on_device(std::size_t l) const;
  // LayerInputs::kDevice: the batch's layer-0 rows into inputs_dev_, through pinned host memory.
  void load_inputs(const graph::MiniBatch& batch);
  // LayerOutputs::kLayer: layer l's input rows (the host outputs of l - 1) into layer_in_.
  void load_layer(std::size_t l);
  // Transform-once: layer l's row transform over all its input rows (block b's sources) into
  // h_host_ and a_host_; its backward from d(loss)/dh of every row (dh) into `dx` (the host
  // gradient of the layer below; none for layer 0).
  void transform_pass(const graph::MiniBatch& batch, std::size_t l, const graph::Block& b, core::RngKey key);
  // dx: the layer's input gradient [rows x in] (none for layer 0), in device memory (written in
  // place) or the host's (dx_on_device false: through dx_).
  void transform_backward_pass(const graph::MiniBatch& batch, std::size_t l, const graph::Block& b, core::RngKey key,
                               models::MatrixView<float> dx, bool dx_on_device);
  // A transform-once layer's store: its transformed rows h [rows x width] and terms [rows x heads],
  // and d(loss)/dh [rows x width]; on the device beside the outputs (kDevice), else host memory.
  struct Transformed {
    models::MatrixView<float> h, a, dh;
  };
  bool transformed_on_device() const { return outputs_on(LayerOutputs::kDevice); }
  Transformed transformed_store(std::size_t l, int64_t rows);
  // A transform-once chunk's d(loss)/dh of its sources, added into the store's.
  void add_transformed_gradient(const Chunk& chunk, models::MatrixView<const float> dh);
  // Rows of `dx` (on the device) added into rows chunk.sources of `grad` (host memory).
  void add_on_host(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad);
  // Layer l's input rows [first, first + n) on the device (layer 0's loaded rows, or copied in).
  models::MatrixView<const float> layer_rows(const graph::MiniBatch& batch, std::size_t l, int64_t first, int64_t n);
  // Global ids (host memory valid to the step's end) copied to a slot's ids array for the train
  // stream; the caller records read_[slot] after their last reader.
  std::pair<std::span<const graph::NodeId>, int> row_ids_on_device(std::span<const graph::NodeId> ids);
  // A transform-once chunk's sources' transformed rows (the batch's local ids `sources`, the same
  // on the device in `on_device` where the store is there), gathered from the store into the layer's.
  void fill_transformed(std::span<const graph::NodeId> sources, std::span<const graph::NodeId> on_device, std::size_t l);
  void forward_hidden(const graph::MiniBatch& batch, std::span<const graph::Block* const> blocks, core::RngKey key);
  void backward_all(const graph::MiniBatch& batch, std::span<const graph::Block* const> blocks, core::RngKey key,
                    std::span<const float> weights, const Loss& loss);
  // Adds the input gradient of `chunk` (on the device) into rows of `grad` [.. x in] (where the
  // outputs live; kLayer: the device accumulator).
  void add_input_gradient(const Chunk& chunk, models::MatrixView<const float> dx, models::MatrixView<float> grad);
  // Hidden layer l's outputs, where they live.
  models::MatrixView<float> outputs_of(std::size_t l);
  // Gradient buffer `which` (0 or 1, alternating by layer) as a [rows x cols] matrix where the
  // outputs live (zeroed unless kLayer, whose host buffer is written whole at the layer's end).
  models::MatrixView<float> gradient(int which, int64_t rows, int64_t cols);
  bool outputs_on(LayerOutputs where) const { return plan_->placement.outputs == where; }

  models::GnnModel<float>& model_;
  const models::OpContext& ctx_;
  const core::Stream& stream_;
  const graph::FeatureStore& features_;
  std::span<const int32_t> labels_;
  std::size_t moved_ = 0;
  const LayerwisePlan* plan_ = nullptr;  // the running plan (during run())
  // A window of prepared chunks holds at most this many packed bytes (or one chunk).
  static constexpr std::size_t kWindowBytes = std::size_t{128} << 20;
  std::vector<std::unique_ptr<Round>> rounds_;  // the two windows, alternating
  std::unique_ptr<Chunkers> chunkers_;
  // A chunk's block and ids cross on a stream of their own into one of two device slots (the
  // copy of chunk k + 1 overlaps the compute of chunk k): copied_ orders the train stream after a
  // slot's copy, read_ the next copy into a slot after its last reader. Declared before the slots,
  // whose memory is the copy stream's, so that it outlives them.
  core::Stream copy_stream_;
  core::Event synced_;
  core::Event copied_[2], read_[2];
  bool slot_read_[2] = {false, false};
  int next_slot_ = 0;
  PlacedFeatures placed_;
  struct Rows {
    std::size_t offset = 0;  // in outputs_dev_
    int64_t rows = 0, cols = 0;
  };
  std::vector<Rows> output_rows_;  // per hidden layer
  // Device (the model's context): one chunk at a time; kDevice: every hidden layer's outputs and
  // the two gradient buffers; kLayer: the running layer's input rows and input gradient; the
  // chunk's source ids; LayerInputs::kDevice: layer 0's rows; kFeatures: a chunk's 16-bit rows.
  models::DeviceArray<std::byte> packed_[2];  // the slots (the copy stream's memory)
  models::DeviceArray<float> x_, dy_, dx_;
  models::DeviceArray<float> outputs_dev_, grad_dev_[2];
  models::DeviceArray<float> layer_in_, layer_grad_, inputs_dev_;
  models::DeviceArray<uint16_t> rows16_;
  models::DeviceArray<graph::NodeId> sources_dev_[2];
  models::MatrixView<const float> layer_in_view_{}, inputs_view_{};
  // Host (pinned on a GPU), grow-only across steps: a chunk's rows gathered on the host and its
  // input gradient on the way back, and unless kDevice every hidden layer's outputs and the two
  // gradient buffers (the packed chunks are in rounds_).
  core::Buffer<float> x_host_, dx_host_;
  std::vector<core::Buffer<float>> outputs_;
  core::Buffer<float> grad_host_[2];
  // Transform-once: a layer's transformed rows (h, the per-head terms) and d(loss)/dh, all rows.
  core::Buffer<float> h_host_, a_host_, dh_host_;
  Transformed transformed_;             // the running transform-once layer's store
  std::size_t transformed_offset_ = 0;  // kDevice: where it begins in outputs_dev_ (floats)
  core::Buffer<graph::NodeId> ids_host_[2];  // a run of rows' ids on their way to a slot
};

}  // namespace gnnpipe::pipeline::detail
