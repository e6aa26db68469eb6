#pragma once
// BatchPath: the stages one batch goes through (sample, gather, govern, transfer, train) and the
// state they own: the staging slots (host) and device slots, the train stage's arrays and the
// epoch's losses, the memory governor, and the run's resident batch (pipeline.resident). The
// pipelined mode calls each stage from one thread at a time per item (sample/gather concurrently
// for different items, govern/transfer/train serially in batch order); the sequential mode calls
// them in turn.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "augmentation.hpp"
#include "augmented_step.hpp"
#include "epoch_losses.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/staging_pool.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "input_placement.hpp"
#include "layerwise_step.hpp"
#include "memory_governor.hpp"
#include "run_counters.hpp"
#include "run_item.hpp"

namespace gnnpipe::pipeline::detail {

class BatchPath {
 public:
  // `copy_stream` (the device slots' stream) outlives this; `placement` packs batches and makes
  // their input rows. The device slots are planned once the first batches were probed.
  BatchPath(const TrainingSetup& s, memory::CachingAllocator& allocator, const core::Stream& copy_stream,
            RunCounters& counters, const InputPlacement& placement, bool resident_candidate,
            Augmentation* augmentation = nullptr, bool fixed_input = false);

  // Device slots = batches on the device at once: memory::plan_device_slots from the budget and
  // `largest_packed` (the probed batches' most, packed with every feature row); 1 for a run whose
  // fixed batch may become resident.
  void plan_device_slots(std::size_t largest_packed);
  // The governor, set up once what stays resident for the run is placed. `whole_eval_bound`:
  // evaluation over a kept full-graph batch in one piece (Residency), when that may happen.
  void start_governing(const GovernorSetup& setup, std::optional<std::size_t> whole_eval_bound);

  // Staging slots = batches in flight on the host: pipeline.staging_slots, or 1 for a run whose
  // fixed batch may become resident (nothing else would use a second slot, and with one the next
  // epoch's batch reaches sample only after epoch 1's was governed, when residency is decided).
  int slots() const { return staging_.size(); }
  int device_slot_count() const { return static_cast<int>(device_slots_.size()); }
  std::size_t staging_bytes() const { return staging_.bytes(); }
  MemoryGovernor& governor() { return *governor_; }
  const MemoryGovernor& governor() const { return *governor_; }
  EpochLosses& losses() { return losses_; }
  const EpochLosses& losses() const { return losses_; }

  // pipeline.resident: once epoch 1's fixed batch was admitted unsplit, a later epoch's item takes
  // its layout from it and is marked resident (true): its sample, gather, govern and transfer are
  // skipped, its train step reads the kept device copy. Any thread, before sample.
  bool adopt_resident(Item& item) const;
  bool has_resident() const { return resident_.load(std::memory_order_acquire); }
  // What the governor is told about the next batch's residency (MemoryGovernor::admit): the plan
  // asks the same for epoch 1, so it predicts the peak of a kept batch evaluated in one piece.
  Residency residency() const {
    return {.candidate = resident_candidate_ && !has_resident(), .whole_eval_bound = whole_eval_bound_};
  }
  // The kept batch when evaluation runs over it in one piece (the governor's whole_eval), else
  // nothing; its device copy is device slot 0, and the input rows its train step kept.
  std::optional<WholeGraphBatch> resident_for_evaluation() const;

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

