#include "records/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "gnnpipe/core/process.hpp"
#include "records/provenance.hpp"
#include "records/run_stats.hpp"

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

nlohmann::json plan_json(const pipeline::MemoryPlan& p) {
  return {{"budget_bytes", p.budget},
          {"limit_bytes", p.limit},
          {"reserve_bytes", p.reserve},
          {"free_at_start_bytes", p.free_at_start},
          {"clamped", p.clamped},
          {"policy", p.policy},
          {"resident",
           {{"parameters", p.parameters},
            {"optimizer", p.optimizer},
            {"eval_twin", p.eval_twin},
            {"library", p.library},
            {"other", p.other},
            {"evaluation", p.evaluation},
            {"device_slots", p.device_slots},
            {"device_slot_count", p.device_slot_count}}},
          {"epoch1",
           {{"batches", p.batches},
            {"fit", p.counters.fit},
            {"split", p.counters.split},
            {"micro_batches", p.counters.micro_batches},
            {"resampled", p.counters.resampled},
            {"cut", p.counters.cut},
            {"edges_cut", p.counters.edges_cut},
            {"largest_split", p.largest_split},
            {"layerwise", p.counters.layerwise},
            {"layerwise_chunks", p.layerwise_chunks},
            {"layerwise_chunk_rows", p.layerwise_chunk_rows},
            {"layerwise_moved_bytes", p.layerwise_moved},
            {"layerwise_outputs", p.layerwise_outputs},
            {"layerwise_inputs", p.layerwise_inputs},
            {"largest_batch_peak_bytes", p.largest_batch_peak}}},
          {"batch_placement", p.resident_batch ? "resident" : "moved"},
          {"eval_graph_bytes", p.eval_graph},
          {"eval_outputs_on_device", p.eval_outputs_on_device},
          {"eval_whole", p.eval_whole},
          {"features", p.features},
          {"device_features_bytes", p.device_features},
          {"cache_rows", p.cache_rows},
          {"host_dataset_bytes", p.host_dataset},
          {"host_staging_bytes", p.host_staging}};
}

// A multi-label epoch's F1 scores of val and test (micro- and macro-F1, at 0.5 and top-k).
void add_f1_scores(nlohmann::json& j, const pipeline::EpochResult& r) {
  for (const auto& [split, m] : {std::pair{"val", r.val_f1}, std::pair{"test", r.test_f1}}) {
    j[fmt::format("{}_micro_f1", split)] = m.micro;
    j[fmt::format("{}_macro_f1", split)] = m.macro;
    j[fmt::format("{}_micro_f1_topk", split)] = m.micro_topk;
    j[fmt::format("{}_macro_f1_topk", split)] = m.macro_topk;
  }
}

nlohmann::json epoch_json(const std::optional<pipeline::EpochResult>& r, const std::string& metric) {
  if (!r) return nullptr;
  nlohmann::json j = {{"epoch", r->epoch}, {"loss", r->loss}, {"epoch_time_s", r->epoch_time_s}};
  if (r->evaluated) {
    j["train_" + metric] = r->train_acc;
    j["val_" + metric] = r->val_acc;
    j["test_" + metric] = r->test_acc;
    if (metric != "accuracy") add_f1_scores(j, *r);
  }
  return j;
}

// "memory": the run's peaks, its budget, and what the governor did with its batches.
nlohmann::json memory_json(const config::ExperimentConfig& c, const FinishedRun& run) {
  const pipeline::RunResult& result = run.result;
  const auto stats = run.allocator.stats();
  return {{"peak_host_bytes", core::peak_rss_bytes()},
          {"peak_device_bytes", stats.peak_in_use_bytes},
          {"device_driver_allocations", stats.driver_allocations},
          {"allocator", std::string(memory::to_string(run.allocator.mode()))},
          {"peak_held_bytes", stats.peak_held_bytes},
          {"staging_bytes", result.staging_bytes},
          {"budget_bytes", run.budget.budget},
          {"limit_bytes", run.budget.limit},
          {"reserve_bytes", run.budget.reserve},
          {"policy", std::string(memory::to_string(c.memory.policy))},
          {"batches_fit", result.memory.fit},
          {"batches_split", result.memory.split},
          {"micro_batches", result.memory.micro_batches},
          {"batches_resampled", result.memory.resampled},
          {"batches_cut", result.memory.cut},
          {"edges_cut", result.memory.edges_cut},
          {"batches_retried", result.memory.retried},
          {"batches_layerwise", result.memory.layerwise},
          {"layerwise_chunks", result.memory.chunks},
          {"batches_augment_reforwarded", result.memory.augment_reforwarded},
          {"predictor_mape", result.predictor_mape},
          {"predictor_max_error", result.predictor_max_error},
          {"predictor_observations", result.predictor_observations},
          {"plan", plan_json(run.plan)}};
}

// "data_movement": bytes gathered and copied over the run, and a feature cache's hit rate.
nlohmann::json data_movement_json(const pipeline::RunResult& result) {
  const pipeline::DataMovement& data = result.data;
  const int64_t batches_run = result.memory.batches();
  const uint64_t rows = data.cache_hit_rows + data.cache_miss_rows;
  return {{"host_gathered_bytes", data.host_gathered_bytes},
          {"copied_bytes", data.copied_bytes},
          {"device_gathered_bytes", data.device_gathered_bytes},
          {"cache_hit_rows", data.cache_hit_rows},
          {"cache_miss_rows", data.cache_miss_rows},
          // null without a cache (JSON has no NaN)
          {"cache_hit_rate", rows > 0 ? nlohmann::json(static_cast<double>(data.cache_hit_rows) / static_cast<double>(rows))
                                      : nlohmann::json()},
          {"copied_bytes_per_batch", batches_run > 0 ? data.copied_bytes / static_cast<uint64_t>(batches_run) : 0}};
}

}  // namespace

