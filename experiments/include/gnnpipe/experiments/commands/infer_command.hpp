#pragma once
// gnnpipe infer CONFIG --checkpoint DIR (issue #15): memory-limited layer-wise full-neighbor
// inference over the whole graph with a trained model. The model is the config's architecture
// with the widths and parameters of the checkpoint (checkpoints/best or checkpoints/last of a run);
// the graph is the config's dataset (which may be another graph than the one trained on, with the
// same feature width). Features stay on the host; the chunks of destinations each layer runs in are
// sized by pipeline::plan_inference_chunks to what the budget (memory.limit or --memory-limit,
// less memory.reserve) leaves after the model, and a destination whose in-edges alone do not fit
// keeps the most that do (memory.cut ranks what goes, whatever memory.policy). Writes into the
// output directory:
//   config.yaml, log.txt         as a run does
//   predictions.npy              int64 [nodes]: the argmax class of every node, in node order
//   logits.npy                   float32 [nodes x classes] (--logits)
//   embeddings_layer<L>.npy      float32 [nodes x width of layer L] (--embeddings L)
//   summary.json                 "status": "done", accuracy per split, the memory section, chunks,
//                                cuts, time
// Every check (checkpoint, budget for the model, dataset, widths) runs before the directory is
// made, so a refused job leaves nothing behind. The directory is locked while the job runs, and
// its outputs appear together, before summary.json (infer_output.hpp); a job that fails after
// that leaves no output, the error in log.txt and summary.json "status": "failed", and an --out
// an infer left unfinished (failed, or killed) is taken over by the next infer into it.
#include <cstddef>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/commands/command_outputs.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"

namespace gnnpipe::experiments {

struct InferOptions {
  std::filesystem::path checkpoint;         // a checkpoint directory
  std::optional<std::size_t> memory_limit;  // replaces memory.limit
  std::optional<int> embeddings_layer;      // also write this layer's outputs (0-based)
  bool logits = false;                      // also write logits.npy
  graph::DataDir data_dir{"."};            // base of relative dataset paths
  RunDirectoryOptions out;                  // where to write (out.out empty: runs/<name>-infer-<time>)
  CommandOutputs* outputs = nullptr;        // not null: also given the arrays written, once the job is done
};

// Runs the job and returns the summary it wrote. DataError (a damaged or mismatched checkpoint,
// a dataset without features or of another feature width, an output that cannot be written),
// ConfigError (an embeddings layer out of range, a run.metric that does not fit the labels, an
// --out in use by another process or that cannot be created), OutOfBudget (a budget that cannot
// hold the model, or one destination row of its layers).
nlohmann::json infer_experiment(const config::ExperimentConfig& config, const InferOptions& options);

}  // namespace gnnpipe::experiments
