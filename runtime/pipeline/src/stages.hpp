#pragma once
// Stages: the stage functions both modes of a training run call (sample, gather, govern, transfer,
// train, snapshot, evaluate), and the state they share: staging and device slots, the copy, train
// and eval streams, the evaluation twin, the memory governor and its counters. The pipelined mode
// calls each stage from one thread at a time per item (sample/gather concurrently for different
// items, govern/transfer/train serially in batch order); the sequential mode calls them in turn.
#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "epoch_losses.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/staging_pool.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "memory_governor.hpp"
#include "run_item.hpp"

namespace gnnpipe::pipeline::detail {

class Stages {
 public:
  // Builds the streams, the evaluation twin and the slots, then measures what is resident and
  // sets up the memory governor. The model's op context must have an allocator (the budget).
  explicit Stages(const TrainingSetup& s);


  const TrainingSetup& setup() const { return s_; }
  // Staging slots = batches in flight on the host: pipeline.staging_slots, or 1 for a run whose
  // fixed batch may become resident (nothing else would use a second slot, and with one the next
  // epoch's batch reaches sample only after epoch 1's was governed, when residency is decided).
  int slots() const { return staging_.size(); }
  // Device slots: batches on the device at once (memory::plan_device_slots from the budget and the
  // first batches' packed size; 1 for a run whose fixed batch may become resident).
  int device_slot_count() const { return static_cast<int>(device_slots_.size()); }
  std::size_t staging_bytes() const { return staging_.bytes(); }
  MemoryGovernor& governor() { return *governor_; }
  // The plan's resident part (budget, resident memory by kind, evaluation bound).
  MemoryPlan resident_plan() const;

  // pipeline.resident: once epoch 1's fixed batch was admitted unsplit, a later epoch's item takes
  // its layout from it and is marked resident (true): its sample, gather, govern and transfer are
  // skipped, its train step reads the kept device copy. Any thread, before sample.
  bool adopt_resident(Item& item) const;
  bool has_resident() const { return resident_.load(std::memory_order_acquire); }
  // The bytes `batch` takes packed (in a staging slot) under this run's feature placement.
  std::size_t packed_bytes(const graph::MiniBatch& batch) const {
    return BatchLayout::of(batch, packed_cols(), cache_slot_of_, s_.data.features.dtype()).total_bytes;
  }
  // Whether this run's batch may become resident (decided when epoch 1's is governed).
  bool may_keep_resident() const { return resident_candidate_; }

  // Samples the batch.
  graph::MiniBatch sample(const Item& item, samplers::ParallelSampler& sampler);
  // Gathers its features and packs it into its staging slot; the item keeps the batch for govern.
  void gather(Item& item, graph::MiniBatch batch);
  // The memory governor's decision for the batch (before the copy): split / resampled / cut
  // batches are packed again into the staging slot. `sampler` draws replacements (resample).
  void govern(Item& item, samplers::ParallelSampler& sampler);
  // Queues the copy of the staging slot into the device slot on the copy stream (after the last
  // train step that read that device slot) and waits until it completed, so the staging slot can
  // go back. A split batch is not copied here (see train) and keeps its staging slot.
  void transfer(const Item& item);
  // Queues one optimizer step over the batch in the device slot, or over its micro-batches, each
  // copied from the staging slot into the device slot on the train stream in turn (gradients
  // accumulated; its loss goes to the epoch's losses); for those the staging slot can go back
  // when this returns (the host waited for the copies). A step that runs out of budget anyway is
  // split further and run again (counted as retried); nothing is lost.
  void train(const Item& item);

  // On the train thread, before `next`'s step: its epoch as far as it trained (a stop request's
  // checkpoint). Waits for the train stream.
  PartialEpoch partial_epoch(const Item& next);

