#include "gnnpipe/experiments/trainer.hpp"

#include "gnnpipe/graph/node_scores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/optimizer.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "device_budget.hpp"
#include "progress_line.hpp"
#include "stall_watchdog.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "thread_plan.hpp"
#include "records/checkpoint_writer.hpp"
#include "records/training_checkpoints.hpp"
#include "records/summary.hpp"
#include "records/run_stats.hpp"

namespace gnnpipe::experiments {
namespace {

void check_trainable(const graph::Dataset& d) {
  GNNPIPE_CHECK_DATA(d.num_nodes() > 0, "{}: the graph is empty (0 nodes)", d.name);
  GNNPIPE_CHECK_DATA(!d.labels.empty(), "{}: the dataset has no labels to train on", d.name);
  GNNPIPE_CHECK_DATA(d.labels.is_multi_label() || d.labels.num_classes >= 2,
                     "{}: the labels have {} class; classification needs at least 2", d.name, d.labels.num_classes);
  GNNPIPE_CHECK_DATA(!d.features.empty(),
                     "{}: the dataset has no features (set model.embedding: D to learn them, or dataset.random_features: F)",
                     d.name);
  GNNPIPE_CHECK_DATA(!d.splits.train.empty(), "{}: the train split is empty", d.name);
}

}  // namespace

void use_embedding_input(const models::ModelOptions& model, graph::Dataset& d) {
  if (model.embedding == 0) return;
  if (d.features.cols() > 0) {
    core::logger().info("model.embedding: a learned {}-wide embedding of every node is the input; the dataset's {} "
                        "feature columns are not used",
                        model.embedding, d.features.cols());
  }
  d.features = graph::FeatureStore(graph::HostArray<float>(), d.num_nodes(), 0, "no features (model.embedding)");
}

void check_inference_supported(const config::ExperimentConfig& c) {
  check_sampler_fits_model(c.sampler, static_cast<std::size_t>(c.model.layers));
  if (c.run.device.is_cuda()) {
    GNNPIPE_CHECK_CONFIG(core::cuda_compiled(), "run.device: {} needs a build with the CUDA backend (this one has none)",
                         c.run.device.str());
    c.run.device.require_available();
  }
}

void check_training_supported(const config::ExperimentConfig& c) {
  check_inference_supported(c);
  // Training cuts edges only under policy cut: a strategy without it would rank nothing, and most
  // likely means the policy was forgotten.
  GNNPIPE_CHECK_CONFIG(c.memory.policy == memory::MemoryPolicy::kCut || c.memory.cut == memory::MemoryOptions{}.cut,
                       "memory.cut: {} ranks the edges training cuts under memory.policy cut, and the policy is {} (set "
                       "memory.policy: cut; gnnpipe infer reads memory.cut with any policy)",
                       memory::to_string(c.memory.cut), memory::to_string(c.memory.policy));
}

namespace {

graph::Dataset prepare_training_dataset(const config::ExperimentConfig& c, graph::Dataset d, const core::Stopwatch& load_watch) {
  use_embedding_input(c.model, d);
  check_trainable(d);
  resolve_score(c.run.metric, d.labels.is_multi_label(), d.name);  // run.metric fits the labels
  core::logger().info("{}: {} nodes, {} edges, {} features, {} classes; train {}, val {}, test {} (loaded in {:.2f} s)",
                      d.name, d.num_nodes(), d.graph.num_edges(), d.features.cols(), d.labels.num_classes,
                      d.splits.train.size(), d.splits.val.size(), d.splits.test.size(), load_watch.seconds());
  return d;
}

}  // namespace

graph::Dataset load_training_dataset(const config::ExperimentConfig& c, const graph::DataDir& data_dir) {
  const core::Stopwatch load_watch;
  return prepare_training_dataset(c, graph::load_dataset(c.dataset, data_dir), load_watch);
}

graph::Dataset training_dataset_from(const config::ExperimentConfig& c, graph::Dataset read) {
  const core::Stopwatch load_watch;
  return prepare_training_dataset(c, graph::finish_dataset(std::move(read), c.dataset), load_watch);
}

namespace {

// Everything a run trains with, built in dependency order: the budgeted allocator, the train
// stream and its op context, the model, the sampler, the optimizer, and the pipeline's setup.
// The model's ops run on the train stream of run.device with their memory (activations,
// workspaces, parameters) from a caching allocator under the budget: device memory on a GPU, host
// memory on the CPU backend, where the same budget is enforced (a CPU run shows whether a config
// fits).
class TrainingResources {
 public:
  TrainingResources(const config::ExperimentConfig& c, const graph::Dataset& d, const TrainOptions& options)
      : threads_(plan_threads(c.pipeline.sampler_threads, c.run.device.is_cuda(), core::usable_cpus(),
                                c.pipeline.eval_threads)),
        applied_threads_(threads_),
        budget_(budget_for(c)),
        allocator_(c.run.device, budget_.budget, {}, c.memory.allocator),
        train_stream_(c.run.device),
        ops_(train_stream_, c.run.ops, &allocator_),
        before_model_(allocator_.stats().in_use_bytes),
        model_(c.model, d.features.cols(), d.labels.num_classes, c.run.seed, ops_, c.model.embedding > 0 ? d.num_nodes() : 0),
        parameter_bytes_(allocator_.stats().in_use_bytes - before_model_),
        sampler_(make_training_sampler(c, d, model_.block_norm(), model_.num_layers())),
        optimizer_(models::make_optimizer(model_.params(), c.optimizer, ops_)),
        recorder_(/*keep_events=*/options.trace),
        setup_{d,          *sampler_,       model_,          *optimizer_,
               c.model,    pipeline_of(c, d, options, threads_), c.run.epochs, c.run.seed,
               c.run.patience, c.sampler.eval_chunk_nodes, recorder_, c.memory,
               budget_.reserve, budget_.free_at_start, budget_.clamped,
               parameter_bytes_, allocator_.stats().in_use_bytes - before_model_ - parameter_bytes_,
               cut_scores(c, d), cut_weights(c, model_.block_norm()),
               options.fault, options.step_fault,
               /*first_epoch=*/1, /*resumed=*/{}, /*resumed_partial=*/{}, /*checkpoint_every=*/0, /*on_checkpoint=*/{},
               /*wants_checkpoint=*/{}, options.stop_request, /*on_step=*/{}, c.augment, /*resumed_augment=*/{},
               options.collective} {
    if (c.run.device.is_cuda()) {
      for (const auto& gpu : core::list_gpus()) {
        if (gpu.index == c.run.device.index()) {
          core::logger().info("device: {} ({}), memory budget {}", c.run.device.str(), gpu.name,
                              core::format_bytes(budget_.budget));
        }
      }
    }
  }

