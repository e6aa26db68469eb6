#include "gnnpipe/experiments/config/experiment_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/key_table.hpp"
#include "gnnpipe/experiments/config/dataset_section.hpp"
#include "gnnpipe/experiments/config/sections.hpp"

namespace gnnpipe::experiments::config {
namespace {

const std::vector<std::string> kSections{"name",     "dataset", "model", "sampler", "optimizer",
                                         "pipeline", "memory",  "run",   "augment", "sweep"};

std::string trim(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// The whole config as YAML. `every_key` also emits the keys of every type (attention, both
// optimizers, both dataset sources): that tree is the schema --set paths are checked against.
YAML::Node emit(const ExperimentConfig& c, bool every_key) {
  YAML::Node root(YAML::NodeType::Map);
  root["name"] = c.name;

  YAML::Node dataset = write_keys(c.dataset, dataset_keys(), every_key);
  // keys only when set (or for the schema): runs that name no arrays keep their resolved config.
  if (c.dataset.keys.names_arrays() || every_key) dataset["keys"] = write_keys(c.dataset.keys, dataset_array_keys(), every_key);
  if (c.dataset.synthetic || every_key) {
    const graph::SyntheticOptions s = c.dataset.synthetic.value_or(graph::SyntheticOptions{});
    dataset["synthetic"] = write_keys(s, synthetic_keys(), every_key);
  }
  root["dataset"] = dataset;
  root["model"] = write_keys(c.model, model_keys(), every_key);
  root["sampler"] = write_keys(c.sampler, sampler_keys(), every_key);
  root["optimizer"] = write_keys(c.optimizer, optimizer_keys(), every_key);
  root["pipeline"] = write_keys(c.pipeline, pipeline_keys(), every_key);
  root["memory"] = write_keys(c.memory, memory_keys(), every_key);
  root["run"] = write_keys(c.run, run_keys(), every_key);
  if (c.augment.enabled() || every_key) root["augment"] = write_keys(c.augment, augment_keys(), every_key);
  if (!c.sweep.empty() || every_key) {
    YAML::Node sweep(YAML::NodeType::Map);
    for (const SweepAxis& axis : c.sweep) {
      YAML::Node values(YAML::NodeType::Sequence);
      for (const std::string& v : axis.values) values.push_back(YAML::Load(v));
      values.SetStyle(YAML::EmitterStyle::Flow);
      sweep[axis.key] = values;
    }
    root["sweep"] = sweep;
  }
  return root;
}

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

const YAML::Node& schema();

// The most runs one sweep may expand to: each is parsed before the first starts.
constexpr std::size_t kMaxSweepPoints = 1000;

// sweep: {key.path: [values...]}: each key a --set path of the schema (not sweep or name), each
// value list non-empty, at most kMaxSweepPoints combinations; every combination must parse
// (checked here, before any run).
std::vector<SweepAxis> parse_sweep(const ConfigMap& section, const YAML::Node& root) {
  std::vector<SweepAxis> axes;
  const YAML::Node node = root["sweep"];
  if (!node || node.IsNull()) return axes;
  GNNPIPE_CHECK_CONFIG(node.IsMap(), "sweep: expected a mapping of key paths to lists of values");
  std::size_t points = 1;
  for (const auto& entry : node) {
    // A list or map as a key used to escape as a yaml-cpp exception (tests/fuzz).
    GNNPIPE_CHECK_CONFIG(entry.first.IsScalar(), "sweep: keys must be key paths such as model.hidden");
    SweepAxis axis;
    axis.key = entry.first.Scalar();
    const std::string path = section.key_path(axis.key);
    GNNPIPE_CHECK_CONFIG(axis.key.rfind("sweep", 0) != 0 && axis.key != "name", "{}: cannot be swept", path);
    GNNPIPE_CHECK_CONFIG(entry.second.IsSequence() && entry.second.size() > 0,
                         "{}: expected a non-empty list of values", path);
    // Every point is parsed below: a 40 x 40 x 40 grid took minutes before any run (tests/fuzz).
    points *= entry.second.size();
    GNNPIPE_CHECK_CONFIG(points <= kMaxSweepPoints, "{}: the sweep grid has more than {} runs; split it into several sweeps",
                         path, kMaxSweepPoints);
    for (std::size_t i = 0; i < entry.second.size(); ++i) axis.values.push_back(flow_text(entry.second[i]));
    axes.push_back(std::move(axis));
  }
  YAML::Node base = YAML::Clone(root);
  base.remove("sweep");
  for (const auto& point : sweep_points(axes)) {
    try {
      (void)parse_experiment(base, point);
    } catch (const core::ConfigError& e) {
      GNNPIPE_THROW(ConfigError, "sweep point {}: {}", fmt::join(point, ", "), e.message());
    }
  }
  return axes;
}

const YAML::Node& schema() {
  static const YAML::Node tree = emit(ExperimentConfig{}, /*every_key=*/true);
  return tree;
}

// Whether the dotted `path` names a key of the schema.
bool in_schema(const std::string& path) {
  YAML::Node node = YAML::Clone(schema());
  for (std::size_t start = 0;;) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node.IsMap() || !node[part]) return false;
    node.reset(node[part]);
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

void apply_set(YAML::Node& root, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  GNNPIPE_CHECK_CONFIG(eq != std::string::npos, "--set '{}': expected key.path=value", assignment);
  // "run.epochs = 2" (quoted in a shell) means run.epochs=2.
  const std::string key = trim(assignment.substr(0, eq));
  const std::string value_text = trim(assignment.substr(eq + 1));
  GNNPIPE_CHECK_CONFIG(!key.empty(), "--set '{}': expected key.path=value (the key is missing)", assignment);
  // An empty value is most often an unset shell variable: never read it as "the default".
  GNNPIPE_CHECK_CONFIG(!value_text.empty(), "--set '{}': the value of {} is empty (leave the --set out to keep the "
                       "config's value)", assignment, key);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    GNNPIPE_CHECK_CONFIG(!parts.back().empty(), "--set '{}': empty component in key path '{}'", assignment, key);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }

  // Check the path against the schema, one component at a time.
  YAML::Node known = YAML::Clone(schema());
  std::string prefix;
  for (const auto& part : parts) {
    GNNPIPE_CHECK_CONFIG(known.IsMap(), "--set '{}': {} is a value, not a section", assignment, prefix);
    const std::string path = prefix.empty() ? part : prefix + "." + part;
    if (!known[part]) {
      std::vector<std::string> keys;
      for (const auto& entry : known) keys.push_back(entry.first.as<std::string>());
      const std::string suggestion = closest_key(part, keys);
      GNNPIPE_THROW(ConfigError, "--set '{}': unknown key {}{}", assignment, path,
                    suggestion.empty() ? std::string()
                                       : fmt::format(" (did you mean '{}'?)",
                                                     prefix.empty() ? suggestion : prefix + "." + suggestion));
    }
    known.reset(known[part]);
    prefix = path;
  }

  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    GNNPIPE_THROW(ConfigError, "--set '{}': the value is not valid YAML: {}", assignment, e.msg);
  }
  try {
    check_unique_keys(value);
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "--set '{}': {}", assignment, e.message());
  }

