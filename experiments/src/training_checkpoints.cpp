#include "training_checkpoints.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "json_integer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/experiments/trainer.hpp"

namespace gnnpipe::experiments {
namespace {

std::map<std::string, std::string> relevant(const YAML::Node& resolved) {
  std::map<std::string, std::string> all = config::flat_keys(resolved);
  std::erase_if(all, [](const auto& kv) { return resume_may_change(kv.first); });
  return all;
}

}  // namespace

bool resume_may_change(const std::string& key) {
  return key == "run.epochs" || key == "run.checkpoint_every" || key == "run.keep_last";
}

std::vector<std::pair<std::string, std::string>> resume_relevant_keys(const YAML::Node& resolved) {
  const std::map<std::string, std::string> keys = relevant(resolved);
  return {keys.begin(), keys.end()};
}

std::string config_hash(const config::ExperimentConfig& config) {
  std::string text;
  for (const auto& [key, value] : resume_relevant_keys(config.resolved.IsMap() ? config.resolved : config::to_yaml(config))) {
    text += key + "=" + value + "\n";
  }
  return fmt::format("{:016x}", fnv1a64(text.data(), text.size()));
}

std::vector<std::string> differing_keys(const YAML::Node& a, const YAML::Node& b) {
  const std::map<std::string, std::string> x = relevant(a), y = relevant(b);
  std::vector<std::string> out;
  for (const auto& [key, value] : x) {
    const auto it = y.find(key);
    if (it == y.end() || it->second != value) out.push_back(key);
  }
  for (const auto& [key, value] : y) {
    if (!x.contains(key)) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// A stopped epoch's integer counts by name in run_state.partial_epoch.counters (writing and
// reading use this one list).
std::array<std::pair<const char*, int64_t*>, 10> counter_fields(pipeline::MemoryCounters& k) {
  return {{{"fit", &k.fit}, {"split", &k.split}, {"micro_batches", &k.micro_batches}, {"resampled", &k.resampled},
           {"cut", &k.cut}, {"edges_cut", &k.edges_cut}, {"retried", &k.retried}, {"seeds", &k.seeds},
           {"edges", &k.edges}, {"stage_retries", &k.stage_retries}}};
}

nlohmann::json partial_epoch_json(const pipeline::PartialEpoch& p) {
  pipeline::MemoryCounters k = p.counters;
  nlohmann::json counters = {{"peak_bytes", k.peak_bytes}, {"reserved_bytes", k.reserved_bytes}};
  for (const auto& [name, field] : counter_fields(k)) counters[name] = *field;
  std::vector<uint64_t> loss_bits;
  for (const double loss : p.losses) loss_bits.push_back(std::bit_cast<uint64_t>(loss));
  return {{"epoch", p.epoch},
          {"batches_done", p.batches_done},
          {"batches", p.batches},
          {"loss_bits", loss_bits},  // each loss's IEEE bits: exact, NaN and infinities too
          {"loss_rows", p.loss_rows},
          {"counters", counters}};
}

}  // namespace

Checkpoint to_checkpoint(const pipeline::CheckpointEvent& event, const models::ParamStore<float>& params,
                         const config::ExperimentConfig& config, ModelDims dims) {
  Checkpoint c;
  c.epoch = event.epoch;
  c.config_hash = config_hash(config);
  GNNPIPE_CHECK(event.parameters.size() == params.size(), "checkpoint: {} parameter values for a model of {}",
                event.parameters.size(), params.size());
  for (std::size_t i = 0; i < params.count(); ++i) {
    const auto& p = params.param(i);
    const auto begin = event.parameters.begin() + static_cast<std::ptrdiff_t>(p.offset);
    c.parameters.push_back({p.name, {p.rows, p.cols}, std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(p.size()))});
  }
  c.optimizer = std::string(models::to_string(config.optimizer.type));
  if (event.optimizer) {
    c.optimizer_steps = event.optimizer->steps;
    for (const auto& [name, values] : event.optimizer->arrays) {
      c.optimizer_state.push_back({name, {static_cast<int64_t>(values.size())}, values});
    }
  }
  const pipeline::TrackerState& t = event.tracker;
  c.run_state = {{"tracker",
                  {{"best_epoch", t.best_epoch},
                   {"since_best", t.since_best},
                   {"best_val", t.best_val},
                   {"test_at_best", t.test_at_best},
                   {"train_at_best", t.train_at_best}}},
                 {"rng",
                  {{"seed", config.run.seed},
                   {"next_epoch", event.epoch + 1},
                   {"next_batch", event.partial ? event.partial->batches_done : 0}}},
                 {"has_optimizer_state", event.optimizer.has_value()},
                 {"model", {{"in_dim", dims.in_dim}, {"out_dim", dims.out_dim}, {"embedding_rows", dims.embedding_rows}}}};
  if (event.partial) c.run_state["partial_epoch"] = partial_epoch_json(*event.partial);
  return c;
}

pipeline::PartialEpoch checkpoint_partial_epoch(const Checkpoint& c, const std::string& source) {
  pipeline::PartialEpoch p;
  if (!c.run_state.contains("partial_epoch")) return p;
  try {
    const nlohmann::json& j = c.run_state.at("partial_epoch");
    const std::string where = source + ": run_state.partial_epoch";
    p.epoch = json_integer<int>(j.at("epoch"), where + ".epoch");
    p.batches_done = json_integer<int64_t>(j.at("batches_done"), where + ".batches_done");
    p.batches = json_integer<int64_t>(j.at("batches"), where + ".batches");
    for (const uint64_t bits : json_integers<uint64_t>(j.at("loss_bits"), where + ".loss_bits")) {
      p.losses.push_back(std::bit_cast<double>(bits));
    }
    p.loss_rows = json_integers<std::size_t>(j.at("loss_rows"), where + ".loss_rows");
    const nlohmann::json& m = j.at("counters");
    pipeline::MemoryCounters& k = p.counters;
    for (const auto& [name, field] : counter_fields(k)) *field = json_integer<int64_t>(m.at(name), where + ".counters." + name);
    k.peak_bytes = json_integer<std::size_t>(m.at("peak_bytes"), where + ".counters.peak_bytes");
    k.reserved_bytes = json_integer<std::size_t>(m.at("reserved_bytes"), where + ".counters.reserved_bytes");
  } catch (const nlohmann::json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: run_state.partial_epoch: {}", source, e.what());
  }
  GNNPIPE_CHECK_DATA(p.epoch == c.epoch + 1 && p.batches_done >= 0 && p.batches_done < p.batches &&
                         p.losses.size() == static_cast<std::size_t>(p.batches_done) &&
                         p.loss_rows.size() == p.losses.size(),
                     "{}: run_state.partial_epoch: epoch {} after {} complete, batch {} of {}, {} losses and {} loss rows "
                     "do not describe a stopped epoch",
                     source, p.epoch, c.epoch, p.batches_done, p.batches, p.losses.size(), p.loss_rows.size());
  return p;
}

ModelDims checkpoint_model_dims(const Checkpoint& c, const std::string& source) {
  ModelDims dims;
  try {
    const nlohmann::json& j = c.run_state.at("model");
    dims.in_dim = json_integer<int64_t>(j.at("in_dim"), source + ": run_state.model.in_dim");
    dims.out_dim = json_integer<int64_t>(j.at("out_dim"), source + ": run_state.model.out_dim");
    if (j.contains("embedding_rows")) {  // absent before model.embedding existed
      dims.embedding_rows = json_integer<int64_t>(j.at("embedding_rows"), source + ": run_state.model.embedding_rows");
    }
  } catch (const nlohmann::json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: run_state.model: {}", source, e.what());
  }
  GNNPIPE_CHECK_DATA((dims.in_dim > 0 || dims.embedding_rows > 0) && dims.in_dim >= 0 && dims.out_dim > 0 &&
                         dims.embedding_rows >= 0,
                     "{}: run_state.model: widths {} -> {} (embedding rows {}) are not positive", source, dims.in_dim,
                     dims.out_dim, dims.embedding_rows);
  return dims;
}

void restore_parameters(const Checkpoint& c, const std::string& source, models::GnnModel<float>& model) {
  models::ParamStore<float>& params = model.params();
  GNNPIPE_CHECK_DATA(c.parameters.size() == params.count(), "{}: {} parameter arrays, the model has {}", source,
                     c.parameters.size(), params.count());
  std::vector<float> values(params.size());
  for (std::size_t i = 0; i < params.count(); ++i) {
    const auto& p = params.param(i);
    const CheckpointArray& a = c.parameters[i];
    const std::vector<int64_t> shape{p.rows, p.cols};
    GNNPIPE_CHECK_DATA(a.name == p.name && a.shape == shape,
                       "{}: array {} is '{}' {}, the model's is '{}' [{}, {}]", source, i, a.name,
                       fmt::format("[{}]", fmt::join(a.shape, ", ")), p.name, p.rows, p.cols);
    std::copy(a.values.begin(), a.values.end(), values.begin() + static_cast<std::ptrdiff_t>(p.offset));
  }
  params.values_from_host(values, model.context().stream());
}

pipeline::TrackerState restore_checkpoint(const Checkpoint& c, const std::string& source, models::GnnModel<float>& model,
                                          models::Optimizer<float>& optimizer) {
  GNNPIPE_CHECK_DATA(c.run_state.value("has_optimizer_state", false),
                     "{}: holds no optimizer state (a best-model checkpoint): resume from checkpoints/last", source);
  models::OptimizerHostState<float> state;
  state.steps = c.optimizer_steps;
  for (const CheckpointArray& a : c.optimizer_state) state.arrays.emplace_back(a.name, a.values);
  restore_parameters(c, source, model);
  try {
    optimizer.state_from_host(state);
  } catch (const core::DataError& e) {
    GNNPIPE_THROW(DataError, "{}: {}", source, e.message());
  }
  pipeline::TrackerState t;
  try {
    const nlohmann::json& j = c.run_state.at("tracker");
    t.best_epoch = json_integer<int>(j.at("best_epoch"), source + ": run_state.tracker.best_epoch");
    t.since_best = json_integer<int>(j.at("since_best"), source + ": run_state.tracker.since_best");
    t.best_val = j.at("best_val").get<double>();
    t.test_at_best = j.at("test_at_best").get<double>();
    t.train_at_best = j.at("train_at_best").get<double>();
  } catch (const nlohmann::json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: run_state.tracker: {}", source, e.what());
  }
  return t;
}

std::shared_ptr<const Checkpoint> load_resume_checkpoint(const config::ExperimentConfig& config,
                                                         const std::filesystem::path& run_dir) {
  const std::filesystem::path saved = run_dir / "config.yaml";
  GNNPIPE_CHECK_CONFIG(std::filesystem::is_directory(run_dir), "--resume {}: not a directory", run_dir.string());
  GNNPIPE_CHECK_DATA(std::filesystem::is_regular_file(saved), "{}: missing (--resume takes a run directory)", saved.string());
  config::ExperimentConfig before;
  try {
    before = config::parse_experiment(YAML::LoadFile(saved.string()));
  } catch (const YAML::Exception& e) {
    GNNPIPE_THROW(DataError, "{}: {}", saved.string(), e.what());
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(DataError, "{}: {}", saved.string(), e.message());
  }
  const YAML::Node now = config.resolved.IsMap() ? config.resolved : config::to_yaml(config);
  const std::vector<std::string> keys = differing_keys(before.resolved, now);
  GNNPIPE_CHECK_CONFIG(keys.empty(),
                       "--resume {}: the config differs from the run's in {} (only run.epochs and run.checkpoint_every "
                       "may change)",
                       run_dir.string(), fmt::join(keys, ", "));
  auto checkpoint = std::make_shared<const Checkpoint>(read_checkpoint(run_dir / "checkpoints" / "last"));
  GNNPIPE_CHECK_DATA(checkpoint->config_hash == config_hash(config),
                     "{}: written for another config (config_hash {}, this config's {})",
                     (run_dir / "checkpoints" / "last" / "manifest.json").string(), checkpoint->config_hash,
                     config_hash(config));
  GNNPIPE_CHECK_CONFIG(checkpoint->epoch < config.run.epochs,
                       "run.epochs: {}, and {} is after epoch {}: nothing left to train (raise run.epochs)",
                       config.run.epochs, run_dir.string(), checkpoint->epoch);
  return checkpoint;
}

}  // namespace gnnpipe::experiments
