#include "gnnpipe/experiments/cpu_trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/loss.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"

namespace gnnpipe::experiments {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Busy seconds of the stages of a training step.
struct StageTimes {
  double sample = 0, gather = 0, forward = 0, backward = 0, step = 0, eval = 0;
};

// One optimizer step: forward in training mode, NLL over `rows` of the logits against `labels`
// (indexed like the logits' rows; weighted when `weights` is not empty), backward, update.
// Returns the loss.
double train_step(models::GnnModel<float>& model, models::Optimizer<float>& optimizer,
                  std::span<const graph::Block* const> blocks, models::MatrixView<const float> x,
                  std::span<const int32_t> labels, std::span<const int32_t> rows, std::span<const float> weights,
                  core::RngKey key, models::Matrix<float>& dlogits, StageTimes& stages) {
  model.params().zero_grad();
  core::Stopwatch stage;
  const auto logits = model.forward(blocks, x, true, key);
  if (dlogits.rows() != logits.rows || dlogits.cols() != logits.cols) dlogits = models::Matrix<float>(logits.rows, logits.cols);
  const double loss = models::cpu::log_softmax_nll<float>(logits, labels, rows, weights, dlogits.view());
  stages.forward += stage.seconds();
  stage.restart();
  model.backward(blocks, dlogits.cview());
  stages.backward += stage.seconds();
  stage.restart();
  optimizer.step(model.params());
  stages.step += stage.seconds();
  return loss;
}

void check_trainable(const graph::Dataset& d) {
  GNNPIPE_CHECK_DATA(!d.labels.empty(), "{}: the dataset has no labels to train on", d.name);
  GNNPIPE_CHECK_CONFIG(!d.labels.is_multi_label(),
                       "dataset: {} is multi-label; multi-label training (BCE) is not wired into the runner yet", d.name);
  GNNPIPE_CHECK_DATA(!d.features.empty(), "{}: the dataset has no features (set dataset.random_features: F)", d.name);
  GNNPIPE_CHECK_DATA(!d.splits.train.empty(), "{}: the train split is empty", d.name);
}

}  // namespace

void check_cpu_training_supported(const config::ExperimentConfig& c) {
  GNNPIPE_CHECK_CONFIG(models::is_implemented(c.model.type),
                       "model.type: '{}' is not available yet (this build trains gcn, sage and gat)",
                       models::to_string(c.model.type));
  GNNPIPE_CHECK_CONFIG(c.sampler.type != samplers::SamplerType::kNeighbor ||
                           static_cast<int>(c.sampler.fanouts.size()) == c.model.layers,
                       "sampler.fanouts: {} hops for model.layers {}; give one fanout per layer",
                       c.sampler.fanouts.size(), c.model.layers);
  GNNPIPE_CHECK_CONFIG(c.run.device.is_cpu(), "run.device: training on {} comes with the CUDA backend (issue #7); use cpu",
                       c.run.device.str());
}

graph::Dataset load_training_dataset(const config::ExperimentConfig& c, const std::filesystem::path& data_dir) {
  core::Stopwatch load_watch;
  graph::Dataset d = graph::load_dataset(c.dataset, data_dir);
  check_trainable(d);
  core::logger().info("{}: {} nodes, {} edges, {} features, {} classes; train {}, val {}, test {} (loaded in {:.2f} s)",
                      d.name, d.num_nodes(), d.graph.num_edges(), d.features.cols(), d.labels.num_classes,
                      d.splits.train.size(), d.splits.val.size(), d.splits.test.size(), load_watch.seconds());
  return d;
}

