#pragma once
// A training run through the stages of docs/DESIGN.md §3, in either mode:
//   pipelined   a oneTBB flow graph: epoch plans -> join with a free staging slot (the tokens) ->
//               sample + gather into the slot (pipeline.sampler_threads at once) -> sequencer
//               (batch order) -> govern (the memory governor: fits, or split / resample / cut,
//               before the copy) -> join with a free device slot -> transfer on a dedicated thread
//               (copy stream, event; the staging slot goes back once the copy completed) -> train on
//               a dedicated thread (the train stream waits on the copy's event). At each epoch's end
//               the train thread snapshots the parameters for the evaluation thread, which runs
//               layer-wise full-neighbor inference while the next epoch trains; epoch results are
//               reported in order. Nothing polls or sleeps; every queue is bounded by the tokens.
//   sequential  the same stage functions one after another on the calling thread, synchronising
//               after each, evaluating after each evaluated epoch: the honest baseline.
// Both modes give bitwise-identical parameters on the CPU backend (same batches, same order, same
// dropout keys). An exception in any stage cancels the graph, drains the streams and is rethrown
// once, as the same error type, prefixed with the stage and the batch.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/memory/memory_options.hpp"
#include "gnnpipe/pipeline/augment_counters.hpp"
#include "gnnpipe/pipeline/collective.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/pipeline/pipeline_options.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "gnnpipe/samplers/augment_options.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::pipeline {

// What the best-epoch tracker knows after an epoch (kept in a checkpoint, to resume from).
struct TrackerState {
  int best_epoch = 0;
  int since_best = 0;  // epochs evaluated without a better score since best_epoch (early stop)
  double best_val = -1, test_at_best = 0, train_at_best = 0;
};

// The part of an epoch a stopped run trained (issue #15: SIGINT/SIGTERM write `last` at the step
// they stopped before): batches [0, batches_done) of `epoch` stepped. Their losses and loss rows
// (the epoch's mean loss adds them in batch order) and the epoch's counts so far go on with a
// resume, so that its metrics row is the uninterrupted run's.
struct PartialEpoch {
  int epoch = 0;  // 0: none
  int64_t batches_done = 0, batches = 0;
  std::vector<double> losses;
  std::vector<std::size_t> loss_rows;
  MemoryCounters counters;
};

// MH-Aug's chain as a checkpoint after `epoch` complete epochs holds it (augmentation.hpp): the
// state S_epoch, the proposal counter after it, the uncertainties the chain reads next (those of
// epochs epoch - 1 and epoch; all 1 before epoch 1) and the train stage's live array (which a
// stopped epoch's steps have already written to).
struct AugmentCheckpoint {
  int epoch = 0;
  int64_t next_proposal = 0;
  std::vector<uint8_t> edge_keep, node_keep;
  std::vector<float> ent_previous, ent_last, live;
};

// The run after an evaluated epoch, for checkpoints (issue #15; TrainingSetup::on_checkpoint).
struct CheckpointEvent {
  int epoch = 0;  // epochs completed
  bool best = false;  // this evaluation is the best so far: `parameters` are the best model's
  bool last = false;  // a checkpoint is due (checkpoint_every): `optimizer` holds its state
  std::vector<float> parameters;  // after epoch `epoch`, in the model's order
  std::optional<models::OptimizerHostState<float>> optimizer;
  TrackerState tracker;  // with this epoch's evaluation
  // A stop request's checkpoint (`last` only): epoch `epoch` + 1 was trained up to a batch.
  std::optional<PartialEpoch> partial;
  std::optional<AugmentCheckpoint> augment;  // augment on (`last` only)
};