  const pipeline::TrainingSetup& setup() const { return setup_; }
  pipeline::TrainingSetup& setup() { return setup_; }
  models::GnnModel<float>& model() { return model_; }
  models::Optimizer<float>& optimizer() { return *optimizer_; }
  pipeline::StageRecorder& recorder() { return recorder_; }
  const memory::CachingAllocator& allocator() const { return allocator_; }
  const models::GnnModel<float>& model() const { return model_; }
  const Budget& budget() const { return budget_; }
  const ThreadPlan& threads() const { return threads_; }

 private:
  static pipeline::PipelineOptions pipeline_of(const config::ExperimentConfig& c, const graph::Dataset& d,
                                               const TrainOptions& options,
                                               const ThreadPlan& threads) {
    pipeline::PipelineOptions pipe = c.pipeline;
    pipe.score = resolve_score(c.run.metric, d.labels.is_multi_label(), d.name);
    if (options.mode) pipe.mode = *options.mode;
    pipe.sampler_threads = threads.sampler_threads;  // auto resolved
    pipe.eval_threads = threads.eval_threads;
    return pipe;
  }

  // memory.policy cut: the node values of memory.cut (PageRank cached beside the partitions).
  static graph::NodeScores cut_scores(const config::ExperimentConfig& c, const graph::Dataset& d) {
    if (c.memory.policy != memory::MemoryPolicy::kCut) return {};
    return graph::node_scores(d.graph, c.memory.cut, {.cache_dir = partition_cache_dir(c.sampler)});
  }
  // Rows that lost edges get 1 / (their new length) where the sampler's weights are 1 / row length:
  // mean aggregation, except GraphSAINT's normalised weights (estimates of full-graph quantities).
  static graph::CutWeights cut_weights(const config::ExperimentConfig& c, graph::BlockNorm norm) {
    const bool saint = c.sampler.type == samplers::SamplerType::kSaintNode ||
                       c.sampler.type == samplers::SamplerType::kSaintEdge ||
                       c.sampler.type == samplers::SamplerType::kSaintRw;
    if (norm == graph::BlockNorm::kMean && !(saint && c.sampler.normalize)) return graph::CutWeights::kRowMean;
    return graph::CutWeights::kKeep;
  }

