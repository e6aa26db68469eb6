#pragma once
// A `sweep:` block (issue #16 item 3): one run directory per point of the grid under a parent
// directory, each with the config of that point (its config.yaml replays it alone; with run.seeds,
// a multi-seed parent of its own), the parent's summary.json listing the points, and the report
// table over them printed at the end.
#include <nlohmann/json.hpp>

#include <ostream>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/dataset_options.hpp"

namespace gnnpipe::experiments {

// The directory name of a sweep point: "<index>-<last key component>-<value>_..." with anything
// but [A-Za-z0-9.-] replaced by '_' ("01-hidden-64_lr-0.01").
std::string sweep_point_name(std::size_t index, const std::vector<std::string>& assignments);

// Runs every point in order. `dataset` is the base config's; a point that changes the dataset
// section loads its own from `data_dir`. A point that fails is recorded (status, error) and the
// others go on; an interrupt stops the sweep. At the end the first failure is rethrown.
nlohmann::json train_sweep(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                           const graph::DataDir& data_dir, const RunDirectoryOptions& parent_options,
                           const TrainOptions& options, std::ostream& out);

}  // namespace gnnpipe::experiments
