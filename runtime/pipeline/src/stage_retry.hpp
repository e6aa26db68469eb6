#pragma once
// retrying: runs a stage's body again after a transient error (pipeline.stage_retries), for every
// stage of the batch path and the evaluation.
#include <cstdint>
#include <exception>

#include "gnnpipe/pipeline/stage_stats.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "run_counters.hpp"
#include "stage_failure.hpp"

namespace gnnpipe::pipeline::detail {

// Logs a retried error (the exception being handled); counts it in `epoch`'s counters, except
// kEval's (evaluate() adds those to its epoch's result, whose counters were taken before it ran).
void note_retry(const TrainingSetup& s, RunCounters& counters, Stage stage, int epoch, int64_t batch, int attempt);

// Runs fn(attempt) for attempt 0, 1, ...: after an error that running it again may not repeat
// (may_succeed_again), the error is logged and counted (note_retry) and fn runs again, at most
// pipeline.stage_retries times; any other error, or the last, goes on. fn must leave nothing a
// next attempt depends on half done (each stage's body says how it keeps to that).
template <class Fn>
auto retrying(const TrainingSetup& s, RunCounters& counters, Stage stage, int epoch, int64_t batch, Fn&& fn) {
  for (int attempt = 0;; ++attempt) {
    try {
      return fn(attempt);
    } catch (...) {
      if (attempt >= s.pipeline.stage_retries || !may_succeed_again(std::current_exception())) throw;
      note_retry(s, counters, stage, epoch, batch, attempt);
    }
  }
}

}  // namespace gnnpipe::pipeline::detail