  // Walk down, creating (or replacing non-mapping) sections; reset() rebinds, `=` would overwrite.
  if (!root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
  YAML::Node node = root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    node.reset(node[parts[i]]);
  }
  // key=null removes the key (its default applies: dataset.path=null before dataset.synthetic.*);
  // a null left in the config itself is an error (ConfigMap).
  if (value.IsNull()) {
    node.remove(parts.back());
    return;
  }
  node[parts.back()] = value;
}

ExperimentConfig parse_experiment(const YAML::Node& root_in, const std::vector<std::string>& sets) {
  check_unique_keys(root_in);
  YAML::Node root = YAML::Clone(root_in);
  for (const auto& assignment : sets) apply_set(root, assignment);

  ConfigMap top(root, "");
  top.allow(kSections);
  top.finish();  // a misspelt section first: "modle" should not read as "model missing"
  ExperimentConfig c;
  const auto name = top.get_optional<std::string>("name");
  GNNPIPE_CHECK_CONFIG(name.has_value(), "name: missing (every experiment needs a name; it names the run directory)");
  check_experiment_name(*name);
  c.name = *name;
  GNNPIPE_CHECK_CONFIG(top.has("dataset"), "dataset: missing (every experiment needs a dataset section)");
  c.dataset = parse_dataset_section(top.child("dataset"));
  c.model = parse_model_section(top.child("model"));
  c.sampler = parse_sampler_section(top.child("sampler"));
  c.optimizer = parse_optimizer_section(top.child("optimizer"));
  c.pipeline = parse_pipeline_section(top.child("pipeline"));
  c.memory = parse_memory_section(top.child("memory"));
  c.run = parse_run_section(top.child("run"));
  c.augment = parse_augment_section(top.child("augment"));
  c.sweep = parse_sweep(top.child("sweep"), root);

  // A neighbor sampler samples one layer per fanout, so it cannot have more fanouts than layers.
  if (c.sampler.type == samplers::SamplerType::kNeighbor) {
    GNNPIPE_CHECK_CONFIG(c.sampler.fanouts.size() <= static_cast<std::size_t>(c.model.layers),
                         "sampler.fanouts: has {} entries but model.layers is {} (at most one fanout per layer)",
                         c.sampler.fanouts.size(), c.model.layers);
  }
  // Learned embeddings replace the features: random ones beside them would be read for nothing.
  GNNPIPE_CHECK_CONFIG(c.model.embedding == 0 || c.dataset.random_features == 0,
                       "model.embedding: {} learned embedding columns replace the features, so dataset.random_features "
                       "({}) would not be used; remove one of the two keys",
                       c.model.embedding, c.dataset.random_features);
  // ... and there are no features to place on the device or cache there.
  GNNPIPE_CHECK_CONFIG(c.model.embedding == 0 || c.memory.features == memory::FeaturePlacement::kAuto ||
                           c.memory.features == memory::FeaturePlacement::kHost,
                       "memory.features: {}: model.embedding ({} learned columns) replaces the features, so there are "
                       "none to place; remove memory.features",
                       memory::to_string(c.memory.features), c.model.embedding);
  // A key the parser reads but emit() does not write would be dropped from config.yaml (the run
  // would not replay) and refused by --set: a programming error, caught by every parse.
  for (const std::string& key : top.keys_read()) {
    GNNPIPE_CHECK(in_schema(key), "config key {} is read by the parser but missing from the schema (emit)", key);
  }
  c.resolved = to_yaml(c);
  return c;
}

bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b) {
  return a.name == b.name && a.dataset == b.dataset && a.model == b.model && a.sampler == b.sampler &&
         a.optimizer == b.optimizer && a.pipeline == b.pipeline && a.memory == b.memory && a.run == b.run && a.augment == b.augment &&
         a.sweep == b.sweep;
}

std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& sweep) {
  std::vector<std::vector<std::string>> points{{}};
  for (const SweepAxis& axis : sweep) {
    std::vector<std::vector<std::string>> next;
    for (const auto& point : points) {
      for (const std::string& value : axis.values) {
        next.push_back(point);
        next.back().push_back(axis.key + "=" + value);
      }
    }
    points = std::move(next);
  }
  return sweep.empty() ? std::vector<std::vector<std::string>>{} : points;
}

ExperimentConfig load_experiment(const std::filesystem::path& file, const std::vector<std::string>& sets) {
  const YAML::Node root = load_yaml_file(file);
  try {
    return parse_experiment(root, sets);
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", file.string(), e.message());
  }
}

YAML::Node to_yaml(const ExperimentConfig& config) { return emit(config, /*every_key=*/false); }

YAML::Node to_yaml_schema() { return YAML::Clone(schema()); }

namespace {
void flatten(const YAML::Node& node, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      flatten(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>(), out);
    }
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out[prefix] = e.c_str();
}
}  // namespace

std::map<std::string, std::string> flat_keys(const YAML::Node& node) {
  std::map<std::string, std::string> out;
  flatten(node, "", out);
  return out;
}

std::string yaml_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gnnpipe::experiments::config
