#pragma once
// Training on the CPU backend, one batch after another (the pipeline, issue #6, overlaps them):
//   sampler.type: full      the whole graph is one Block per layer, one step per epoch;
//   sampler.type: neighbor  mini-batches from the neighbor sampler (fanouts in PyG order, one
//                           per model layer), one step per batch.
// Every `pipeline.eval_every` epochs (and at the last) it evaluates train/val/test accuracy with
// full-neighbor inference over the whole graph and without dropout (what published accuracies use). The best validation epoch is
// selected (ties: the earliest), `run.patience` stops early. One line per epoch goes to the log;
// a metrics.csv row per epoch and, only when training completed, summary.json go to the run
// directory. Sampled training comes with the samplers (issue #5), CUDA with issue #7.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/run_dir.hpp"
#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::experiments {

// Throws ConfigError when this build cannot train `config` (a sampler other than full or
// neighbor, fanouts that do not match the layers, a device other than cpu): called before a run directory is created, so a refused run leaves nothing.
void check_cpu_training_supported(const config::ExperimentConfig& config);

// Loads the experiment's dataset and checks that it can be trained on (labels, single-label,
// features, a train split): DataError / ConfigError otherwise. Called before the run directory
// is created, so a bad dataset leaves nothing behind.
graph::Dataset load_training_dataset(const config::ExperimentConfig& config, const std::filesystem::path& data_dir);

// Trains `config` on `dataset` (from load_training_dataset) and returns the summary it wrote.
nlohmann::json train_on_cpu(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                                RunDirectory& run_dir);

}  // namespace gnnpipe::experiments