  ThreadPlan threads_;
  AppliedThreads applied_threads_;  // OpenBLAS and oneTBB thread counts for as long as the run lives
  Budget budget_;
  memory::CachingAllocator allocator_;
  core::Stream train_stream_;
  models::OpContext ops_;
  std::size_t before_model_;
  models::GnnModel<float> model_;
  std::size_t parameter_bytes_;
  std::unique_ptr<samplers::Sampler> sampler_;
  std::unique_ptr<models::Optimizer<float>> optimizer_;
  pipeline::StageRecorder recorder_;
  pipeline::TrainingSetup setup_;
};

// What a checkpoint after `epoch` complete epochs (and `partial`'s batches) holds, for messages:
// "epoch 3", "epoch 3 and batches 0-46 of epoch 4".
std::string checkpoint_holds(int epoch, const pipeline::PartialEpoch& partial) {
  if (partial.batches_done > 0) {
    return fmt::format("epoch {} and batches 0-{} of epoch {}", epoch, partial.batches_done - 1, partial.epoch);
  }
  return epoch > 0 ? fmt::format("epoch {}", epoch) : std::string("the state before epoch 1");
}

// "mem 53.3 MiB peak" and, when the governor did more than admit batches as sampled, what it did;
// then what the epoch's batches moved, when they moved anything (issue #14: bytes per batch and a
// cache's hit rate, each epoch).
std::string memory_note(const pipeline::MemoryCounters& m, const pipeline::DataMovement& d,
                        const std::optional<pipeline::AugmentCounters>& augment) {
  std::string note;
  if (augment) {
    // MH-Aug's chain for this epoch's new view: what it tried, took, and the state it left.
    note += fmt::format("aug {}/{} accepted, drop e {:.3f} v {:.3f} | ", augment->acceptances, augment->proposals,
                        augment->delta_e, augment->delta_v);
  }
  note += fmt::format("mem {} peak", core::format_bytes(m.peak_bytes));
  if (m.split > 0) note += fmt::format(", {} split into {}", m.split, m.micro_batches);
  if (m.resampled > 0) note += fmt::format(", {} resampled", m.resampled);
  if (m.cut > 0) note += fmt::format(", {} cut ({} edges)", m.cut, m.edges_cut);
  if (m.layerwise > 0) note += fmt::format(", {} layer-wise in {} chunks", m.layerwise, m.chunks);
  if (m.retried > 0) note += fmt::format(", {} retried", m.retried);
  if (m.stage_retries > 0) note += fmt::format(", {} stage error{} retried", m.stage_retries, m.stage_retries == 1 ? "" : "s");
  if (d.host_gathered_bytes + d.copied_bytes + d.device_gathered_bytes > 0) {
    const int64_t batches = std::max<int64_t>(1, m.batches());
    note += fmt::format(" | data {} gathered, {} copied ({} a batch)", core::format_bytes(d.host_gathered_bytes),
                        core::format_bytes(d.copied_bytes),
                        core::format_bytes(d.copied_bytes / static_cast<uint64_t>(batches)));
    if (d.device_gathered_bytes > 0) note += fmt::format(", {} gathered on the device", core::format_bytes(d.device_gathered_bytes));
    if (const uint64_t rows = d.cache_hit_rows + d.cache_miss_rows; rows > 0) {
      note += fmt::format(", cache hits {:.1f}%", 100.0 * static_cast<double>(d.cache_hit_rows) / static_cast<double>(rows));
    }
  }
  return note;
}

}  // namespace

pipeline::MemoryPlan plan_experiment(const config::ExperimentConfig& c, const graph::Dataset& d) {
  check_training_supported(c);
  check_trainable(d);
  TrainingResources resources(c, d, {});
  return pipeline::plan_memory(resources.setup());
}

namespace {

// train_experiment's work; `epochs` records each finished epoch as it is reported.
nlohmann::json train_experiment_recorded(const config::ExperimentConfig& c, const graph::Dataset& d,
                                         RunDirectory& run_dir, const TrainOptions& options, EpochRecord& epochs);

}  // namespace

nlohmann::json train_experiment(const config::ExperimentConfig& c, const graph::Dataset& d, RunDirectory& run_dir,
                                const TrainOptions& options) {
  EpochRecord epochs;
  core::Stopwatch watch;
  try {
    return train_experiment_recorded(c, d, run_dir, options, epochs);
  } catch (const std::exception& e) {
    // The run directory records how the run ended (the program prints the error on the console).
    run_dir.record_stop(e, stopped_summary(c, d, epochs, watch.seconds()));
    throw;
  }
}

namespace {

// What checkpoints/last holds, for the message of a stopped run; set by the checkpoint writer's
// thread once a `last` is on disk, read after the writer is flushed.
class LastCheckpoint {
 public:
  void set(std::string holds) {
    const std::lock_guard lock(mutex_);
    holds_ = std::move(holds);
  }
  std::string holds() const {
    const std::lock_guard lock(mutex_);
    return holds_;
  }