nlohmann::json train_on_cpu(const config::ExperimentConfig& c, const graph::Dataset& d, RunDirectory& run_dir) {
  check_cpu_training_supported(c);
  check_trainable(d);
  auto& log = core::logger();
  for (const auto& line : d.synthesized) log.info("synthetic: {}", line);

  models::GnnModel<float> model(c.model, d.features.cols(), d.labels.num_classes, c.run.seed);
  const std::size_t num_layers = model.num_layers();
  const auto sampler = make_training_sampler(c, d, model.block_norm(), num_layers);
  samplers::ParallelSampler parallel(*sampler);
  const bool full_batch = c.sampler.type == samplers::SamplerType::kFull;
  // Full batch: the feature matrix is gathered once and every epoch's batch reads it whole.
  models::Matrix<float> x;
  if (full_batch) {
    x = models::Matrix<float>(d.num_nodes(), d.features.cols());
    std::vector<graph::NodeId> all(static_cast<std::size_t>(d.num_nodes()));
    std::iota(all.begin(), all.end(), 0);
    d.features.gather(all, x.flat());
  }
  const auto optimizer = models::make_optimizer(model.params(), c.optimizer);
  models::Matrix<float> dlogits;

  const std::span<const int32_t> labels = d.labels.single.span();
  const std::span<const int32_t> train = d.splits.train.span(), val = d.splits.val.span(), test = d.splits.test.span();
  StageTimes stages;
  std::vector<double> epoch_times;
  int best_epoch = 0, epochs_run = 0, since_best = 0;
  double best_val = -1, test_at_best = 0, train_at_best = 0;
  // Batches are sampled `sampler_threads` at a time in parallel, then trained one after another.
  const auto window = static_cast<std::size_t>(c.pipeline.sampler_threads);
  // Reused across batches (capacity grows to the largest batch): no allocation per batch once warm.
  std::vector<int32_t> batch_labels;
  std::vector<float> batch_features;
  for (int epoch = 1; epoch <= c.run.epochs; ++epoch) {
    core::Stopwatch epoch_watch;
    const auto plan = sampler->plan_epoch(epoch);
    double weighted = 0;
    std::size_t counted = 0;
    for (std::size_t begin = 0; begin < plan.size(); begin += window) {
      core::Stopwatch stage;
      const auto batches = parallel.sample(std::span<const samplers::BatchSpec>(plan).subspan(
          begin, std::min(plan.size(), begin + window) - begin));
      stages.sample += stage.seconds();
      for (const graph::MiniBatch& batch : batches) {
        if (batch.loss_rows.empty()) continue;  // a subgraph without training nodes has no loss
        stage.restart();
        models::MatrixView<const float> bx = x.cview();
        if (!full_batch) {
          batch_features.resize(batch.input_nodes.size() * static_cast<std::size_t>(d.features.cols()));
          d.features.gather(batch.input_nodes.span(), batch_features);
          bx = {batch_features.data(), static_cast<int64_t>(batch.input_nodes.size()), d.features.cols()};
        }
        batch_labels.resize(batch.targets.size());
        for (std::size_t i = 0; i < batch.targets.size(); ++i) {
          batch_labels[i] = labels[static_cast<std::size_t>(batch.targets[i])];
        }
        stages.gather += stage.seconds();
        const auto blocks = batch.layer_blocks(num_layers);
        const double batch_loss =
            train_step(model, *optimizer, blocks, bx, batch_labels, batch.loss_rows.span(), batch.loss_weights.span(),
                       core::rng_key(c.run.seed, {static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch.index)}),
                       dlogits, stages);
        weighted += batch_loss * static_cast<double>(batch.loss_rows.size());
        counted += batch.loss_rows.size();
      }
    }
    const double loss = counted > 0 ? weighted / static_cast<double>(counted) : 0.0;
    epoch_times.push_back(epoch_watch.seconds());
    epochs_run = epoch;

    EpochMetrics row{epoch, loss, NAN, NAN, NAN, epoch_times.back(), {}};
    const bool evaluate = epoch % c.pipeline.eval_every == 0 || epoch == c.run.epochs;
    if (evaluate) {
      core::Stopwatch stage;
      models::Matrix<float> layerwise;
      models::MatrixView<const float> eval_logits;
      if (full_batch) {  // the full graph's block is at hand: one forward over it
        auto ws = sampler->make_workspace();
        const graph::MiniBatch whole = sampler->sample(samplers::BatchSpec{epoch, 0, {}, {}}, *ws);
        eval_logits = model.forward(whole.layer_blocks(num_layers), x.cview(), false, core::RngKey{});
      } else {
        layerwise = pipeline::infer_layerwise(
            model, d.graph, d.features,
            {.chunk_nodes = c.sampler.eval_chunk_nodes, .parallel_chunks = c.pipeline.sampler_threads});
        eval_logits = layerwise.cview();
      }
      row.train_acc = models::cpu::accuracy<float>(eval_logits, labels, train);
      row.val_acc = val.empty() ? NAN : models::cpu::accuracy<float>(eval_logits, labels, val);
      row.test_acc = test.empty() ? NAN : models::cpu::accuracy<float>(eval_logits, labels, test);
      stages.eval += stage.seconds();
      const double score = val.empty() ? row.train_acc : row.val_acc;
      if (score > best_val) {
        best_val = score;
        best_epoch = epoch;
        test_at_best = row.test_acc;
        train_at_best = row.train_acc;
        since_best = 0;
      } else {
        since_best += c.pipeline.eval_every;
      }
      log.info("epoch {:>4} | loss {:.4f} | train {:.4f} | val {:.4f} | test {:.4f} | {:.3f} s", epoch, loss,
               row.train_acc, row.val_acc, row.test_acc, row.epoch_time_s);
    } else {
      log.info("epoch {:>4} | loss {:.4f} | {:.3f} s", epoch, loss, row.epoch_time_s);
    }
    run_dir.append_metrics(row);
    if (c.run.patience > 0 && since_best >= c.run.patience) {
      log.info("early stop: no better validation accuracy for {} epochs", since_best);
      break;
    }
  }

  const auto& build = core::build_info();
  nlohmann::json summary = {
      {"name", c.name},
      {"dataset", d.name},
      {"synthesized", d.synthesized},
      {"test_accuracy", test_at_best},
      {"val_accuracy", best_val},
      {"train_accuracy", train_at_best},
      {"best_epoch", best_epoch},
      {"epochs", epochs_run},
      {"epoch_time_s", median(epoch_times)},
      {"device", c.run.device.str()},
      {"mode", full_batch ? "full-batch" : fmt::format("{} (sequential)", samplers::to_string(c.sampler.type))},
      {"params_checksum", fmt::format("{:016x}", model.params().checksum())},
      {"num_parameters", model.params().values().size()},
      {"stages",
       {{"sample", stages.sample},
        {"gather", stages.gather},
        {"forward", stages.forward},
        {"backward", stages.backward},
        {"step", stages.step},
        {"eval", stages.eval}}},
      {"memory",
       {{"peak_host_bytes", core::peak_rss_bytes()},
        {"budget_bytes", c.memory.limit_bytes},
        {"batches_split", 0},
        {"batches_cut", 0},
        {"batches_retried", 0}}},
      {"build", {{"version", build.version}, {"build_type", build.build_type}, {"cuda", build.cuda}}},
  };
  run_dir.write_summary(summary);
  log.info("best epoch {}: val {:.4f}, test {:.4f}; median epoch {:.4f} s (forward {:.3f} s, backward {:.3f} s, "
           "step {:.3f} s, eval {:.3f} s in total); {}",
           best_epoch, best_val, test_at_best, median(epoch_times), stages.forward, stages.backward, stages.step,
           stages.eval, run_dir.path().string());
  return summary;
}

}  // namespace gnnpipe::experiments
