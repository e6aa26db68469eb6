#pragma once
// What a training run puts into its checkpoints and takes back from one (issue #15), between the
// pipeline's CheckpointEvent / TrainingSetup and the on-disk Checkpoint (checkpoint.hpp).
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::experiments {

// The keys a resume may change, in the order the refusal lists them: they do not change what the
// epochs before the checkpoint trained (run.patience only upwards: see load_resume_checkpoint).
const std::vector<std::string>& resume_changeable_keys();
bool resume_may_change(const std::string& key);

// The config's keys ("model.hidden") with their values as YAML text, without run.epochs,
// run.checkpoint_every, run.keep_last and run.checkpoint_interval: equal for two configs that train the same epochs the
// same way (run.patience is in: the list is fixed with the checkpoint format).
std::vector<std::pair<std::string, std::string>> resume_relevant_keys(const YAML::Node& resolved);
// FNV-1a 64 (hex) of resume_relevant_keys: the checkpoint's config_hash.
std::string config_hash(const config::ExperimentConfig& config);
// The keys whose values differ between two resolved configs (or exist in one only), without the
// keys a resume may change; sorted.
std::vector<std::string> differing_keys(const YAML::Node& a, const YAML::Node& b);

// The model's input and output widths (the dataset's feature columns and classes), kept in a
// checkpoint's run_state.model so that `gnnpipe infer` can rebuild the model for another graph;
// with model.embedding, in_dim is 0 and embedding_rows the nodes of the learned table (the graph
// it was trained on).
struct ModelDims {
  int64_t in_dim = 0, out_dim = 0, embedding_rows = 0;
};

// The checkpoint of `event`: the parameters split by the model's names and shapes, the optimizer's
// arrays flat, the tracker, the RNG position (the next epoch and batch; a batch's randomness is a
// function of (seed, epoch, batch)), the model's widths, run.patience (the config_hash's, which a
// resume may raise) and (a stop request's) the stopped epoch in run_state.
Checkpoint to_checkpoint(const pipeline::CheckpointEvent& event, const models::ParamStore<float>& params,
                         const config::ExperimentConfig& config, ModelDims dims);

// The stopped epoch of a checkpoint written on a stop request (run_state.partial_epoch: the
// batches done, their losses and loss rows, the epoch's counts so far); epoch 0 when it holds
// none. DataError naming `source` when it is malformed or does not follow the checkpoint's epoch.
pipeline::PartialEpoch checkpoint_partial_epoch(const Checkpoint& checkpoint, const std::string& source);

// The widths a checkpoint's model was built with (run_state.model); DataError naming `source`
// when they are missing or not positive (in_dim 0 with embedding rows).
ModelDims checkpoint_model_dims(const Checkpoint& checkpoint, const std::string& source);

// The best-epoch tracker of a checkpoint (run_state.tracker); DataError naming `source` and the key
// when it is missing, not a number, or does not fit the checkpoint (best epoch after it, negative).
pipeline::TrackerState checkpoint_tracker(const Checkpoint& checkpoint, const std::string& source);
// MH-Aug's chain as the checkpoint holds it (run_state.augment and the augment arrays); nothing
// when it holds none. DataError naming `source` for a damaged record.
std::optional<pipeline::AugmentCheckpoint> checkpoint_augment(const Checkpoint& checkpoint, const std::string& source);

// Puts a checkpoint's parameters into `model`. DataError naming `source` when the arrays do not
// fit the model (another architecture or other widths), naming the first array that differs.
void restore_parameters(const Checkpoint& checkpoint, const std::string& source, models::GnnModel<float>& model);

// Puts a checkpoint's parameters and optimizer state into `model` and `optimizer`; the tracker
// state it holds. DataError naming `source` when the arrays do not fit the model (another
// architecture) or the checkpoint has no optimizer state (checkpoints/best of an old run).
pipeline::TrackerState restore_checkpoint(const Checkpoint& checkpoint, const std::string& source,
                                          models::GnnModel<float>& model, models::Optimizer<float>& optimizer);

}  // namespace gnnpipe::experiments