 private:
  mutable std::mutex mutex_;
  std::string holds_;  // empty: no checkpoint written
};

// --resume: the model's and optimizer's state from checkpoints/last, and the epoch (and batch)
// the run goes on from.
void resume_training(const config::ExperimentConfig& c, const Checkpoint& resume, const std::filesystem::path& checkpoints,
                     TrainingResources& resources, LastCheckpoint& last) {
  pipeline::TrainingSetup& setup = resources.setup();
  setup.resumed = restore_checkpoint(resume, (checkpoints / "last").string(), resources.model(), resources.optimizer());
  setup.first_epoch = resume.epoch + 1;
  setup.resumed_partial = checkpoint_partial_epoch(resume, (checkpoints / "last").string());
  setup.resumed_augment = checkpoint_augment(resume, (checkpoints / "last").string());
  core::logger().info("resuming after epoch {} of {}{} (best so far: epoch {}, val {:.4f})", resume.epoch, c.run.epochs,
                      setup.resumed_partial.epoch > 0
                          ? fmt::format(", at batch {} of epoch {}'s {}", setup.resumed_partial.batches_done,
                                        setup.resumed_partial.epoch, setup.resumed_partial.batches)
                          : std::string(),
                      setup.resumed.best_epoch, setup.resumed.best_val);
  last.set(checkpoint_holds(resume.epoch, setup.resumed_partial));
}

// run.checkpoint_every > 0: checkpoints/best at every new best, checkpoints/last when taken
// (run.checkpoint_interval), and run.keep_last's epoch-NNNNNN copies of evaluated epochs, written
// by the returned writer's thread (null: no checkpoints). `resources`, `last` and `checkpoints`
// outlive the writer (its callback holds references).
std::unique_ptr<CheckpointWriter> write_checkpoints_during(const config::ExperimentConfig& c, const graph::Dataset& d,
                                                           const std::filesystem::path& checkpoints,
                                                           TrainingResources& resources, LastCheckpoint& last,
                                                           const std::function<void()>& before_write) {
  if (c.run.checkpoint_every <= 0) return nullptr;
  pipeline::TrainingSetup& setup = resources.setup();
  setup.checkpoint_every = c.run.checkpoint_every;
  const ModelDims dims{d.features.cols(), d.labels.num_classes, resources.model().embedding().rows};
  const auto write = [&c, &checkpoints, &resources, &last, dims, before_write](const pipeline::CheckpointEvent& e) {
    if (before_write) before_write();
    // The parameters' names and shapes are fixed for the run: reading them here races with nothing.
    const Checkpoint checkpoint = to_checkpoint(e, resources.model().params(), c, dims);
    if (e.best) write_checkpoint(checkpoints / "best", checkpoint);
    if (!e.last) return;
    write_checkpoint(checkpoints / "last", checkpoint);
    last.set(checkpoint_holds(e.epoch, e.partial.value_or(pipeline::PartialEpoch{})));
    if (e.partial) return;  // run.keep_last keeps evaluated epochs only
    if (c.run.keep_last > 1) {
      write_checkpoint(epoch_checkpoint_dir(checkpoints, e.epoch), checkpoint);
      keep_newest_epoch_checkpoints(checkpoints, c.run.keep_last);
    }
  };
  auto writer = std::make_unique<CheckpointWriter>(write, c.run.keep_last > 1 ? 0.0 : c.run.checkpoint_interval_s,
                                                   &resources.recorder());
  setup.on_checkpoint = [w = writer.get()](const pipeline::CheckpointEvent& e) { w->submit(e); };
  // A due epoch's state is taken only where the writer would write it, and always the run's last
  // epoch's. With run.patience every due epoch's is: the run may stop at any evaluated epoch, and
  // checkpoints/last must then hold that epoch (a resume with the same patience is refused).
  if (c.run.patience == 0) {
    setup.wants_checkpoint = [w = writer.get(), epochs = c.run.epochs](int epoch) {
      return epoch == epochs || w->wants_last();
    };
  }
  return writer;
}

// The stall watchdog's default action: a stalled thread cannot be unwound, so record what the run
// has (summary.json, status "stalled") and end the process with ExitCode::kStalled.
[[noreturn]] void end_stalled_run(const config::ExperimentConfig& c, const graph::Dataset& d, const EpochRecord& epochs,
                                  double run_time, RunDirectory& run_dir, const std::string& message) {
  core::logger().error("{}", message);
  try {
    nlohmann::json summary = stopped_summary(c, d, epochs, run_time);
    summary["status"] = "stalled";
    summary["error"] = message;
    run_dir.write_summary(summary);
  } catch (const std::exception& e) {
    core::logger().error("could not write summary.json: {}", e.what());
  }
  core::logger().flush();
  std::fprintf(stderr, "gnnpipe: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(static_cast<int>(core::ExitCode::kStalled));
}

nlohmann::json train_experiment_recorded(const config::ExperimentConfig& c, const graph::Dataset& d,
                                         RunDirectory& run_dir, const TrainOptions& options, EpochRecord& epochs) {
  check_training_supported(c);
  check_trainable(d);
  auto& log = core::logger();
  // What the loader made up or changed (synthetic graph, random features, row normalisation).
  for (const auto& line : d.synthesized) log.info("dataset: {}", line);
  TrainingResources resources(c, d, options);
  pipeline::TrainingSetup& setup = resources.setup();
  const std::filesystem::path checkpoints = run_dir.path() / "checkpoints";
  LastCheckpoint last;
  if (options.resume) resume_training(c, *options.resume, checkpoints, resources, last);
  const std::unique_ptr<CheckpointWriter> writer =
      write_checkpoints_during(c, d, checkpoints, resources, last, options.before_checkpoint_write);
  log.info("{}", resources.threads().line());
  // Once a process: the CPU backend's dense products are OpenBLAS's.
  static std::once_flag advised;
  if (!c.run.device.is_cuda()) {
    std::call_once(advised, [&log] {
      if (const std::string advice = models::cpu::gemm_kernel_advice(); !advice.empty()) log.warn("{}", advice);
    });
  }
  const pipeline::MemoryPlan plan = pipeline::plan_memory(setup);
  for (const std::string& line : plan.lines()) log.info("{}", line);
  const pipeline::PipelineOptions& pipe = setup.pipeline;
  // The slots the run uses (one where a fixed batch may stay resident), not the configured count.
  log.info("training: {} sampler, {} mode, {} sampler threads, {} staging slot{}, {} device slot{}",
           samplers::to_string(c.sampler.type), pipeline::to_string(pipe.mode), pipe.sampler_threads, plan.staging_slots,
           plan.staging_slots == 1 ? "" : "s", plan.device_slot_count, plan.device_slot_count == 1 ? "" : "s");
  pipeline::StageRecorder& recorder = resources.recorder();
  core::Stopwatch run_watch;
  ProgressLine progress(c.run.epochs, options.progress);
  if (options.progress) setup.on_step = [&](int epoch, int64_t batch, int64_t batches, int64_t seeds) {
    progress.step(epoch, batch, batches, seeds);
  };
  const auto on_stall = options.on_stall ? options.on_stall : [&](const std::string& message) {
    progress.clear();
    // A data-parallel rank names itself: a rank stalls when another stopped answering its sums.
    const pipeline::Collective* ranks = setup.collective;
    end_stalled_run(c, d, epochs, run_watch.seconds(), run_dir,
                    ranks != nullptr ? fmt::format("rank {} of {}: {}", ranks->rank(), ranks->size(), message) : message);
  };
  const StallWatchdog watchdog(recorder, c.run.stall_timeout_s, on_stall);
  // The score's name in epoch lines ("micro-F1 train ..."; nothing for accuracy, as always).
  const std::string metric = metric_name(c, d);
  const std::string score_label = metric == "accuracy" ? std::string() : metric_label(metric) + " ";
  run_dir.name_score_columns(metric);
  const auto on_epoch = [&](const pipeline::EpochResult& r) {
    epochs.add(r);
    progress.epoch_done(r);
    run_dir.append_metrics(EpochMetrics{r.epoch, r.loss, r.evaluated ? r.train_acc : NAN, r.evaluated ? r.val_acc : NAN,
                                        r.evaluated ? r.test_acc : NAN, r.memory, r.epoch_time_s, {}, r.window,
                                        r.eval_time_s, r.augment});
    if (r.evaluated) {
      // The epoch's time is its training (pipelined: its evaluation overlaps the next epoch's).
      log.info("epoch {:>4} | loss {:.4f} | {}train {:.4f} | val {:.4f} | test {:.4f} | {:.3f} s, eval {:.3f} s{} | {} | {}",
               r.epoch, r.loss, score_label, r.train_acc, r.val_acc, r.test_acc, r.epoch_time_s, r.eval_time_s,
               pipe.mode == pipeline::PipelineMode::kPipelined ? " (overlapped)" : "", memory_note(r.memory, r.data, r.augment),
               r.verdict);
    } else {
      log.info("epoch {:>4} | loss {:.4f} | {:.3f} s | {} | {}", r.epoch, r.loss, r.epoch_time_s, memory_note(r.memory, r.data, r.augment),
               r.verdict);
    }
  };
  pipeline::RunResult result;
  try {
    result = pipeline::run_training(setup, on_epoch);
  } catch (const core::Interrupted& e) {
    if (writer) writer->flush();  // the stop request's checkpoint is on disk before the message names it
    const std::string holds = last.holds();
    // Only rank 0 writes checkpoints: another rank's stop names rank 0's, not a missing one.
    const pipeline::Collective* job = setup.collective;
    if (job != nullptr && job->rank() != 0) {
      GNNPIPE_THROW(Interrupted, "rank {} of {}: {}; rank 0 writes the stop checkpoint", job->rank(), job->size(),
                    e.message());
    }
    if (holds.empty()) GNNPIPE_THROW(Interrupted, "{}; no checkpoint was written (run.checkpoint_every is 0)", e.message());
    GNNPIPE_THROW(Interrupted, "{}; {} holds {}: go on with gnnpipe run CONFIG --resume {}", e.message(),
                  (checkpoints / "last").string(), holds, run_dir.path().string());
  }
  if (writer) writer->flush();  // every checkpoint of the run is on disk before its summary
  const double run_time = run_watch.seconds();
  if (options.on_trained) options.on_trained(resources.model());
  if (result.epochs_run < c.run.epochs) log.info("early stop after epoch {}: no better validation accuracy for {} epochs", result.epochs_run, c.run.patience);
  if (options.trace) recorder.write_chrome_trace(run_dir.path() / "trace.json");

  nlohmann::json summary =
      run_summary(c, d,
                  FinishedRun{.result = result, .plan = plan, .recorder = recorder, .allocator = resources.allocator(),
                              .budget = resources.budget(), .threads = resources.threads(), .mode = pipe.mode,
                              .num_parameters = resources.model().params().size(), .run_time_s = run_time},
                  epochs);
  if (writer) {
    // The writer's own thread: what it wrote, what newer states replaced before it got to them,
    // and its busy time (training never waits for it).
    summary["checkpoints"] = {{"written", writer->written()},
                              {"coalesced", writer->coalesced()},
                              {"last_states", writer->last_states()},
                              {"busy_s", writer->busy_seconds()},
                              {"interval_s", c.run.keep_last > 1 ? 0.0 : c.run.checkpoint_interval_s}};
    log.info("checkpoints: {} written on their own thread ({:.3f} s busy), {} replaced by newer states before written",
             writer->written(), writer->busy_seconds(), writer->coalesced());
  }
  if (setup.collective != nullptr) summary["ranks"] = setup.collective->size();
  run_dir.write_summary(summary);
  log.info("best epoch {}: val {:.4f}, test {:.4f}; median epoch {:.4f} s, run {:.2f} s; {}", result.best_epoch,
           result.best_val, result.test_at_best, summary["epoch_time_s"].get<double>(), run_time,
           run_dir.path().string());
  return summary;
}

}  // namespace

}  // namespace gnnpipe::experiments