struct TrainingSetup {
  const graph::Dataset& data;  // single-label, with features and a train split
  const samplers::Sampler& sampler;
  models::GnnModel<float>& model;  // runs on its op context: that context's device is the run's
  models::Optimizer<float>& optimizer;
  models::ModelOptions model_options;  // to build the evaluation twin of `model`
  PipelineOptions pipeline;
  int epochs = 1;
  uint64_t seed = 0;
  int patience = 0;             // stop after this many epochs without a better validation score; 0: never
  int eval_chunk_nodes = 8192;  // layer-wise inference chunk
  StageRecorder& recorder;
  // The memory governor's options; the budget is the model's op context's allocator's (which
  // must exist). `limit` and `reserve` are only reported (the allocator was made from them).
  memory::MemoryOptions memory;
  // How the budget came about, for the plan: memory.limit, the reserve, cudaMemGetInfo's free
  // bytes at start (0 on the CPU) and whether the budget was clamped to them.
  std::size_t reserve_bytes = 0;
  std::size_t free_at_start = 0;
  bool budget_clamped = false;
  // Device bytes the model's parameters (values and gradients) and the optimizer's state took
  // from the allocator (measured by the caller around their construction), for the plan.
  std::size_t parameter_bytes = 0, optimizer_bytes = 0;
  // memory.policy cut: the node values edges are scored by (graph::node_scores for memory.cut) and
  // how a row that lost edges is reweighted (kRowMean where the model's weights are 1 / row length).
  graph::NodeScores cut_scores;
  graph::CutWeights cut_weights = graph::CutWeights::kKeep;
  // Failure injection for tests: called at the start of every stage execution; may throw.
  std::function<void(Stage stage, int epoch, int64_t batch)> fault;
  // Failure injection for tests: called before each forward of a training step, with the part
  // and the number of parts the step runs in; may throw (OutOfBudget exercises the retry).
  std::function<void(int epoch, int64_t batch, std::size_t part, std::size_t parts)> step_fault;
  // Resuming (issue #15): epochs before first_epoch were trained and evaluated (the model and the
  // optimizer hold their state, `resumed` the tracker's); the run trains first_epoch..epochs.
  // Batches are a function of (seed, epoch, batch), so on the CPU backend the resumed run trains
  // bitwise what the uninterrupted one would have (while the governor admits every batch as
  // sampled: its state, the arrays grown so far, starts afresh).
  int first_epoch = 1;
  TrackerState resumed;
  // A checkpoint taken mid-epoch (partial.epoch == first_epoch): that epoch goes on at batch
  // partial.batches_done, its earlier batches' losses and counts restored; epoch 0: none.
  PartialEpoch resumed_partial;
  // Checkpoints: on_checkpoint is called (on the evaluation thread, after on_epoch for the epoch)
  // when an evaluation is the best so far and when a checkpoint is due: an evaluated epoch that is
  // a multiple of checkpoint_every or the last. A due epoch's parameters and optimizer state are
  // copied to the host on the train thread right after its last step (one synchronisation with
  // the train stream). 0: never.
  int checkpoint_every = 0;
  std::function<void(const CheckpointEvent&)> on_checkpoint;
  // Asked on the train thread before a due epoch's state is copied to the host: whether it would
  // be written (the checkpoint writer's cadence); unset: always. A state not taken costs nothing,
  // so a GPU run does not synchronise its train stream for a checkpoint that would be dropped.
  std::function<bool(int epoch)> wants_checkpoint;
  // A stop request (the signal number of SIGINT/SIGTERM; 0: none), read before every step: once
  // set, the step in flight finishes, no other starts, and (checkpoint_every > 0) `last` is
  // written at that point of the epoch: on_checkpoint gets an event with `partial` set, after the
  // earlier epochs' evaluations were reported. Then the streams drain and run_training throws
  // core::Interrupted (checkpoints are written whole or not).
  const std::atomic<int>* stop_request = nullptr;
  // Called on the train thread after every step (the progress line): epoch, the batch's position,
  // the epoch's batch count, the seeds it trained.
  std::function<void(int epoch, int64_t batch, int64_t batches, int64_t seeds)> on_step;
  // augment: MH-Aug (issue #41, docs/AUGMENT.md); its seed is `seed`. A resumed augmented run
  // goes on from the chain's state in the checkpoint (required then).
  samplers::AugmentOptions augment;
  std::optional<AugmentCheckpoint> resumed_augment;
  // Data-parallel training (issue #42, docs/SCALE.md): null, or the ranks of the job, which every
  // rank runs with the same config. Every rank samples each batch (a function of seed, epoch and
  // batch), trains its share of the batch's loss rows (split_batch's part `rank`: exact, with the
  // targets' computation trees), and the train stage sums the ranks' gradients and losses before
  // the optimizer's step, so each step is the whole batch's; the parameters' checksums are
  // compared after each epoch. The CPU backend, or GPUs with a collective that sums device memory
  // (NCCL); no augment; the batch never resident (its share is not the whole graph evaluation
  // reads). Must outlive the run.
  Collective* collective = nullptr;

