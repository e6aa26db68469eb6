#include "gnnpipe/experiments/config/dataset_section.hpp"

#include "config/key_table.hpp"

namespace gnnpipe::experiments::config {

graph::DatasetOptions parse_dataset_section(ConfigMap section) {
  graph::DatasetOptions o;
  read_keys(section, o, dataset_keys());
  if (section.has("keys")) {
    ConfigMap k = section.child("keys");
    read_keys(k, o.keys, dataset_array_keys());
    k.finish();
  }
  section.allow({"synthetic", "keys"});
  section.finish();  // unknown keys first: a typo of `path` should say so, not "set exactly one"
  GNNPIPE_CHECK_CONFIG(o.path.empty() == section.has("synthetic"), "{}: set exactly one of path and synthetic",
                       section.path());
  if (section.has("synthetic")) {
    ConfigMap s = section.child("synthetic");
    graph::SyntheticOptions so;
    read_keys(s, so, synthetic_keys());
    s.finish();
    try {
      graph::validate(so);
    } catch (const core::ConfigError& e) {
      // validate() names fields as "synthetic.x": give the full key path.
      GNNPIPE_THROW(ConfigError, "{}.{}", section.path(), e.message());
    }
    o.synthetic = so;
  }
  return o;
}

graph::DatasetOptions read_dataset_options(const std::filesystem::path& path) {
  const YAML::Node root = load_yaml_file(path);
  try {
    ConfigMap top(root, "");
    GNNPIPE_CHECK_CONFIG(top.has("dataset"), "dataset: missing (every experiment needs a dataset section)");
    graph::DatasetOptions options = parse_dataset_section(top.child("dataset"));
    top.allow({"name", "model", "sampler", "optimizer", "pipeline", "memory", "run", "augment"});
    top.finish();
    return options;
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", path.string(), e.message());
  }
}

}  // namespace gnnpipe::experiments::config