  // When the first epoch starts (after the setup: probe, placements, the evaluation graph): the
  // train stream's timeline starts here, so epoch 1's device time leaves the setup out.
  void start_timeline() { losses_.start_timeline(); }
  // At an epoch's end, on the train thread: queue the copy of its losses (read later by epoch_loss()).
  void end_epoch_losses() { losses_.end_epoch(); }
  // The epoch's mean loss (waits for its copy; any thread, once per end_epoch_losses()).
  double epoch_loss() { return losses_.mean(); }
  // The last epoch_loss()'s epoch as the train stream's timeline saw it (seconds).
  double epoch_device_seconds() const { return losses_.device_seconds(); }
  // What the governor did in `epoch` (complete once the epoch's last batch trained); also added
  // to the run's totals.
  MemoryCounters take_epoch_counters(int epoch);
  MemoryCounters total_counters() const;
  // What `epoch`'s batches moved (complete once its last batch trained); the run's totals.
  DataMovement take_epoch_movement(int epoch);
  DataMovement data_movement() const;

  // At an epoch's end, on the train thread: the eval stream waits for the epoch's last step,
  // copies the parameters into the evaluation twin, and the train stream waits for that copy
  // before its next step. (On the CPU backend the copy runs inline here.)
  void snapshot();
  // Layer-wise full-neighbor inference of the snapshot; fills the accuracies of `r`.
  void evaluate(EpochResult& r);
  // Early stop: put the snapshot of the stopping epoch back into the model (the pipelined run may
  // already have stepped into the next epoch).
  void restore_snapshot();
  // The snapshot's parameters (the evaluation twin's, as of the last snapshot()) on the host;
  // evaluation thread, after evaluate().
  std::vector<float> snapshot_to_host() const { return eval_model_.params().values_to_host(eval_stream_); }

  // Waits for the work queued on every stream.
  void drain();
  // The same after a stage failed: nothing may replace the first error, which names the stage and
  // batch. After a device fault every wait fails with the same sticky error; those are logged.
  void drain_after_failure() noexcept;

