#pragma once
// A training run through the stages of DESIGN §3, in either mode:
//   pipelined   a oneTBB flow graph: epoch plans -> join with a free staging slot (the tokens) ->
//               sample + gather into the slot (pipeline.sampler_threads at once) -> sequencer
//               (batch order) -> join with a free device slot -> transfer on a dedicated thread
//               (copy stream, event; the staging slot goes back once the copy completed) -> train on
//               a dedicated thread (the train stream waits on the copy's event). At each epoch's end
//               the train thread snapshots the parameters for the evaluation thread, which runs
//               layer-wise full-neighbor inference while the next epoch trains; epoch results are
//               reported in order. Nothing polls or sleeps; every queue is bounded by the tokens.
//   sequential  the same stage functions one after another on the calling thread, synchronising
//               after each, evaluating after each evaluated epoch: the honest baseline.
// Both modes give bitwise-identical parameters on the CPU backend (same batches, same order, same
// dropout keys). An exception in any stage cancels the graph, drains the streams and is rethrown
// once, as the same error type, prefixed with the stage and the batch.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/pipeline/pipeline_options.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::pipeline {

struct TrainingSetup {
  const graph::Dataset& data;  // single-label, with features and a train split
  const samplers::Sampler& sampler;
  models::GnnModel<float>& model;  // runs on its op context: that context's device is the run's
  models::Optimizer<float>& optimizer;
  models::ModelOptions model_options;  // to build the evaluation twin of `model`
  PipelineOptions pipeline;
  int epochs = 1;
  uint64_t seed = 0;
  int patience = 0;             // stop after this many epochs without a better validation score; 0: never
  int eval_chunk_nodes = 8192;  // layer-wise inference chunk
  StageRecorder& recorder;
  // Failure injection for tests: called at the start of every stage execution; may throw.
  std::function<void(Stage stage, int epoch, int64_t batch)> fault;
};

struct EpochResult {
  int epoch = 0;
  double loss = 0;
  double epoch_time_s = 0;  // training time of the epoch (pipelined: last step of e-1 to last step of e)
  bool evaluated = false;
  double train_acc = 0, val_acc = 0, test_acc = 0;  // when evaluated
  std::string verdict;
};

struct RunResult {
  int epochs_run = 0;
  int best_epoch = 0;
  double best_val = -1, test_at_best = 0, train_at_best = 0;
  uint64_t params_checksum = 0;  // of the parameters after epoch `epochs_run` (left in the model)
  std::vector<double> epoch_times;
  int max_in_flight = 0;         // most batches holding a staging slot at once
  std::size_t staging_bytes = 0; // host staging memory at the end
};

// Trains setup.model; `on_epoch` is called once per epoch, in epoch order (from the evaluation
// thread in pipelined mode; never concurrently with itself).
RunResult run_training(const TrainingSetup& setup, const std::function<void(const EpochResult&)>& on_epoch);

}  // namespace gnnpipe::pipeline
