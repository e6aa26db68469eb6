#include "run_driver.hpp"

#include <utility>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

bool checkpoint_due(const TrainingSetup& s, int epoch) {
  return s.on_checkpoint && s.checkpoint_every > 0 && evaluates(s, epoch) &&
         (epoch % s.checkpoint_every == 0 || epoch == s.epochs);
}

// `last`'s state after `epoch` complete epochs (and whatever steps since): the parameters and
// the optimizer's state on the host, taken on the train thread (waits for the train stream).
CheckpointEvent last_state(const TrainingSetup& s, Stages& stages, int epoch) {
  CheckpointEvent event;
  event.epoch = epoch;
  event.last = true;
  event.parameters = s.model.params().values_to_host(s.model.context().stream());
  event.optimizer = s.optimizer.state_to_host();
  event.augment = stages.augment_checkpoint(epoch);
  return event;
}

}  // namespace

bool evaluates(const TrainingSetup& s, int epoch) { return epoch % s.pipeline.eval_every == 0 || epoch == s.epochs; }

std::shared_ptr<CheckpointEvent> capture_checkpoint(const TrainingSetup& s, Stages& stages, int epoch) {
  if (!checkpoint_due(s, epoch) || (s.wants_checkpoint && !s.wants_checkpoint(epoch))) return nullptr;
  return std::make_shared<CheckpointEvent>(last_state(s, stages, epoch));
}

int stop_signal(const TrainingSetup& s) {
  const int local = s.stop_request != nullptr ? s.stop_request->load() : 0;
  // Data-parallel: every rank stops before the same step (the largest signal any rank saw), or one
  // would wait alone in the step's sum.
  if (s.data_parallel()) return s.collective->max(local);
  return local;
}

[[noreturn]] void stop_before(const TrainingSetup& s, Stages& stages, const TrackerState& tracker, const Item& next,
                              int signal) {
  if (s.on_checkpoint && s.checkpoint_every > 0) {
    CheckpointEvent event = last_state(s, stages, next.epoch - 1);
    event.tracker = tracker;
    event.partial = stages.partial_epoch(next);
    s.on_checkpoint(event);
  }
  // The caller's context names the stage, batch and epoch ("stage train, batch 47 of epoch 3: ").
  GNNPIPE_THROW(Interrupted, "interrupted by signal {} before the batch's step", signal);
}

std::size_t first_batch(const TrainingSetup& s, int epoch, std::size_t batches) {
  const PartialEpoch& p = s.resumed_partial;
  if (p.epoch == 0 || epoch != p.epoch) return 0;
  GNNPIPE_CHECK_DATA(static_cast<int64_t>(batches) == p.batches,
                     "the checkpoint stopped epoch {} after {} of its {} batches, but the sampler plans {} for it", epoch,
                     p.batches_done, p.batches, batches);
  return static_cast<std::size_t>(p.batches_done);
}

void report_checkpoint(const TrainingSetup& s, Stages& stages, const EvalTracker& tracker, const EpochResult& r,
                       std::shared_ptr<CheckpointEvent> due) {
  if (!s.on_checkpoint || s.checkpoint_every <= 0 || !r.evaluated) return;
  const bool best = tracker.state.best_epoch == r.epoch;
  if (!best && !due) return;
  CheckpointEvent event = due ? std::move(*due) : CheckpointEvent{};
  event.epoch = r.epoch;
  event.best = best;
  if (!due) event.parameters = stages.snapshot_to_host();
  event.tracker = tracker.state;
  s.on_checkpoint(event);
}

EvalTracker make_tracker(const TrainingSetup& s) {
  EvalTracker t;
  t.patience = s.patience;
  t.eval_every = s.pipeline.eval_every;
  t.has_val = !s.data.splits.val.empty();
  t.state = s.resumed;
  return t;
}

RunResult finish(const TrainingSetup& s, const EvalTracker& tracker, const Stages& stages, int epochs_run,
                 std::vector<double> times) {
  RunResult r;
  r.epochs_run = epochs_run;
  r.best_epoch = tracker.state.best_epoch;
  r.best_val = tracker.state.best_val;
  r.test_at_best = tracker.state.test_at_best;
  r.train_at_best = tracker.state.train_at_best;
  r.params_checksum = s.model.params().checksum(s.model.context().stream());
  r.epoch_times = std::move(times);
  r.staging_bytes = stages.staging_bytes();
  r.memory = stages.total_counters();
  r.data = stages.data_movement();
  if (stages.augment_counters(1).has_value()) {
    AugmentCounters total;
    for (int epoch = s.first_epoch; epoch <= epochs_run; ++epoch) total.add(*stages.augment_counters(epoch));
    r.augment = total;
  }
  return r;
}

void add_predictor(RunResult& r, Stages& stages) {
  r.predictor_mape = stages.governor().mape();
  r.predictor_max_error = stages.governor().max_error();
  r.predictor_observations = stages.governor().observations();
}

}  // namespace gnnpipe::pipeline::detail
