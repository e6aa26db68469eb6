#include "records/training_checkpoints.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "records/json_integer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/experiments/trainer.hpp"

namespace gnnpipe::experiments {
namespace {

// The keys config_hash leaves out. Fixed with the checkpoint format: another list would give every
// earlier checkpoint another hash than its config's, and refuse its resume.
bool hash_free(const std::string& key) {
  return key == "run.epochs" || key == "run.checkpoint_every" || key == "run.keep_last" ||
         key == "run.checkpoint_interval" ||  // added later: hash-free keeps earlier checkpoints' hashes
         key == "pipeline.eval_threads" || key == "dataset.partition";
}

std::string hash_of(const YAML::Node& resolved) {
  std::string text;
  for (const auto& [key, value] : resume_relevant_keys(resolved)) text += key + "=" + value + "\n";
  return fmt::format("{:016x}", fnv1a64(text.data(), text.size()));
}

YAML::Node resolved_of(const config::ExperimentConfig& config) {
  return config.resolved.IsMap() ? config.resolved : config::to_yaml(config);
}

}  // namespace

const std::vector<std::string>& resume_changeable_keys() {
  static const std::vector<std::string> keys{"run.epochs", "run.checkpoint_every", "run.keep_last", "run.patience",
                                             "run.checkpoint_interval", "pipeline.eval_threads",
                                             "dataset.partition"};
  return keys;
}

bool resume_may_change(const std::string& key) {
  const auto& keys = resume_changeable_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<std::pair<std::string, std::string>> resume_relevant_keys(const YAML::Node& resolved) {
  std::map<std::string, std::string> keys = config::flat_keys(resolved);
  std::erase_if(keys, [](const auto& kv) { return hash_free(kv.first); });
  return {keys.begin(), keys.end()};
}

std::string config_hash(const config::ExperimentConfig& config) { return hash_of(resolved_of(config)); }

std::vector<std::string> differing_keys(const YAML::Node& a, const YAML::Node& b) {
  std::map<std::string, std::string> x = config::flat_keys(a), y = config::flat_keys(b);
  std::erase_if(x, [](const auto& kv) { return resume_may_change(kv.first); });
  std::erase_if(y, [](const auto& kv) { return resume_may_change(kv.first); });
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
  nlohmann::json counters = {{"peak_bytes", k.peak_bytes}, {"reserved_bytes", k.reserved_bytes},
                              {"layerwise", k.layerwise}, {"chunks", k.chunks}};
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
                 {"patience", config.run.patience},
                 {"model", {{"in_dim", dims.in_dim}, {"out_dim", dims.out_dim}, {"embedding_rows", dims.embedding_rows}}}};
  if (event.partial) c.run_state["partial_epoch"] = partial_epoch_json(*event.partial);
  if (const auto& a = event.augment) {
    // The keep flags as float32 0/1 (the checkpoint's one array type), the uncertainties as they are.
    const auto flags = [](const std::vector<uint8_t>& keep) { return std::vector<float>(keep.begin(), keep.end()); };
    const auto array = [](const char* name, std::vector<float> values) {
      return CheckpointArray{name, {static_cast<int64_t>(values.size())}, std::move(values)};
    };
    c.augment = {array("edge_keep", flags(a->edge_keep)), array("node_keep", flags(a->node_keep)),
                 array("ent_previous", a->ent_previous), array("ent_last", a->ent_last), array("live", a->live)};
    c.run_state["augment"] = {{"epoch", a->epoch}, {"next_proposal", a->next_proposal}};
  }
  return c;
}

std::optional<pipeline::AugmentCheckpoint> checkpoint_augment(const Checkpoint& c, const std::string& source) {
  if (!c.run_state.is_object() || !c.run_state.contains("augment")) return std::nullopt;
  const JsonSection j = JsonSection{c.run_state, source, "run_state"}.section("augment");
  pipeline::AugmentCheckpoint a;
  a.epoch = j.integer<int>("epoch");
  a.next_proposal = j.integer<int64_t>("next_proposal");
  GNNPIPE_CHECK_DATA(a.epoch == c.epoch && a.next_proposal >= 0,
                     "{}: run_state.augment: epoch {} (the checkpoint's is {}), next proposal {}", source, a.epoch,
                     c.epoch, a.next_proposal);
  const auto find = [&](const char* name) -> const std::vector<float>& {
    for (const CheckpointArray& array : c.augment) {
      if (array.name == name) return array.values;
    }
    GNNPIPE_THROW(DataError, "{}: augment: the array {} is missing", source, name);
  };
  const auto flags = [&](const char* name) {
    std::vector<uint8_t> keep;
    for (const float v : find(name)) {
      GNNPIPE_CHECK_DATA(v == 0.0f || v == 1.0f, "{}: augment.{}: a flag {} is neither 0 nor 1", source, name, v);
      keep.push_back(v != 0.0f ? 1 : 0);
    }
    return keep;
  };
  a.edge_keep = flags("edge_keep");
  a.node_keep = flags("node_keep");
  a.ent_previous = find("ent_previous");
  a.ent_last = find("ent_last");
  a.live = find("live");
  return a;
}

pipeline::PartialEpoch checkpoint_partial_epoch(const Checkpoint& c, const std::string& source) {
  pipeline::PartialEpoch p;
  if (!c.run_state.is_object() || !c.run_state.contains("partial_epoch")) return p;
  const JsonSection j{c.run_state.at("partial_epoch"), source, "run_state.partial_epoch"};
  p.epoch = j.integer<int>("epoch");
  p.batches_done = j.integer<int64_t>("batches_done");
  p.batches = j.integer<int64_t>("batches");
  for (const uint64_t bits : j.integers<uint64_t>("loss_bits")) p.losses.push_back(std::bit_cast<double>(bits));
  p.loss_rows = j.integers<std::size_t>("loss_rows");
  const JsonSection m = j.section("counters");
  pipeline::MemoryCounters& k = p.counters;
  for (const auto& [name, f] : counter_fields(k)) *f = m.integer<int64_t>(name);
  // Absent in checkpoints written before memory.policy layerwise.
  if (m.object.contains("layerwise")) k.layerwise = m.integer<int64_t>("layerwise");
  if (m.object.contains("chunks")) k.chunks = m.integer<int64_t>("chunks");
  k.peak_bytes = m.integer<std::size_t>("peak_bytes");
  k.reserved_bytes = m.integer<std::size_t>("reserved_bytes");
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
  const JsonSection j = JsonSection{c.run_state, source, "run_state"}.section("model");
  dims.in_dim = j.integer<int64_t>("in_dim");
  dims.out_dim = j.integer<int64_t>("out_dim");
  if (j.object.contains("embedding_rows")) dims.embedding_rows = j.integer<int64_t>("embedding_rows");  // absent before model.embedding
  GNNPIPE_CHECK_DATA((dims.in_dim > 0 || dims.embedding_rows > 0) && dims.in_dim >= 0 && dims.out_dim > 0 &&
                         dims.embedding_rows >= 0,
                     "{}: run_state.model: widths {} -> {} (embedding rows {}) are not positive", source, dims.in_dim,
                     dims.out_dim, dims.embedding_rows);
  return dims;
}

pipeline::TrackerState checkpoint_tracker(const Checkpoint& c, const std::string& source) {
  pipeline::TrackerState t;
  const JsonSection j = JsonSection{c.run_state, source, "run_state"}.section("tracker");
  t.best_epoch = j.integer<int>("best_epoch");
  t.since_best = j.integer<int>("since_best");
  t.best_val = j.number("best_val");
  t.test_at_best = j.number("test_at_best");
  t.train_at_best = j.number("train_at_best");
  GNNPIPE_CHECK_DATA(t.best_epoch >= 0 && t.best_epoch <= c.epoch && t.since_best >= 0,
                     "{}: {}: best epoch {} and {} epochs since do not fit a checkpoint after epoch {}", source, j.path,
                     t.best_epoch, t.since_best, c.epoch);
  return t;
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
  const auto has_state = c.run_state.find("has_optimizer_state");
  GNNPIPE_CHECK_DATA(has_state != c.run_state.end() && has_state->is_boolean() && has_state->get<bool>(),
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
  return checkpoint_tracker(c, source);
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
  const YAML::Node now = resolved_of(config);
  const std::vector<std::string> keys = differing_keys(before.resolved, now);
  GNNPIPE_CHECK_CONFIG(keys.empty(), "--resume {}: the config differs from the run's in {} (only {} may change)",
                       run_dir.string(), fmt::join(keys, ", "), fmt::join(resume_changeable_keys(), ", "));
  // run.patience may be raised (or set to 0, never): the run did not stop before its checkpoint
  // with the lower one, so it would not have with the higher one either. A lower one could have.
  const int patience = config.run.patience, patience_before = before.run.patience;
  GNNPIPE_CHECK_CONFIG(patience == 0 || (patience_before != 0 && patience >= patience_before),
                       "run.patience: {} is below the run's {} ({}): a resume may raise it, not lower it (a lower one "
                       "could have stopped the run before its checkpoint)",
                       patience, patience_before == 0 ? std::string("0, never stop") : std::to_string(patience_before),
                       saved.string());
  const std::filesystem::path last = run_dir / "checkpoints" / "last";
  auto checkpoint = std::make_shared<const Checkpoint>(read_checkpoint(last));
  const std::string manifest = (last / "manifest.json").string();
  // The hash covers run.patience as the checkpoint's run had it (a resume may have raised it since).
  int trained_patience = patience_before;
  if (checkpoint->run_state.contains("patience")) {
    trained_patience = json_integer<int>(checkpoint->run_state.at("patience"), manifest + ": run_state.patience");
  }
  YAML::Node as_trained = YAML::Clone(now);
  as_trained["run"]["patience"] = trained_patience;
  GNNPIPE_CHECK_DATA(checkpoint->config_hash == hash_of(as_trained),
                     "{}: written for another config (config_hash {}, this config's {})", manifest,
                     checkpoint->config_hash, hash_of(as_trained));
  GNNPIPE_CHECK_CONFIG(checkpoint->epoch < config.run.epochs,
                       "run.epochs: {}, and {} is after epoch {}: nothing left to train (raise run.epochs)",
                       config.run.epochs, run_dir.string(), checkpoint->epoch);
  (void)resumed_metrics_rows(run_dir / "metrics.csv", checkpoint->epoch);  // its rows up to the checkpoint are there
  // A run that stopped early (run.patience) ended at its checkpoint: resuming it with the same
  // patience would train one epoch more and stop again.
  const pipeline::TrackerState tracker = checkpoint_tracker(*checkpoint, last.string());
  GNNPIPE_CHECK_CONFIG(patience == 0 || tracker.since_best < patience,
                       "run.patience: {}, and {} stopped early after epoch {} (no better validation score for {} epochs "
                       "since epoch {}): nothing left to train (raise run.patience, or set it to 0)",
                       patience, run_dir.string(), checkpoint->epoch, tracker.since_best, tracker.best_epoch);
  return checkpoint;
}

}  // namespace gnnpipe::experiments
