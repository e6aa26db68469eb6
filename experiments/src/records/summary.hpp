#pragma once
// summary.json of a training run (RunDirectory::write_summary writes it): what a run that finished
// records, and what a run that stopped early (an error, a stop request, a stall) still can. The
// trainer trains; this file alone decides the summary's fields, so a new field is added here.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "device_budget.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "thread_plan.hpp"

namespace gnnpipe::experiments {

// The epochs a run has finished, for the summary of a run that did not finish.
// Thread-safe: epochs are reported on the evaluation thread, read by the stall watchdog's.
struct EpochRecord {
  std::optional<pipeline::EpochResult> last, best;
  mutable std::mutex mutex;
  void add(const pipeline::EpochResult& r) {
    const std::lock_guard lock(mutex);
    last = r;
    if (r.evaluated && (!best || r.val_acc > best->val_acc)) best = r;
  }
};

// The run's score (run.metric): accuracy, or micro-F1 at threshold 0.5 for multi-label labels
// unless run.metric names another.
std::string metric_name(const config::ExperimentConfig& c, const graph::Dataset& d);

// What a finished run's summary is built from; every reference outlives the run_summary call.
struct FinishedRun {
  const pipeline::RunResult& result;
  const pipeline::MemoryPlan& plan;            // the plan logged at the start (summary "memory.plan")
  const pipeline::StageRecorder& recorder;     // stage totals over the run
  const memory::CachingAllocator& allocator;   // the run's device (or host) memory
  const Budget& budget;
  const ThreadPlan& threads;
  pipeline::PipelineMode mode;  // the mode the run used (gnnpipe bench overrides pipeline.mode)
  std::size_t num_parameters;
  double run_time_s;
};

// summary.json of a run that trained every epoch it was going to (early stop included), status
// "done". `epochs` gives the best epoch's F1 scores on multi-label data.
nlohmann::json run_summary(const config::ExperimentConfig& c, const graph::Dataset& d, const FinishedRun& run,
                           const EpochRecord& epochs);

// summary.json of a run that stopped early, but its status and error: the metrics of the last and
// of the best evaluated epoch it finished (`last`, `best`: null when none).
nlohmann::json stopped_summary(const config::ExperimentConfig& c, const graph::Dataset& d, const EpochRecord& epochs,
                               double run_time);

}  // namespace gnnpipe::experiments