std::string metric_name(const config::ExperimentConfig& c, const graph::Dataset& d) {
  return metric_for(c.run.metric, d.labels.is_multi_label());
}

nlohmann::json run_summary(const config::ExperimentConfig& c, const graph::Dataset& d, const FinishedRun& run,
                           const EpochRecord& epochs) {
  const pipeline::RunResult& result = run.result;
  nlohmann::json stages = nlohmann::json::object(), detail = nlohmann::json::object();
  const auto totals = run.recorder.totals();
  for (const auto& [stage, t] : totals) {
    stages[std::string(pipeline::to_string(stage))] = t.busy_s;
    detail[std::string(pipeline::to_string(stage))] = {{"busy_s", t.busy_s}, {"wait_s", t.wait_s}, {"items", t.items}, {"cpu_s", t.cpu_s}};
  }
  const std::string metric = metric_name(c, d);
  nlohmann::json summary = {
      {"name", c.name},
      {"status", "done"},
      {"dataset", d.name},
      {"synthesized", d.synthesized},
      {"metric", metric},
      {"test_" + metric, result.test_at_best},
      {"val_" + metric, result.best_val},
      {"train_" + metric, result.train_at_best},
      {"best_epoch", result.best_epoch},
      {"epochs", result.epochs_run},
      {"epoch_time_s", median(result.epoch_times)},
      {"epoch_time_mean_s", mean(result.epoch_times)},
      {"run_time_s", run.run_time_s},
      {"train_span_s", result.span_s},
      {"device", c.run.device.str()},
      {"mode", std::string(pipeline::to_string(run.mode))},
      {"sampler", std::string(samplers::to_string(c.sampler.type))},
      {"full_batch", c.sampler.type == samplers::SamplerType::kFull},
      {"params_checksum", fmt::format("{:016x}", result.params_checksum)},
      {"num_parameters", run.num_parameters},
      {"stage_busy_s", stages},
      {"stage_note", "stage_busy_s and stage_detail are totals over the run's epochs; in pipelined mode the stages "
                     "overlap, so their sum can exceed run_time_s"},
      {"stage_detail", detail},
      {"trainer_wait_s", totals.at(pipeline::Stage::kTrain).wait_s},
      {"max_batches_in_flight", result.max_in_flight},
      {"stage_retries", result.memory.stage_retries},
      {"threads", run.threads.json()},
      {"memory", memory_json(c, run)},
      {"data_movement", data_movement_json(result)},
      {"provenance", provenance(c, d, run.threads.json())},
      {"epoch_times_s", result.epoch_times},
  };
  if (result.augment) {
    // MH-Aug's chain over the run (issue #41): its last state's realised drop ratios.
    const pipeline::AugmentCounters& a = *result.augment;
    summary["augment"] = {{"type", "mh"},
                          {"proposals", a.proposals},
                          {"acceptances", a.acceptances},
                          {"acceptance_rate", a.acceptance_rate()},
                          {"delta_e", a.delta_e},
                          {"delta_v", a.delta_v},
                          {"chain_s", a.chain_s},
                          {"sample_wait_s", a.wait_s}};
  }
  if (const graph::FeatureShard* shard = d.features.shard()) {
    // dataset.partition (issue #42 item 2): what this rank held, and what it read from the others.
    const graph::RowOwners& o = shard->owners;
    summary["feature_partition"] = {
        {"scheme", graph::to_string(o.scheme)},
        {"ranks", o.ranks},
        {"rows_per_rank", o.shard_rows},
        {"rows_held", d.features.local_rows()},
        {"bytes_held", static_cast<std::size_t>(d.features.local_rows()) * d.features.bytes_per_row()},
        {"remote_rows_read", shard->remote_rows.load()},
        {"remote_bytes_read", static_cast<std::size_t>(shard->remote_rows.load()) * d.features.bytes_per_row()},
        {"remote_read_s", static_cast<double>(shard->remote_ns.load()) * 1e-9}};
  }
  if (d.labels.is_multi_label()) {
    const std::lock_guard lock(epochs.mutex);
    if (epochs.best) add_f1_scores(summary, *epochs.best);
    summary["metric_note"] = fmt::format(
        "{}: the score of best_epoch (run.metric); micro_f1 / macro_f1: labels with a logit > 0 (threshold 0.5); "
        "*_topk: each node predicted its true number of labels, the highest scores (the DeepWalk protocol)",
        metric);
  }
  return summary;
}

nlohmann::json stopped_summary(const config::ExperimentConfig& c, const graph::Dataset& d, const EpochRecord& epochs,
                               double run_time) {
  const std::lock_guard lock(epochs.mutex);
  return {{"name", c.name},
          {"dataset", d.name},
          {"device", c.run.device.str()},
          {"sampler", std::string(samplers::to_string(c.sampler.type))},
          {"epochs", epochs.last ? epochs.last->epoch : 0},
          {"best_epoch", epochs.best ? epochs.best->epoch : 0},
          {"metric", metric_name(c, d)},
          {"last", epoch_json(epochs.last, metric_name(c, d))},
          {"best", epoch_json(epochs.best, metric_name(c, d))},
          {"run_time_s", run_time},
          {"provenance", provenance(c, d, nullptr)}};
}

}  // namespace gnnpipe::experiments
