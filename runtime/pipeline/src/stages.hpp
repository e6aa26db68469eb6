#pragma once
// Stages: the facade both drivers of a training run call (sample, gather, govern, transfer, train,
// snapshot, evaluate). It composes the concerns, each owning its state:
//   InputPlacement  where features and labels live, and a batch's input rows (input_placement.hpp);
//   Evaluation      the evaluation twin, its snapshot and scores, the resident eval graph
//                   (evaluation.hpp);
//   BatchPath       staging and device slots, the memory governor, the train step, the resident
//                   batch (batch_path.hpp);
//   RunCounters     what the governor did and what the batches moved, per epoch (run_counters.hpp);
// and owns what they share: the copy stream. Its constructor runs the run's setup in order (probe,
// device slots, placements, evaluation's arrays, the governor). The pipelined mode calls each
// stage from one thread at a time per item (sample/gather concurrently for different items,
// govern/transfer/train serially in batch order); the sequential mode calls them in turn.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "augmentation.hpp"
#include "batch_path.hpp"
#include "evaluation.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "input_placement.hpp"
#include "memory_governor.hpp"
#include "run_counters.hpp"
#include "run_item.hpp"

namespace gnnpipe::pipeline::detail {

class Stages {
 public:
  // Builds the streams, the evaluation twin and the slots, then measures what is resident and
  // sets up the memory governor. The model's op context must have an allocator (the budget).
  explicit Stages(const TrainingSetup& s);

  const TrainingSetup& setup() const { return s_; }
  // Staging slots = batches in flight on the host (BatchPath::slots).
  int slots() const { return batch_.slots(); }
  // Device slots: batches on the device at once (memory::plan_device_slots from the budget and the
  // first batches' packed size; 1 for a run whose fixed batch may become resident).
  int device_slot_count() const { return batch_.device_slot_count(); }
  std::size_t staging_bytes() const { return batch_.staging_bytes(); }
  MemoryGovernor& governor() { return batch_.governor(); }
  Residency residency() const { return batch_.residency(); }
  // The plan's resident part (budget, resident memory by kind, evaluation bound).
  MemoryPlan resident_plan() const;

  // pipeline.resident (BatchPath::adopt_resident).
  bool adopt_resident(Item& item) const { return batch_.adopt_resident(item); }
  // The bytes `batch` takes packed (in a staging slot) under this run's feature placement.
  std::size_t packed_bytes(const graph::MiniBatch& batch) const { return placement_.layout_of(batch).total_bytes; }
  // Whether this run's batch may become resident (decided when epoch 1's is governed).
  bool may_keep_resident() const { return resident_candidate_; }

  // The batch path's stages (BatchPath says what each does).
  graph::MiniBatch sample(const Item& item, samplers::ParallelSampler& sampler) { return batch_.sample(item, sampler); }
  void gather(Item& item, graph::MiniBatch batch) { batch_.gather(item, std::move(batch)); }
  void govern(Item& item, samplers::ParallelSampler& sampler) { batch_.govern(item, sampler); }
  void transfer(const Item& item) { batch_.transfer(item); }
  void train(const Item& item) { batch_.train(item); }

  // On the train thread, before `next`'s step: its epoch as far as it trained (a stop request's
  // checkpoint). Waits for the train stream.
  PartialEpoch partial_epoch(const Item& next);

  // When the first epoch starts (after the setup: probe, placements, the evaluation graph): the
  // train stream's timeline starts here, so epoch 1's device time leaves the setup out.
  void start_timeline() { batch_.losses().start_timeline(); }
  // At an epoch's end, on the train thread: queue the copy of its losses (read later by epoch_loss()).
  void end_epoch_losses() { batch_.losses().end_epoch(); }
  // MH-Aug (augmentation.hpp), when on: before `epoch`'s first batch is sampled, its states; after
  // its last step (train thread), its uncertainties' snapshot; its chain's counters.
  void prepare_augment(int epoch) {
    if (augmentation_) augmentation_->prepare_epoch(epoch);
  }
  void end_epoch_augment(int epoch) {
    if (augmentation_) augmentation_->end_epoch(epoch);
  }
  // The chain's state for a checkpoint after `epoch` complete epochs (train thread).
  std::optional<AugmentCheckpoint> augment_checkpoint(int epoch) {
    if (!augmentation_) return std::nullopt;
    return augmentation_->checkpoint(epoch);
  }
  // Lets the chain go (a run that stops): a wait for a state ends with an error.
  void stop_augment() noexcept {
    if (augmentation_) augmentation_->stop();
  }
  std::optional<AugmentCounters> augment_counters(int epoch) const {
    if (!augmentation_) return std::nullopt;
    return augmentation_->counters(epoch);
  }
  // The epoch's mean loss (waits for its copy; any thread, once per end_epoch_losses()).
  double epoch_loss() { return batch_.losses().mean(); }
  // The last epoch_loss()'s epoch as the train stream's timeline saw it (seconds).
  double epoch_device_seconds() const { return batch_.losses().device_seconds(); }
  // What the governor did in `epoch` (complete once the epoch's last batch trained); also added
  // to the run's totals.
  MemoryCounters take_epoch_counters(int epoch) { return counters_.take_epoch_counters(epoch); }
  MemoryCounters total_counters() const { return counters_.total_counters(); }
  // What `epoch`'s batches moved (complete once its last batch trained); the run's totals.
  DataMovement take_epoch_movement(int epoch) { return counters_.take_epoch_movement(epoch); }
  DataMovement data_movement() const { return counters_.data_movement(); }

  // The evaluation (Evaluation says what each does); evaluate runs over the resident full batch
  // when the governor kept one for it.
  void snapshot() { evaluation_.snapshot(); }
  void evaluate(EpochResult& r) { evaluation_.evaluate(r, batch_.resident_for_evaluation()); }
  void restore_snapshot() { evaluation_.restore_snapshot(); }
  std::vector<float> snapshot_to_host() const { return evaluation_.snapshot_to_host(); }

  // Waits for the work queued on every stream.
  void drain();
  // The same after a stage failed: nothing may replace the first error, which names the stage and
  // batch. After a device fault every wait fails with the same sticky error; those are logged.
  void drain_after_failure() noexcept;

 private:
  Probe sample_probe() const;
  // The governor's setup for this run as it is now (what is resident), with the given packing and
  // evaluation's bound.
  GovernorSetup governor_setup(int64_t packed_feature_cols, bool gathers_on_device, std::size_t eval_bound) const;
  // The governor's prediction for the probe's batches (see MemoryGovernor::predict_unsplit).
  std::optional<std::size_t> predict_probe(const Probe& probe, int64_t packed_feature_cols, bool gathers_on_device,
                                           std::size_t eval_bound) const;

  const TrainingSetup& s_;
  core::Device device_;  // the model's op context's
  const bool resident_candidate_;  // pipeline.resident and a fixed single-batch sampler
  const models::OpContext& train_ctx_;  // the model's: its stream is the train stream
  const core::Stream& train_stream_;
  memory::CachingAllocator& allocator_;
  // The placed arrays and the device slots are copied (and freed) on it: declared before them,
  // so destroyed after them.
  core::Stream copy_stream_;
  RunCounters counters_;
  InputPlacement placement_;
  std::unique_ptr<Augmentation> augmentation_;  // augment on; its arrays are resident
  Evaluation evaluation_;  // before batch_: the setup allocates the twin first
  BatchPath batch_;
};

}  // namespace gnnpipe::pipeline::detail
