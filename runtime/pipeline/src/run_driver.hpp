#pragma once
// What the two drivers of a training run share (pipelined_driver.cpp, sequential_driver.cpp):
// best-epoch tracking, the checkpoint and stop-request helpers, where a resumed epoch starts, the
// run's result, and run_guarded. Each driver calls the stages (stages.hpp) in its own order.
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gnnpipe/pipeline/training_run.hpp"
#include "run_item.hpp"
#include "stage_failure.hpp"
#include "stages.hpp"

namespace gnnpipe::pipeline::detail {

// Best-epoch selection and early stopping (ties: the earliest epoch).
struct EvalTracker {
  int patience = 0, eval_every = 1;
  TrackerState state;
  bool has_val = true;

  // Returns true when training should stop after this epoch.
  bool add(const EpochResult& r) {
    if (!r.evaluated) return false;
    const double score = has_val ? r.val_acc : r.train_acc;
    if (score > state.best_val) {
      state.best_val = score;
      state.best_epoch = r.epoch;
      state.test_at_best = r.test_acc;
      state.train_at_best = r.train_acc;
      state.since_best = 0;
    } else {
      state.since_best += eval_every;
    }
    return patience > 0 && state.since_best >= patience;
  }
};

bool evaluates(const TrainingSetup& s, int epoch);

// A due epoch's state, taken on the train thread after its last step (before the next epoch's).
std::shared_ptr<CheckpointEvent> capture_checkpoint(const TrainingSetup& s, Stages& stages, int epoch);

// The signal number of a stop request (SIGINT/SIGTERM), 0: none.
// The stop request before a step (0: none). Called on the train thread once before every step,
// in the same order on every rank: in a data-parallel run it is collective (Collective::max).
int stop_signal(const TrainingSetup& s);

// A stop request seen before `next`'s step (on the train thread; every earlier epoch reported, so
// `tracker` is settled): `last` is written at this point of the epoch when checkpoints are on,
// then the run ends with Interrupted.
[[noreturn]] void stop_before(const TrainingSetup& s, Stages& stages, const TrackerState& tracker, const Item& next,
                              int signal);

// Where `epoch` (planned as `batches` batches) starts: after the batches a mid-epoch checkpoint
// trained, for the resumed epoch; else 0. DataError when the sampler plans that epoch otherwise.
std::size_t first_batch(const TrainingSetup& s, int epoch, std::size_t batches);

// After the epoch's evaluation went into `tracker`: the checkpoint callback when its evaluation is
// the best so far or `due` (captured) is set; a best one takes the evaluation twin's parameters.
void report_checkpoint(const TrainingSetup& s, Stages& stages, const EvalTracker& tracker, const EpochResult& r,
                       std::shared_ptr<CheckpointEvent> due);

EvalTracker make_tracker(const TrainingSetup& s);

// The run's result from the tracker and the stages' totals (after the streams were drained).
RunResult finish(const TrainingSetup& s, const EvalTracker& tracker, const Stages& stages, int epochs_run,
                 std::vector<double> times);

// The memory governor's prediction error over the run.
void add_predictor(RunResult& r, Stages& stages);

// Runs `fn`; what it throws comes out with `where` before its message (same error type), after
// the streams were drained without letting a later error replace it.
template <class Fn>
auto run_guarded(Stages& stages, const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    Failure failure;
    failure.record(std::current_exception(), where);
    stages.drain_after_failure();
    failure.rethrow_if_failed();
    throw;  // unreachable: rethrow_if_failed threw
  }
}

// The drivers (run_training picks one by pipeline.mode).
RunResult run_sequential(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch);
RunResult run_pipelined(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch);

}  // namespace gnnpipe::pipeline::detail
