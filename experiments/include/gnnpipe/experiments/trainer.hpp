#pragma once
// Training an experiment on `run.device` (cpu or cuda:N) through pipeline::run_training (docs/DESIGN.md §3): the
// sampler of `sampler.type` (full, neighbor, saint_*, cluster), `pipeline.mode` pipelined (flow
// graph, evaluation overlapped with the next epoch) or sequential (the baseline). Every
// `pipeline.eval_every` epochs (and at the last) train/val/test accuracy come from layer-wise
// full-neighbor inference without dropout (what published accuracies use). The best validation
// epoch is selected (ties: the earliest), `run.patience` stops early. One line per epoch goes to
// the log with a verdict on what bounded it; a metrics.csv row per epoch and, only when training
// completed, summary.json go to the run directory. On a GPU the model's ops run on the train
// stream with device memory from a caching allocator under `memory.limit` (run.tf32 and run.spmm
// pick the GEMM math and the SpMM implementation).
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/collective.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/pipeline/pipeline_options.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"

namespace gnnpipe::experiments {

// Throws ConfigError when this build cannot train `config` (a model type not implemented, fanouts
// that do not match the layers, a CUDA device in a build without CUDA) and CudaError when the
// device is missing: called before a run directory is created, so a refused run leaves nothing.
// Also ConfigError for memory.cut set (not its default) without memory.policy cut.
void check_training_supported(const config::ExperimentConfig& config);
// What gnnpipe infer needs of the same: the model, sampler and device checks, without the
// training-only memory.cut rule (infer cuts by memory.cut whatever the policy).
void check_inference_supported(const config::ExperimentConfig& config);

// model.embedding: the learned table is the input, so the dataset's features (if any) are dropped
// for a [nodes x 0] store (batches then carry node ids and no feature bytes). Nothing otherwise.
void use_embedding_input(const models::ModelOptions& model, graph::Dataset& d);

// Loads the experiment's dataset and checks that it can be trained on (labels, single-label,
// features, a train split): DataError / ConfigError otherwise. Called before the run directory
// is created, so a bad dataset leaves nothing behind.
graph::Dataset load_training_dataset(const config::ExperimentConfig& config, const graph::DataDir& data_dir);
// The same for a dataset read elsewhere (the Python module's arrays): the config's dataset options
// (graph::finish_dataset) and the same checks.
graph::Dataset training_dataset_from(const config::ExperimentConfig& config, graph::Dataset read);

struct TrainOptions {
  bool trace = false;                              // write trace.json into the run directory
  std::optional<pipeline::PipelineMode> mode;      // overrides pipeline.mode (gnnpipe bench)
  std::function<void(pipeline::Stage, int, int64_t)> fault;  // failure injection (tests)
  // Failure injection inside a training step (tests): see pipeline::TrainingSetup::step_fault.
  std::function<void(int epoch, int64_t batch, std::size_t part, std::size_t parts)> step_fault;
  // Called on the checkpoint writer's thread before each checkpoint it writes (tests: a slow disk).
  std::function<void()> before_checkpoint_write;
  // gnnpipe run --resume: the run directory's checkpoints/last (its config checked against this
  // run's by the caller); training goes on after its epoch.
  std::shared_ptr<const Checkpoint> resume;
  // gnnpipe run: set to the signal number by SIGINT/SIGTERM (StopSignals); the run stops before its
  // next step and train_experiment throws core::Interrupted naming the checkpoint to resume from.
  const std::atomic<int>* stop_request = nullptr;
  // Called once training ended, with the trained model (tests read its parameters).
  std::function<void(const models::GnnModel<float>&)> on_trained;
  // run.stall_timeout's action (tests); by default the run records the stall in summary.json
  // ("status": "stalled") and log.txt and the process exits with ExitCode::kStalled (6).
  std::function<void(const std::string& message)> on_stall;
  // Redraw a progress line on stderr after every step (gnnpipe run on a terminal at info level).
  bool progress = false;
  // A data-parallel job's ranks (pipeline::TrainingSetup::collective; null: one process).
  pipeline::Collective* collective = nullptr;
};

// The memory plan of `config` (docs/DESIGN.md §4): budget, resident memory and what the governor will do
// with epoch 1's batches, without training (`gnnpipe run --plan`). Samples epoch 1 once.
pipeline::MemoryPlan plan_experiment(const config::ExperimentConfig& config, const graph::Dataset& dataset);

// gnnpipe run --resume RUN_DIR: checks that `config` trains what RUN_DIR's config.yaml trained
// (ConfigError naming every key that differs and listing those that may: run.epochs,
// run.checkpoint_every, run.keep_last, and run.patience upwards) and reads
// RUN_DIR/checkpoints/last (DataError naming the file that is missing or damaged); ConfigError
// when there is nothing left to train: the checkpoint is at or after run.epochs, or the run
// stopped early there (its tracker has gone run.patience epochs without a better score).
// The caller holds RUN_DIR's DirectoryLock.
std::shared_ptr<const Checkpoint> load_resume_checkpoint(const config::ExperimentConfig& config,
                                                         const std::filesystem::path& run_dir);

// Trains `config` on `dataset` (from load_training_dataset) and returns the summary it wrote, with
// "status": "done". A run that throws (interrupted by a signal, OutOfBudget, any failure) first
// writes summary.json with "status" "interrupted" or "failed", "error" (the one-line message),
// "epochs" finished, "best_epoch", and the metrics of the "last" and "best" finished epochs, and
// puts the error into log.txt; then the exception goes on.
nlohmann::json train_experiment(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                                RunDirectory& run_dir, const TrainOptions& options = {});

}  // namespace gnnpipe::experiments