  // Whether this run is one rank of several (what every data-parallel path asks).
  // (A collective of one rank is data-parallel too: NCCL's one-rank run, which checks the sums'
  // path against a single process bitwise.)
  bool data_parallel() const { return collective != nullptr; }
};


// Multi-label scores of a split: micro- and macro-F1 at threshold 0.5 and with each node's true
// number of labels (top-k, the DeepWalk protocol). NaN for an empty split or a single-label run.
struct MultiLabelScores {
  double micro = NAN, macro = NAN, micro_topk = NAN, macro_topk = NAN;
  // The one `score` names (auto and accuracy: micro, the multi-label default).
  double of(Score score) const {
    switch (score) {
      case Score::kMacroF1: return macro;
      case Score::kMicroF1TopK: return micro_topk;
      case Score::kMacroF1TopK: return macro_topk;
      default: return micro;
    }
  }
};

// The bytes a run moved (all epochs): feature rows gathered on the host into staging memory,
// bytes copied from staging memory to the device, feature rows gathered on the device
// (memory.features device). Copies of parameters, losses and evaluation are not counted.
struct DataMovement {
  uint64_t host_gathered_bytes = 0, copied_bytes = 0, device_gathered_bytes = 0;
  uint64_t cache_hit_rows = 0, cache_miss_rows = 0;  // memory.features cache: input rows the cache held / missed

  void add(const DataMovement& o) {
    host_gathered_bytes += o.host_gathered_bytes;
    copied_bytes += o.copied_bytes;
    device_gathered_bytes += o.device_gathered_bytes;
    cache_hit_rows += o.cache_hit_rows;
    cache_miss_rows += o.cache_miss_rows;
  }
};

struct EpochResult {
  int epoch = 0;
  double loss = 0;
  double epoch_time_s = 0;  // training time of the epoch (pipelined: last step of e-1 to last step of e)
  bool evaluated = false;
  // When evaluated: the run's score (PipelineOptions::score: accuracy, or an F1 score for multi-label data).
  double train_acc = 0, val_acc = 0, test_acc = 0;
  MultiLabelScores val_f1, test_f1;  // multi-label runs
  double eval_time_s = 0;   // the evaluation's busy time (pipelined: it ran during later epochs)
  double window_begin_s = 0, window_end_s = 0;  // the epoch's wall-time window (recorder time)
  std::string verdict;    // from what ran within the window (StageRecorder::window)
  WindowStats window;     // what ran within it, per stage
  MemoryCounters memory;  // what the governor did with this epoch's batches
  DataMovement data;      // what this epoch's batches moved (a resident batch: epoch 1 only)
  std::optional<AugmentCounters> augment;  // with augment on
};

struct RunResult {
  int epochs_run = 0;
  int best_epoch = 0;
  double best_val = -1, test_at_best = 0, train_at_best = 0;
  uint64_t params_checksum = 0;  // of the parameters after epoch `epochs_run` (left in the model)
  std::vector<double> epoch_times;
  // Seconds from the start of the first epoch until every epoch's training and evaluation had
  // finished and the streams were drained: the same work in both modes, so `gnnpipe bench`
  // compares these (a pipelined epoch's time leaves out the evaluations that ran on after it).
  double span_s = 0;
  int max_in_flight = 0;         // most batches holding a staging slot at once
  std::size_t staging_bytes = 0; // host staging memory at the end
  MemoryCounters memory;         // the governor over the whole run
  DataMovement data;
  std::optional<AugmentCounters> augment;  // with augment on: over the run
  double predictor_mape = 0;     // mean absolute percentage error of its predictions (train stream)
  double predictor_max_error = 0;
  int64_t predictor_observations = 0;
};

// Trains setup.model; `on_epoch` is called once per epoch, in epoch order (from the evaluation
// thread in pipelined mode; never concurrently with itself).
RunResult run_training(const TrainingSetup& setup, const std::function<void(const EpochResult&)>& on_epoch);

// The memory plan of a run (docs/DESIGN.md §4): the budget, what is resident by kind, and what the governor
// will do with epoch 1's batches, found by sampling epoch 1 and passing every batch through the
// governor in order without training (so it matches what the run will do in epoch 1, up to the
// online correction of the predictions). Costs one epoch of sampling.
MemoryPlan plan_memory(const TrainingSetup& setup);

}  // namespace gnnpipe::pipeline