 private:
  void place_labels();
  // What pack_batch writes per target: its class (single-label) or its node id (multi-label).
  std::span<const int32_t> label_source() const;
  void fault(Stage stage, const Item& item) const {
    if (s_.fault) s_.fault(stage, item.epoch, item.spec.index);
  }
  // Runs fn(attempt) for attempt 0, 1, ...: after an error that running it again may not repeat
  // (may_succeed_again), the error is logged and counted (note_retry) and fn runs again, at most
  // pipeline.stage_retries times; any other error, or the last, goes on. fn must leave nothing a
  // next attempt depends on half done (each stage's body below says how it keeps to that).
  template <class Fn>
  auto retrying(Stage stage, int epoch, int64_t batch, Fn&& fn);
  // Logs a retried error; counts it in `epoch`'s counters, except kEval's (evaluate() adds those
  // to its epoch's result, whose counters were taken before it ran).
  void note_retry(Stage stage, int epoch, int64_t batch, int attempt);
  // The stages' bodies, one attempt each.
  void govern_once(Item& item, samplers::ParallelSampler& sampler);
  void transfer_once(const Item& item);
  // A step's gradients (every part), before the optimizer: returns whether the governor's
  // split-and-retry ran (an OutOfBudget inside the step).
  bool compute_gradients(const Item& item, double* loss);
  void evaluate_once(EpochResult& r);
  void pack_parts(Item& item, std::span<const graph::MiniBatch> parts);
  // Grows a device slot while the train stream owns it (split and retried steps).
  // Gives the model's and the train stage's grow-only arrays back (not the epoch's loss slots).
  void release_train_arrays();
  // Packs `part` into part_staging_ once the train stream finished reading it; returns the bytes.
  const std::byte* pack_part(const graph::MiniBatch& part, const BatchLayout& layout);
  void grow_slot_from_train(models::DeviceArray<std::byte>& slot, std::size_t bytes);
  // The steps of one optimizer step over n parts: zero the gradients, run each part (forward,
  // loss into its slot, backward), then add the parts' losses into the batch's loss slot.
  void begin_step(std::size_t parts);
  void run_part(const Item& item, const BatchLayout& layout, std::byte* base, std::size_t part, std::size_t parts,
                double* loss);
  // memory.features (see place_features in stages.cpp); batches are packed with feature_cols 0
  // when the matrix is on the device.
  // Epoch 1's first batches (those with loss rows), sampled to plan before the run.
  struct Probe {
    std::vector<graph::MiniBatch> batches;
    int64_t per_epoch = 0;
  };
  Probe sample_probe() const;
  // The governor's setup for this run as it is now (what is resident, evaluation's bound).
  GovernorSetup governor_setup(int64_t packed_feature_cols, bool gathers_on_device) const;
  void place_features(const Probe& probe);
  // pipeline.eval_graph layerwise_device, or auto on a GPU where the block did not stay: keeps
  // evaluation's layer outputs on the device when they fit beside what is resident (auto: and the
  // probed batches still fit unsplit beside them).
  void choose_eval_outputs(const Probe& probe);
  int64_t packed_cols() const { return features_on_device_ ? 0 : s_.data.features.cols(); }
  void build_cache(int64_t rows);
  // memory.cache_rank presample: how often each node is an input row of the batches of the first
  // cache_presample_epochs epochs.
  std::vector<int64_t> presampled_appearances() const;
  // Adds to what `epoch`'s batches moved (any stage's thread).
  void moved(int64_t epoch, const DataMovement& d);
  // A packed layout's feature rows: gathered on the host, and (a cache) how many the cache held.
  void count_rows(int64_t epoch, const BatchLayout& layout) {
    const auto misses = static_cast<uint64_t>(layout.cached ? layout.feature_rows - layout.cached_rows : 0);
    moved(epoch, {.host_gathered_bytes = layout.features.bytes,
                  .cache_hit_rows = static_cast<uint64_t>(layout.cached_rows),
                  .cache_miss_rows = misses});
  }
  // The rows a train step's input gathers on the device: a cache's hits, or every row of the device
  // matrix but a full batch's (the matrix itself).
  uint64_t device_gathered_bytes(const BatchLayout& layout) const {
    const int64_t rows = layout.cached ? layout.cached_rows : features_on_device_ && !layout.identity_rows ? layout.feature_rows : 0;
    return static_cast<uint64_t>(rows) * s_.data.features.bytes_per_row();
  }
  // A stream's arrays for input_rows: the float32 rows, and the 16-bit rows before widening.
  // `resident`: `rows` hold the resident batch's input rows, made by its first step and kept for
  // the run (set on the train thread before the step's end; the evaluation reads them after the
  // epoch's snapshot, which follows that step).
  struct InputScratch {
    models::DeviceArray<float> rows;
    models::DeviceArray<uint16_t> rows16;
    std::atomic<bool> resident{false};
  };
  // A part's float32 input rows. `resident` (the resident batch): rows it has to make (widened
  // from 16 bits, or assembled from a cache) are made once and kept in scratch.rows: a full batch
  // of fp16 features widened every epoch took twice the float32 run's epoch.
  models::MatrixView<const float> input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                             const models::OpContext& ctx, InputScratch& scratch, bool resident = false);
  models::MatrixView<const float> make_input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                  const models::OpContext& ctx, InputScratch& scratch);
  template <class T>
  void assemble_rows(const BatchLayout& layout, const PackedBatchView& view, const models::OpContext& ctx,
                     const T* carried, models::MatrixView<T> out);
  void end_step(std::size_t parts, double* loss);
  // The step of `item` ran out of budget: split its parts further and run them one at a time
  // through the device slot; throws the last OutOfBudget when even single-row parts do not fit.
  void retry(const Item& item, double* loss);
  std::size_t evaluation_bound() const;
  std::size_t resident_evaluation_bound() const;
  // Evaluation over the resident full-graph batch (Sampler::full_graph_batch), when it fit.
  bool evaluates_resident() const { return has_resident() && resident_eval_; }
  // An eval-mode forward of a packed whole-graph batch already on the device (every node a
  // target, in id order), one layer at a time on the eval stream; the logits on the host.
  models::MatrixView<const float> whole_graph_logits(const BatchLayout& layout, const std::byte* base);
  // pipeline.eval_graph (see PipelineOptions): packs the whole graph's full-neighbor block and
  // copies it to the device once when it is to be resident.
  void place_eval_graph();
  void keep_resident(Item& item, bool whole_eval);
  void count(int epoch, const MemoryCounters& c);

  const TrainingSetup& s_;
  core::Device device_;  // the model's op context's
  const bool resident_candidate_;  // pipeline.resident and a fixed single-batch sampler
  memory::StagingPool staging_;
  core::Stream copy_stream_;
  // One per device slot: a batch on the device. After copy_stream_, which their frees are ordered
  // on, so they are destroyed before it.
  std::vector<models::DeviceArray<std::byte>> device_slots_;
  const models::OpContext& train_ctx_;  // the model's: its stream is the train stream
  const core::Stream& train_stream_;
  memory::CachingAllocator& allocator_;
  core::Stream eval_stream_;
  models::OpContext eval_ctx_;  // the evaluation twin's ops, on the eval stream
  std::vector<core::Event> copied_, released_;  // per device slot
  core::Event epoch_end_, snapshot_done_;
  core::Event train_to_copy_, copy_to_train_;  // grow_slot_from_train's hand-offs
  models::GnnModel<float> eval_model_;
  std::vector<float> embedding_host_;  // layerwise_input()'s copy of a learned embedding on a GPU
  InferenceWorkspace eval_workspace_;  // pinned and device buffers of every evaluation of the run
  models::DeviceArray<float> dlogits_;
  models::DeviceArray<double> loss_scratch_;
  models::DeviceArray<double> part_losses_, ones_;  // a split step's per-part losses and their sum's ones
  detail::EpochLosses losses_;
  // Pinned on a GPU: one part at a time, packed by the train stage (a retried step, or a split
  // batch whose micro-batches were not packed ahead).
  core::Buffer<std::byte> part_staging_;
  // Device-resident features, in the store's type: the matrix (a copy on a GPU; the host store
  // itself on the CPU backend, whose budget is charged for it instead), and the train and eval
  // streams' input arrays.
  bool features_on_device_ = false;
  models::DeviceArray<std::byte> device_features_;
  // Multi-label runs: the resident 0/1 label matrix (place_labels), the node ids packed as labels,
  // and the gathered targets of a step.
  models::DeviceArray<uint8_t> device_labels_, target_rows_;
  memory::BudgetCharge labels_charge_;
  const uint8_t* label_matrix_ = nullptr;
  graph::HostArray<int32_t> node_ids_;
  memory::BudgetCharge features_charge_;
  const std::byte* device_store_ = nullptr;
  int64_t device_store_rows_ = 0;
  InputScratch gathered_, eval_gathered_;
  // memory.features cache: each node's cache row or -1 (host; empty without a cache) and the cache.
  std::vector<int32_t> cache_slot_of_;
  models::DeviceArray<std::byte> cache_;
  const std::byte* cache_store_ = nullptr;
  int64_t cache_rows_ = 0;
  // pipeline.eval_graph resident: the whole graph's inference block, packed (eval_graph_layout_),
  // on the device for the run; sampled runs evaluate over it (whole_graph_logits).
  bool eval_graph_resident_ = false;
  // pipeline.eval_graph layerwise_device: layer-wise evaluation with every layer's outputs on the
  // device (choose_eval_outputs).
  bool eval_outputs_on_device_ = false;
  models::DeviceArray<std::byte> eval_graph_;
  BatchLayout eval_graph_layout_;
  std::optional<MemoryGovernor> governor_;
  std::map<int, DataMovement> epoch_moved_;  // under counters_mutex_, as the counters
  DataMovement total_moved_;
  // The resident batch: written once by govern (epoch 1) before resident_ is set (release); read
  // by adopt_resident and the evaluation after they saw it set (acquire). Its device copy is in
  // device slot 0, the run's only one, which no other batch uses then.
  std::atomic<bool> resident_{false};
  std::vector<BatchLayout> resident_layouts_;
  std::size_t resident_bytes_ = 0, resident_loss_rows_ = 0;
  std::shared_ptr<const Admission> resident_admission_;
  bool resident_eval_ = false;  // evaluate over it (whole_graph_logits), written with the record
  models::DeviceArray<float> eval_activations_[2];  // whole_graph_logits' alternating layer outputs
  core::Buffer<float> eval_logits_;  // host (pinned on a GPU) logits of a resident evaluation
  mutable std::mutex counters_mutex_;
  std::map<int, MemoryCounters> epoch_counters_;
  MemoryCounters total_counters_;
};

}  // namespace gnnpipe::pipeline::detail
