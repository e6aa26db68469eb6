#pragma once
// Training an experiment on `run.device` (cpu or cuda:N) through pipeline::run_training (DESIGN §3): the
// sampler of `sampler.type` (full, neighbor, saint_*, cluster), `pipeline.mode` pipelined (flow
// graph, evaluation overlapped with the next epoch) or sequential (the baseline). Every
// `pipeline.eval_every` epochs (and at the last) train/val/test accuracy come from layer-wise
// full-neighbor inference without dropout (what published accuracies use). The best validation
// epoch is selected (ties: the earliest), `run.patience` stops early. One line per epoch goes to
// the log with a verdict on what bounded it; a metrics.csv row per epoch and, only when training
// completed, summary.json go to the run directory. On a GPU the model's ops run on the train
// stream with device memory from a caching allocator under `memory.limit` (run.tf32 and run.spmm
// pick the GEMM math and the SpMM implementation).
#include <filesystem>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/run_dir.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/pipeline/pipeline_options.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"

namespace gnnpipe::experiments {

// Throws ConfigError when this build cannot train `config` (a model type not implemented, fanouts
// that do not match the layers, a CUDA device in a build without CUDA) and CudaError when the
// device is missing: called before a run directory is created, so a refused run leaves nothing.
void check_training_supported(const config::ExperimentConfig& config);

// Loads the experiment's dataset and checks that it can be trained on (labels, single-label,
// features, a train split): DataError / ConfigError otherwise. Called before the run directory
// is created, so a bad dataset leaves nothing behind.
graph::Dataset load_training_dataset(const config::ExperimentConfig& config, const std::filesystem::path& data_dir);

struct TrainOptions {
  bool trace = false;                              // write trace.json into the run directory
  std::optional<pipeline::PipelineMode> mode;      // overrides pipeline.mode (gnnpipe bench)
  std::function<void(pipeline::Stage, int, int64_t)> fault;  // failure injection (tests)
};

// Trains `config` on `dataset` (from load_training_dataset) and returns the summary it wrote.
nlohmann::json train_experiment(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                                RunDirectory& run_dir, const TrainOptions& options = {});

}  // namespace gnnpipe::experiments
