#include "gnnpipe/experiments/commands/infer_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "gnnpipe/pipeline/inference_plan.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "device_budget.hpp"
#include "records/infer_output.hpp"
#include "records/run_stats.hpp"
#include "thread_plan.hpp"
#include "records/training_checkpoints.hpp"

namespace gnnpipe::experiments {
namespace {

// The model of the config with the checkpoint's widths, its parameters in memory of the budget.
// OutOfBudget when the budget cannot hold them: the job's first failure, before any other work.
class InferenceModel {
 public:
  InferenceModel(const config::ExperimentConfig& c, const Checkpoint& checkpoint, const std::string& source)
      : dims_(checkpoint_model_dims(checkpoint, source)),
        budget_(budget_for(c)),
        allocator_(c.run.device, budget_.budget, {}, c.memory.allocator),
        stream_(c.run.device),
        ops_(stream_, c.run.ops, &allocator_) {
    GNNPIPE_CHECK_DATA((c.model.embedding > 0) == (dims_.embedding_rows > 0),
                       "{}: the checkpoint's model {} a learned embedding, the config's model.embedding is {}", source,
                       dims_.embedding_rows > 0 ? "has" : "has no", c.model.embedding);
    std::size_t values = 0;
    for (const CheckpointArray& a : checkpoint.parameters) values += a.values.size();
    try {
      // Inference: values only, no gradients (they would take as much again).
      model_ = std::make_unique<models::GnnModel<float>>(c.model, dims_.in_dim, dims_.out_dim, c.run.seed, ops_,
                                                         dims_.embedding_rows, false);
    } catch (const core::OutOfBudget&) {
      GNNPIPE_THROW(OutOfBudget, "memory.limit: a budget of {} cannot hold the model of {} ({} parameters, {})",
                    core::format_bytes(budget_.budget), source, values, core::format_bytes(values * sizeof(float)));
    }
    restore_parameters(checkpoint, source, *model_);
    stream_.synchronize();
    resident_bytes_ = allocator_.stats().in_use_bytes;
    workspace_bytes_ = ops_.library_workspace_bytes();
  }

  models::GnnModel<float>& model() { return *model_; }
  const ModelDims& dims() const { return dims_; }
  const Budget& budget() const { return budget_; }
  const memory::CachingAllocator& allocator() const { return allocator_; }
  // The model's values in device memory (the allocator's blocks; without the op context's
  // library workspace, which a CUDA context sizes from the budget: 32 MiB unlimited on Hopper).
  std::size_t parameter_bytes() const { return resident_bytes_ - workspace_bytes_; }
  std::size_t library_workspace_bytes() const { return workspace_bytes_; }
  // What the budget leaves for inference's arrays (after the model and the library workspace).
  std::size_t allowance() const { return budget_.budget - std::min(budget_.budget, resident_bytes_); }

