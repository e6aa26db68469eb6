#pragma once
// InputPlacement: where a batch's inputs live for the run (memory.features): the feature matrix on
// the host (packed into each batch), on the device (batches carry node ids), or its most sampled
// rows in a device cache (batches carry the missed rows); the multi-label 0/1 matrix on the device;
// and the float32 input rows of a packed batch on a stream (input_rows). Decided once before the
// first epoch, read-only afterwards (any stage's thread).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/host_array.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "layerwise_step.hpp"

namespace gnnpipe::pipeline::detail {

// Epoch 1's first batches (those with loss rows), sampled to plan before the run.
struct Probe {
  std::vector<graph::MiniBatch> batches;
  int64_t per_epoch = 0;
};

// A stream's arrays for input_rows: the float32 rows, and the 16-bit rows before widening.
// `resident`: `rows` hold the resident batch's input rows, made by its first step and kept for
// the run (set on the train thread before the step's end; the evaluation reads them after the
// epoch's snapshot, which follows that step).
struct InputScratch {
  models::DeviceArray<float> rows;
  models::DeviceArray<uint16_t> rows16;
  std::atomic<bool> resident{false};
};

// A whole-graph batch on the device (every node a target, in id order) that evaluation runs over
// in one piece: its layout, its bytes, and the input rows a train step kept for it (null: none).
struct WholeGraphBatch {
  const BatchLayout* layout = nullptr;
  const std::byte* base = nullptr;
  const InputScratch* kept_rows = nullptr;
};

class InputPlacement {
 public:
  // The governor's prediction for the probe's batches packed this way (unsplit, beside what is
  // resident now): the most the run would hold, nothing when one does not fit (Stages asks it).
  using PredictProbe = std::function<std::optional<std::size_t>(int64_t packed_cols, bool gathers_on_device)>;

  // `copy_stream`: what the placed arrays are copied and freed on (outlives this). `fixed_batch`:
  // the sampler gives one batch an epoch, the same nodes every epoch (resident or not).
  InputPlacement(const TrainingSetup& s, memory::CachingAllocator& allocator, const core::Stream& copy_stream,
                 bool resident_candidate, bool fixed_batch);

  // memory.features (see place_features in input_placement.cpp): `eval_bound` is evaluation's
  // arrays at most, `predict` the governor's prediction for the probe's batches.
  void place_features(const Probe& probe, std::size_t eval_bound, const PredictProbe& predict);
  // Multi-label targets: the 0/1 matrix on the device for the run (see input_placement.cpp).
  void place_labels();

  // Batches are packed with feature_cols 0 when the matrix is on the device.
  int64_t packed_cols() const { return features_on_device_ ? 0 : s_.data.features.cols(); }
  bool features_on_device() const { return features_on_device_; }
  // The matrix on the device, rows by global id (null data: not placed there).
  PlacedFeatures placed_features() const {
    if (!features_on_device_) return {};
    return {device_store_, device_store_rows_, s_.data.features.cols(), s_.data.features.dtype()};
  }
  // Whether the train stage assembles a part's rows into an array of its own (device or cache).
  bool gathers_on_device() const { return features_on_device_ || !cache_slot_of_.empty(); }
  // What pack_batch writes per target: its class (single-label) or its node id (multi-label).
  std::span<const int32_t> label_source() const;
  // The resident 0/1 label matrix of a multi-label run (null: single-label).
  const uint8_t* label_matrix() const { return label_matrix_; }

  // `batch`'s packed layout under this placement, and packing it there (host gather).
  BatchLayout layout_of(const graph::MiniBatch& batch) const {
    return BatchLayout::of(batch, packed_cols(), cache_slot_of_, s_.data.features.dtype());
  }
  void pack(const graph::MiniBatch& batch, const BatchLayout& layout, std::byte* dst) const {
    pack_batch(batch, s_.data.features, label_source(), layout, dst, cache_slot_of_);
  }
  // The rows a train step's input gathers on the device: a cache's hits, or every row of the device
  // matrix but a full batch's (the matrix itself).
  uint64_t device_gathered_bytes(const BatchLayout& layout) const {
    const int64_t rows = layout.cached ? layout.cached_rows : features_on_device_ && !layout.identity_rows ? layout.feature_rows : 0;
    return static_cast<uint64_t>(rows) * s_.data.features.bytes_per_row();
  }

  // A part's float32 input rows. `resident` (the resident batch): rows it has to make (widened
  // from 16 bits, or assembled from a cache) are made once and kept in scratch.rows: a full batch
  // of fp16 features widened every epoch took twice the float32 run's epoch.
  models::MatrixView<const float> input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                             const models::OpContext& ctx, InputScratch& scratch, bool resident = false) const;

  // The plan's feature placement (features, cache rows and rank, device bytes).
  void describe(MemoryPlan& p) const;

 private:
  models::MatrixView<const float> make_input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                  const models::OpContext& ctx, InputScratch& scratch) const;
  template <class T>
  void assemble_rows(const BatchLayout& layout, const PackedBatchView& view, const models::OpContext& ctx,
                     const T* carried, models::MatrixView<T> out) const;
  void build_cache(int64_t rows);
  // memory.cache_rank presample: how often each node is an input row of the batches of the first
  // cache_presample_epochs epochs.
  std::vector<int64_t> presampled_appearances() const;

  const TrainingSetup& s_;
  core::Device device_;
  memory::CachingAllocator& allocator_;
  const core::Stream& copy_stream_;
  const bool resident_candidate_;  // pipeline.resident and a fixed single-batch sampler
  // One batch an epoch with the same nodes every epoch, resident or not (an augmented full batch, a
  // rank's share of one, pipeline.resident off).
  const bool fixed_batch_;
  // Device-resident features, in the store's type: the matrix (a copy on a GPU; the host store
  // itself on the CPU backend, whose budget is charged for it instead).
  bool features_on_device_ = false;
  models::DeviceArray<std::byte> device_features_;
  memory::BudgetCharge features_charge_;
  const std::byte* device_store_ = nullptr;
  int64_t device_store_rows_ = 0;
  // Multi-label runs: the resident 0/1 label matrix (place_labels) and the node ids packed as labels.
  models::DeviceArray<uint8_t> device_labels_;
  memory::BudgetCharge labels_charge_;
  const uint8_t* label_matrix_ = nullptr;
  graph::HostArray<int32_t> node_ids_;
  // memory.features cache: each node's cache row or -1 (host; empty without a cache) and the cache.
  std::vector<int32_t> cache_slot_of_;
  models::DeviceArray<std::byte> cache_;
  const std::byte* cache_store_ = nullptr;
  int64_t cache_rows_ = 0;
};

}  // namespace gnnpipe::pipeline::detail