 private:
  void fault(Stage stage, const Item& item) const {
    if (s_.fault) s_.fault(stage, item.epoch, item.spec.index);
  }
  // The stages' bodies, one attempt each.
  void govern_once(Item& item, samplers::ParallelSampler& sampler);
  void transfer_once(const Item& item);
  // Packs a split batch's parts into its staging slot (or leaves them to the train stage).
  void pack_parts(Item& item, std::span<const graph::MiniBatch> parts);
  // Records the batch the governor kept resident (epoch 1's), for adopt_resident.
  void keep_resident(Item& item);
  // A step's gradients (every part), before the optimizer: returns whether the governor's
  // split-and-retry ran (an OutOfBudget inside the step).
  bool compute_gradients(const Item& item, double* loss);
  // Data-parallel (TrainingSetup::collective): the ranks' gradients, the batch's loss and its loss
  // rows summed over the ranks, before the optimizer's step (the train stream drained first).
  void sum_over_ranks(const Item& item);
  // Gives the model's and the train stage's grow-only arrays back (not the epoch's loss slots).
  void release_train_arrays();
  // Packs `part` into part_staging_ once the train stream finished reading it; returns the bytes.
  const std::byte* pack_part(const graph::MiniBatch& part, const BatchLayout& layout);
  // Grows a device slot while the train stream owns it (split and retried steps).
  void grow_slot_from_train(models::DeviceArray<std::byte>& slot, std::size_t bytes);
  // The steps of one optimizer step over n parts: zero the gradients, run each part (forward,
  // loss into its slot, backward), then add the parts' losses into the batch's loss slot.
  void begin_step(std::size_t parts);
  void run_part(const Item& item, const BatchLayout& layout, std::byte* base, std::size_t part, std::size_t parts,
                double* loss);
  void end_step(std::size_t parts, double* loss);
  // The loss of `logits` over the packed batch's loss rows into *target, its gradient into dlogits.
  void loss_of(const PackedBatchView& view, models::MatrixView<const float> logits, models::MatrixView<float> dlogits,
               double* target);
  // A layer-wise admission's step (MemoryAction::kLayerwise): the gradients of its batch, chunk by
  // chunk, with every last-layer chunk's loss in a slot of its own.
  void run_layerwise(const Item& item, double* loss);
  static bool layerwise(const Item& item) { return item.admission != nullptr && item.admission->layerwise.has_value(); }
  // The step of `item` ran out of budget: split its parts further and run them one at a time
  // through the device slot; throws the last OutOfBudget when even single-row parts do not fit.
  void retry(const Item& item, double* loss);
  // MH-Aug: an OutOfBudget for a batch the governor would have to split, cut or redraw (its views
  // are not), naming the batch and what to change.
  [[noreturn]] void refuse_augmented(const Item& item, const std::string& why) const;

  const TrainingSetup& s_;
  core::Device device_;  // the model's op context's
  memory::CachingAllocator& allocator_;
  const core::Stream& copy_stream_;
  const models::OpContext& train_ctx_;  // the model's: its stream is the train stream
  const core::Stream& train_stream_;
  RunCounters& counters_;
  const InputPlacement& placement_;
  const bool resident_candidate_;  // pipeline.resident and a fixed single-batch sampler
  const bool fixed_input_;  // every batch has the same input rows (one process, a fixed single batch)
  memory::StagingPool staging_;
  // One per device slot: a batch on the device. Their frees are ordered on the copy stream, which
  // outlives them.
  std::vector<models::DeviceArray<std::byte>> device_slots_;
  std::vector<core::Event> copied_, released_;  // per device slot
  core::Event train_to_copy_, copy_to_train_;  // grow_slot_from_train's hand-offs
  models::DeviceArray<float> dlogits_;
  models::DeviceArray<double> loss_scratch_;
  models::DeviceArray<double> part_losses_, ones_;  // a split step's per-part losses and their sum's ones
  models::DeviceArray<uint8_t> target_rows_;  // multi-label: the gathered targets of a step
  EpochLosses losses_;
  // Pinned on a GPU: one part at a time, packed by the train stage (a retried step, or a split
  // batch whose micro-batches were not packed ahead).
  core::Buffer<std::byte> part_staging_;
  InputScratch gathered_;  // the train stream's input rows
  LayerwiseStep layerwise_;  // layer-wise admissions' steps
  Augmentation* augmentation_;  // MH-Aug (null: off): views at sample, uncertainties at train
  AugmentedStep augmented_;     // its steps
  std::optional<MemoryGovernor> governor_;
  std::optional<std::size_t> whole_eval_bound_;  // see start_governing
  // The batches (by the governor's key) that ran layer-wise: gather leaves them unpacked (the
  // layer-wise step reads the sampled batch, never the staging slot), and govern packs one that is
  // then admitted otherwise. Written by govern, read by gather's threads.
  bool went_layerwise(const graph::MiniBatch& batch) const;
  static constexpr std::size_t kLayerwiseKeys = 4096;
  mutable std::mutex layerwise_keys_mutex_;
  std::set<MemoryGovernor::BatchKey> layerwise_keys_;
  // The resident batch: written once by govern (epoch 1) before resident_ is set (release); read
  // by adopt_resident and the evaluation after they saw it set (acquire). Its device copy is in
  // device slot 0, the run's only one, which no other batch uses then.
  std::atomic<bool> resident_{false};
  std::vector<BatchLayout> resident_layouts_;
  std::size_t resident_bytes_ = 0, resident_loss_rows_ = 0;
  std::shared_ptr<const Admission> resident_admission_;
  bool resident_eval_ = false;  // evaluate over it (whole_graph_logits), written with the record
};

}  // namespace gnnpipe::pipeline::detail