 private:
  ModelDims dims_;
  Budget budget_;
  memory::CachingAllocator allocator_;
  core::Stream stream_;
  models::OpContext ops_;
  std::unique_ptr<models::GnnModel<float>> model_;
  std::size_t resident_bytes_ = 0, workspace_bytes_ = 0;
};

graph::Dataset load_inference_dataset(const config::ExperimentConfig& c, const graph::DataDir& data_dir,
                                      const ModelDims& dims) {
  core::Stopwatch watch;
  graph::Dataset d = graph::load_dataset(c.dataset, data_dir);
  use_embedding_input(c.model, d);
  GNNPIPE_CHECK_DATA(dims.embedding_rows == 0 || d.num_nodes() == dims.embedding_rows,
                     "{}: {} nodes, but the checkpoint's learned embedding has a row for each of the {} nodes it was "
                     "trained on (inference with learned embeddings needs that graph)",
                     d.name, d.num_nodes(), dims.embedding_rows);
  GNNPIPE_CHECK_DATA(!d.features.empty(), "{}: the dataset has no features (set dataset.random_features: F)", d.name);
  GNNPIPE_CHECK_DATA(d.features.cols() == dims.in_dim,
                     "{}: {} feature columns, the checkpoint's model takes {} (inference needs the width it was trained on)",
                     d.name, d.features.cols(), dims.in_dim);
  resolve_score(c.run.metric, d.labels.is_multi_label(), d.name);  // run.metric fits the labels
  core::logger().info("{}: {} nodes, {} edges, {} features (loaded in {:.2f} s)", d.name, d.num_nodes(),
                      d.graph.num_edges(), d.features.cols(), watch.seconds());
  return d;
}

// The scores of `logits` over a split under the metric's name ("accuracy", or for multi-label
// labels micro_f1 / macro_f1 at threshold 0.5 and their top-k variants, all four), as
// "<split>_<name>" keys of `summary`; null values when the split is empty or the labels do not
// match the model's classes. The run's own score (metric) is among them.
void add_split_scores(nlohmann::json& summary, const models::Matrix<float>& logits, const graph::Dataset& d,
                      const graph::HostArray<graph::NodeId>& split, const std::string& name, bool labels_match) {
  const bool scored = labels_match && !split.empty();
  if (!d.labels.is_multi_label()) {
    summary[name + "_accuracy"] =
        scored ? nlohmann::json(models::cpu::accuracy<float>(logits.cview(), d.labels.single.span(), split.span()))
               : nlohmann::json(nullptr);
    return;
  }
  const models::MatrixView<const uint8_t> targets{d.labels.multi.data(), d.num_nodes(), d.labels.num_classes};
  for (const bool top_k : {false, true}) {
    const std::string suffix = top_k ? "_topk" : "";
    if (!scored) {
      summary[name + "_micro_f1" + suffix] = nullptr;
      summary[name + "_macro_f1" + suffix] = nullptr;
      continue;
    }
    const auto f1 = models::cpu::multi_label_f1<float>(logits.cview(), targets, split.span(), top_k);
    summary[name + "_micro_f1" + suffix] = f1.micro;
    summary[name + "_macro_f1" + suffix] = f1.macro;
  }
}

// --embeddings: a layer of the model (0-based); ConfigError otherwise.
void check_embeddings_layer(const config::ExperimentConfig& c, const InferOptions& options) {
  if (!options.embeddings_layer) return;
  GNNPIPE_CHECK_CONFIG(*options.embeddings_layer >= 0 && *options.embeddings_layer < c.model.layers,
                       "--embeddings: layer {} of a {}-layer model (0..{})", *options.embeddings_layer, c.model.layers,
                       c.model.layers - 1);
}

// The summary's scores of the three splits.
nlohmann::json scores_of(const models::Matrix<float>& logits, const graph::Dataset& d, bool labels_match) {
  nlohmann::json scores = nlohmann::json::object();
  add_split_scores(scores, logits, d, d.splits.test, "test", labels_match);
  add_split_scores(scores, logits, d, d.splits.val, "val", labels_match);
  add_split_scores(scores, logits, d, d.splits.train, "train", labels_match);
  return scores;
}

// A score of the summary for the log: "0.8123", or "n/a" where there is none (null).
std::string accuracy_text(const nlohmann::json& a) {
  return a.is_null() ? std::string("n/a") : fmt::format("{:.4f}", a.get<double>());
}

// predictions.npy: each node's class (int64 [N], ties: lowest), or for multi-label labels its
// labels (uint8 [N x C], 1 where the logit is above 0: probability above 0.5); logits.npy and
// embeddings_layerL.npy when asked for: by name (the file's without .npy), in the order they are
// written (a full disk stops at the first that does not fit, and its error names that file).
CommandOutputs job_outputs(models::Matrix<float> logits, models::Matrix<float> embeddings, const InferOptions& options,
                           bool multi_label) {
  CommandOutputs outputs;
  if (multi_label) {
    std::vector<uint8_t> labels(static_cast<std::size_t>(logits.size()));
    std::transform(logits.flat().begin(), logits.flat().end(), labels.begin(),
                   [](float v) { return static_cast<uint8_t>(v > 0.0f ? 1 : 0); });
    outputs.push_back({"predictions", {logits.rows(), logits.cols()}, std::move(labels)});
  } else {
    std::vector<int64_t> predictions(static_cast<std::size_t>(logits.rows()));
    for (int64_t r = 0; r < logits.rows(); ++r) {
      const float* row = logits.data() + r * logits.cols();
      predictions[static_cast<std::size_t>(r)] = std::max_element(row, row + logits.cols()) - row;  // ties: lowest
    }
    outputs.push_back({"predictions", {logits.rows()}, std::move(predictions)});
  }
  if (options.logits) {
    const std::vector<int64_t> shape{logits.rows(), logits.cols()};
    outputs.push_back({"logits", shape, std::move(logits).take_values()});
  }
  if (options.embeddings_layer) {
    const std::vector<int64_t> shape{embeddings.rows(), embeddings.cols()};
    outputs.push_back(
        {fmt::format("embeddings_layer{}", *options.embeddings_layer), shape, std::move(embeddings).take_values()});
  }
  return outputs;
}

void write_outputs(StagedOutputs& staged, const CommandOutputs& outputs) {
  for (const OutputArray& array : outputs) {
    std::visit(
        [&](const auto& values) {
          using V = typename std::decay_t<decltype(values)>::value_type;
          graph::io::write_npy<V>(staged.path(array.name + ".npy"), values, array.shape);
        },
        array.values);
  }
}

// The plan's log line: the budget, what the model takes, and the chunks (and cut rows) it leaves.
void log_inference_plan(const InferenceModel& im, const pipeline::InferenceChunks& chunks,
                        const config::ExperimentConfig& c) {
  core::logger().info(
      "infer: budget {} ({} for the model{}, {} left), {} chunks of up to {} destinations (their arrays {} at most){}",
      core::format_bytes(im.budget().budget), core::format_bytes(im.parameter_bytes()),
      im.library_workspace_bytes() == 0
          ? std::string()
          : fmt::format(", {} for the library workspace", core::format_bytes(im.library_workspace_bytes())),
      core::format_bytes(im.allowance()), chunks.chunks(), chunks.largest_chunk_nodes,
      core::format_bytes(chunks.largest_bytes),
      chunks.rows_cut == 0 ? std::string()
                           : fmt::format("; {} rows keep part of their in-edges ({} edges cut per layer, {})",
                                         chunks.rows_cut, chunks.edges_cut, memory::to_string(c.memory.cut)));
}

// summary.json's "memory" of an inference job.
nlohmann::json inference_memory_json(const InferenceModel& im, const pipeline::InferenceChunks& chunks) {
  const auto& stats = im.allocator().stats();
  return {{"budget_bytes", im.budget().budget},
          {"limit_bytes", im.budget().limit},
          {"reserve_bytes", im.budget().reserve},
          {"parameter_bytes", im.parameter_bytes()},
          {"library_workspace_bytes", im.library_workspace_bytes()},
          {"predicted_chunk_bytes", chunks.largest_bytes},
          {"peak_device_bytes", stats.peak_in_use_bytes},
          {"allocator", std::string(memory::to_string(im.allocator().mode()))},
          {"peak_held_bytes", stats.peak_held_bytes},
          {"peak_host_bytes", core::peak_rss_bytes()}};
}

// The run directory of an inference job: no metrics, unfinished until its outputs are in; an
// --out in use by another infer is refused.
RunDirectoryOptions infer_directory_options(const InferOptions& options) {
  RunDirectoryOptions dir_options = options.out;
  dir_options.metrics = false;
  dir_options.unfinished_marker = true;
  if (dir_options.out.empty() && dir_options.suffix.empty()) dir_options.suffix = "-infer";
  if (!dir_options.out.empty()) dir_options.lock = claim_infer_output_dir(dir_options.out);
  return dir_options;
}

// The chunks of an inference job, and whether layer 0 reads the features' CSR form. That form
// takes its bytes of the budget first; it is used where the chunks planned beside it cut no more
// rows and number at most a quarter more than without it (a tight budget keeps the dense rows:
// whole in-edges matter more than a cheaper layer 0).
struct InferencePlan {
  pipeline::InferenceChunks chunks;
  std::optional<int64_t> nnz;     // the CSR form's non-zeros, when it is used
  std::size_t sparse_charge = 0;  // its arrays' size class in the budget
};

InferencePlan plan_inference(const config::ExperimentConfig& c, InferenceModel& im, const graph::CsrGraph& graph,
                             const graph::FeatureStore& input, pipeline::InferenceArrays arrays) {
  models::GnnModel<float>& model = im.model();
  const auto plan = [&](std::size_t allowance) {
    return pipeline::plan_inference_chunks(model, graph, input.cols(), allowance, c.sampler.eval_chunk_nodes, arrays);
  };
  InferencePlan p;
  p.chunks = plan(im.allowance());
  const std::optional<int64_t> nnz = pipeline::csr_feature_nonzeros(model, input);
  if (!nnz) return p;
  const std::size_t charge =
      memory::CachingAllocator::size_class(models::cpu::sparse_rows_bytes(input.rows(), *nnz, sizeof(float)));
  std::optional<pipeline::InferenceChunks> beside;
  if (charge < im.allowance()) {
    try {
      beside = plan(im.allowance() - charge);
    } catch (const core::OutOfBudget&) {
    }
  }
  if (beside && beside->rows_cut <= p.chunks.rows_cut && 4 * beside->chunks() <= 5 * p.chunks.chunks()) {
    core::logger().info("infer: layer 0 reads the features in CSR form ({} non-zeros, {})", *nnz,
                        core::format_bytes(charge));
    return {.chunks = std::move(*beside), .nnz = nnz, .sparse_charge = charge};
  }
  core::logger().info("infer: the features' CSR form ({}) would leave the chunks too little of the budget: dense rows",
                      core::format_bytes(charge));
  return p;
}

}  // namespace

nlohmann::json infer_experiment(const config::ExperimentConfig& c_in, const InferOptions& options) {
  config::ExperimentConfig c = c_in;
  if (options.memory_limit) c.memory.limit_bytes = *options.memory_limit;
  check_inference_supported(c);
  check_embeddings_layer(c, options);
  auto& log = core::logger();
  const std::string source = options.checkpoint.string();
  const Checkpoint checkpoint = read_checkpoint(options.checkpoint);
  InferenceModel im(c, checkpoint, source);
  models::GnnModel<float>& model = im.model();
  const graph::Dataset d = load_inference_dataset(c, options.data_dir, im.dims());
  if (checkpoint.config_hash != config_hash(c)) {
    log.info("{}: trained with another config than this one (the architecture fits; the dataset or training keys differ)",
             source);
  }
  const bool labels_match = !d.labels.empty() && d.labels.num_classes == im.dims().out_dim;
  const std::string metric = metric_for(c.run.metric, d.labels.is_multi_label());  // the summary's score
  if (!d.labels.empty() && !labels_match) {
    log.warn("{}: {} classes, the model predicts {}: no accuracy is reported", d.name, d.labels.num_classes,
             im.dims().out_dim);
  }

  // The CPU backend charges each packed chunk to the budget as a GPU allocates it, so a budget
  // means the same on both.
  const bool on_gpu = c.run.device.is_cuda();
  const pipeline::InferenceArrays arrays = on_gpu ? pipeline::InferenceArrays::kDevice : pipeline::InferenceArrays::kCharged;
  // Layer 0 reads the features, or the learned embedding's rows.
  std::vector<float> embedding_copy;
  const graph::FeatureStore input = pipeline::layerwise_input(model, d.features, model.context().stream(), embedding_copy);
  const InferencePlan planned = plan_inference(c, im, d.graph, input, arrays);
  const pipeline::InferenceChunks& chunks = planned.chunks;
  graph::NodeScores scores;
  if (chunks.rows_cut > 0) scores = graph::node_scores(d.graph, c.memory.cut, {.cache_dir = partition_cache_dir(c.sampler)});
  const pipeline::InferenceCut cut{&scores,
                                   model.block_norm() == graph::BlockNorm::kMean ? graph::CutWeights::kRowMean
                                                                                 : graph::CutWeights::kKeep,
                                   c.run.seed};
  log_inference_plan(im, chunks, c);

  // The output directory comes last, once every check passed: a refused job leaves nothing.
  RunDirectory out(c, infer_directory_options(options));
  log.info("output directory {}", out.path().string());
  try {
    // Inference has no train or evaluation thread beside its chunks: auto uses every usable CPU.
    ThreadPlan threads = plan_threads(c.pipeline.sampler_threads, c.run.device.is_cuda(), core::usable_cpus());
    if (threads.sampler_auto) threads.sampler_threads = threads.cpus.usable;
    const AppliedThreads applied(threads);
    log.info("{}", threads.line());
    models::Matrix<float> embeddings;
    core::Stopwatch watch;
    models::DeviceArray<std::byte> sparse_buffer;  // the CSR form, in the budget's memory
    models::SparseRowsView<float> sparse{};
    if (planned.nnz) sparse = pipeline::build_csr_features(model.context(), input, *planned.nnz, sparse_buffer, "infer");
    models::Matrix<float> logits = pipeline::infer_layerwise(
        model, d.graph, input,
        {.chunk_nodes = c.sampler.eval_chunk_nodes,
         .parallel_chunks = threads.sampler_threads,
         .chunks = &chunks,
         .cut = cut,
         .charge_packed = true,
         // What the plan leaves of the allowance holds a second packed chunk, for copies beside layers.
         .overlap_bytes = im.allowance() - std::min(im.allowance(), chunks.largest_bytes + planned.sparse_charge),
         .sparse_features = planned.nnz ? &sparse : nullptr,
         .on_layer = [&](std::size_t l, const models::Matrix<float>& y) {
           if (options.embeddings_layer && static_cast<std::size_t>(*options.embeddings_layer) == l) {
             embeddings = models::Matrix<float>(y.rows(), y.cols());
             std::copy(y.flat().begin(), y.flat().end(), embeddings.flat().begin());
           }
         }});
    const double seconds = watch.seconds();

    // The outputs go to a staging folder and into the directory together, before summary.json;
    // the scores read the logits first (the outputs take them).
    const nlohmann::json split_scores = scores_of(logits, d, labels_match);
    CommandOutputs outputs = job_outputs(std::move(logits), std::move(embeddings), options, d.labels.is_multi_label());
    StagedOutputs staged(out.path());
    write_outputs(staged, outputs);

    const auto stats = im.allocator().stats();
    nlohmann::json summary = {
        {"name", c.name},
        {"status", "done"},
        {"dataset", d.name},
        {"nodes", d.num_nodes()},
        {"checkpoint", source},
        {"checkpoint_epoch", checkpoint.epoch},
        {"output_dir", out.path().string()},
        {"device", c.run.device.str()},
        {"metric", metric},
        {"time_s", seconds},
        {"chunks", chunks.chunks()},
        {"largest_chunk_nodes", chunks.largest_chunk_nodes},
        {"rows_cut", chunks.rows_cut},
        {"sparse_feature_nonzeros", planned.nnz ? nlohmann::json(*planned.nnz) : nlohmann::json(nullptr)},
        {"edges_cut", chunks.edges_cut},
        {"cut", std::string(memory::to_string(c.memory.cut))},
        {"outputs", staged.names()},
        {"memory", inference_memory_json(im, chunks)},
    };
    summary.update(split_scores);
    staged.commit();
    out.write_summary(summary);
    staged.keep();
    out.finished();
    if (options.outputs != nullptr) *options.outputs = std::move(outputs);
    log.info("inferred {} nodes in {:.3f} s: test {} {}, val {}; peak device memory {} of {}; {}", d.num_nodes(), seconds,
             metric_label(metric), accuracy_text(summary["test_" + metric]), accuracy_text(summary["val_" + metric]),
             core::format_bytes(stats.peak_in_use_bytes), core::format_bytes(im.budget().budget), out.path().string());
    return summary;
  } catch (const std::exception& e) {
    // As a run records how it ended; the outputs are gone (StagedOutputs), and .unfinished lets a
    // rerun into --out replace the rest.
    out.record_stop(e, {{"name", c.name},
                        {"dataset", d.name},
                        {"checkpoint", source},
                        {"checkpoint_epoch", checkpoint.epoch},
                        {"output_dir", out.path().string()}});
    throw;
  }
}

}  // namespace gnnpipe::experiments
