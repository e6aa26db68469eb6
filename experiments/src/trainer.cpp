#include "gnnpipe/experiments/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::experiments {
namespace {

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void check_trainable(const graph::Dataset& d) {
  GNNPIPE_CHECK_DATA(!d.labels.empty(), "{}: the dataset has no labels to train on", d.name);
  GNNPIPE_CHECK_CONFIG(!d.labels.is_multi_label(),
                       "dataset: {} is multi-label; multi-label training (BCE) is not wired into the runner yet", d.name);
  GNNPIPE_CHECK_DATA(!d.features.empty(), "{}: the dataset has no features (set dataset.random_features: F)", d.name);
  GNNPIPE_CHECK_DATA(!d.splits.train.empty(), "{}: the train split is empty", d.name);
}

}  // namespace

void check_training_supported(const config::ExperimentConfig& c) {
  GNNPIPE_CHECK_CONFIG(models::is_implemented(c.model.type),
                       "model.type: '{}' is not available yet (this build trains gcn, sage and gat)",
                       models::to_string(c.model.type));
  check_sampler_fits_model(c.sampler, static_cast<std::size_t>(c.model.layers));
  if (c.run.device.is_cuda()) {
    GNNPIPE_CHECK_CONFIG(core::cuda_compiled(), "run.device: {} needs a build with the CUDA backend (this one has none)",
                         c.run.device.str());
    c.run.device.require_available();
  }
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

nlohmann::json train_experiment(const config::ExperimentConfig& c, const graph::Dataset& d, RunDirectory& run_dir,
                            const TrainOptions& options) {
  check_training_supported(c);
  check_trainable(d);
  auto& log = core::logger();
  for (const auto& line : d.synthesized) log.info("synthetic: {}", line);

  // The model's ops run on the train stream of run.device, with their memory (activations,
  // workspaces) from a caching allocator under memory.limit: device memory on a GPU, host memory on
  // the CPU backend, where the same budget is enforced (a CPU run shows whether a config fits).
  memory::CachingAllocator allocator(c.run.device, c.memory.limit_bytes);
  const core::Stream train_stream(c.run.device);
  const models::OpContext ops(train_stream, c.run.ops, &allocator);
  if (c.run.device.is_cuda()) {
    for (const auto& gpu : core::list_gpus()) {
      if (gpu.index == c.run.device.index()) {
        log.info("device: {} ({}), memory.limit {}", c.run.device.str(), gpu.name, core::format_bytes(c.memory.limit_bytes));
      }
    }
  }
  models::GnnModel<float> model(c.model, d.features.cols(), d.labels.num_classes, c.run.seed, ops);
  const auto sampler = make_training_sampler(c, d, model.block_norm(), model.num_layers());
  const auto optimizer = models::make_optimizer(model.params(), c.optimizer, ops);
  pipeline::PipelineOptions pipe = c.pipeline;
  if (options.mode) pipe.mode = *options.mode;
  pipeline::StageRecorder recorder;
  const pipeline::TrainingSetup setup{d,           *sampler,     model,          *optimizer,
                                      c.model,     pipe,         c.run.epochs,   c.run.seed,
                                      c.run.patience, c.sampler.eval_chunk_nodes, recorder, options.fault};
  log.info("training: {} sampler, {} mode, {} sampler threads, {} staging slots", samplers::to_string(c.sampler.type),
           pipeline::to_string(pipe.mode), pipe.sampler_threads, pipe.staging_slots);
  core::Stopwatch run_watch;
  const pipeline::RunResult result = pipeline::run_training(setup, [&](const pipeline::EpochResult& r) {
    run_dir.append_metrics(EpochMetrics{r.epoch, r.loss, r.evaluated ? r.train_acc : NAN, r.evaluated ? r.val_acc : NAN,
                                        r.evaluated ? r.test_acc : NAN, r.epoch_time_s, {}});
    if (r.evaluated) {
      log.info("epoch {:>4} | loss {:.4f} | train {:.4f} | val {:.4f} | test {:.4f} | {:.3f} s | {}", r.epoch, r.loss,
               r.train_acc, r.val_acc, r.test_acc, r.epoch_time_s, r.verdict);
    } else {
      log.info("epoch {:>4} | loss {:.4f} | {:.3f} s | {}", r.epoch, r.loss, r.epoch_time_s, r.verdict);
    }
  });
  const double run_time = run_watch.seconds();
  if (result.epochs_run < c.run.epochs) log.info("early stop after epoch {}: no better validation accuracy for {} epochs", result.epochs_run, c.run.patience);
  if (options.trace) recorder.write_chrome_trace(run_dir.path() / "trace.json");

  nlohmann::json stages = nlohmann::json::object(), detail = nlohmann::json::object();
  for (const auto& [stage, t] : recorder.totals()) {
    stages[std::string(pipeline::to_string(stage))] = t.busy_s;
    detail[std::string(pipeline::to_string(stage))] = {{"busy_s", t.busy_s}, {"wait_s", t.wait_s}, {"items", t.items}};
  }
  const auto& build = core::build_info();
  const bool full_batch = c.sampler.type == samplers::SamplerType::kFull;
  nlohmann::json summary = {
      {"name", c.name},
      {"dataset", d.name},
      {"synthesized", d.synthesized},
      {"test_accuracy", result.test_at_best},
      {"val_accuracy", result.best_val},
      {"train_accuracy", result.train_at_best},
      {"best_epoch", result.best_epoch},
      {"epochs", result.epochs_run},
      {"epoch_time_s", median(result.epoch_times)},
      {"epoch_time_mean_s", mean(result.epoch_times)},
      {"run_time_s", run_time},
      {"device", c.run.device.str()},
      {"mode", std::string(pipeline::to_string(pipe.mode))},
      {"sampler", std::string(samplers::to_string(c.sampler.type))},
      {"full_batch", full_batch},
      {"params_checksum", fmt::format("{:016x}", result.params_checksum)},
      {"num_parameters", model.params().size()},
      {"stages", stages},
      {"stage_detail", detail},
      {"trainer_wait_s", recorder.totals().at(pipeline::Stage::kTrain).wait_s},
      {"max_batches_in_flight", result.max_in_flight},
      {"memory",
       {{"peak_host_bytes", core::peak_rss_bytes()},
        {"peak_device_bytes", allocator.stats().peak_in_use_bytes},
        {"device_driver_allocations", allocator.stats().driver_allocations},
        {"staging_bytes", result.staging_bytes},
        {"budget_bytes", c.memory.limit_bytes},
        {"batches_split", 0},
        {"batches_cut", 0},
        {"batches_retried", 0}}},
      {"build", {{"version", build.version}, {"build_type", build.build_type}, {"cuda", build.cuda}}},
  };
  run_dir.write_summary(summary);
  log.info("best epoch {}: val {:.4f}, test {:.4f}; median epoch {:.4f} s, run {:.2f} s; {}", result.best_epoch,
           result.best_val, result.test_at_best, median(result.epoch_times), run_time, run_dir.path().string());
  return summary;
}

}  // namespace gnnpipe::experiments
