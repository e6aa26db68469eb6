#pragma once
// run.seeds / run.runs (issue #16 item 3): one run directory per seed under a parent directory,
// and the parent's summary.json over them, OGB style: mean and unbiased standard deviation of each
// run's best validation accuracy and of its test accuracy at that epoch.
#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::experiments {

// Trains config.run.seeds one after the other, each in `<parent>/seed-<s>` with run.seed = s and
// no run.seeds (so that its config.yaml replays that run alone); the parent keeps config.yaml,
// log.txt (every run's lines) and summary.json. Prints one line with the means. A run that fails
// stops the rest: the parent's summary says "failed" with the runs done so far, and the error
// goes on.
nlohmann::json train_seeds(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                           const RunDirectoryOptions& parent_options, const TrainOptions& options, std::ostream& out);

}  // namespace gnnpipe::experiments
