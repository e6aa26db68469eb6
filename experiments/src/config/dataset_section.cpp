#include "gnnpipe/experiments/config/dataset_section.hpp"

namespace gnnpipe::experiments::config {

graph::DatasetOptions parse_dataset_section(ConfigMap section) {
  graph::DatasetOptions o;
  o.path = section.get<std::string>("path", "");
  o.format = graph::io::parse_dataset_format(section.get<std::string>("format", "auto"), section.key_path("format"));
  o.random_features = section.get<int64_t>("random_features", 0);
  GNNPIPE_CHECK_CONFIG(o.random_features >= 0, "{}: must be >= 0, got {}", section.key_path("random_features"),
                       o.random_features);
  o.random_features_seed = section.get<uint64_t>("random_features_seed", 0);
  o.feature_dtype = graph::parse_feature_dtype(section.get<std::string>("feature_dtype", "float32"),
                                               section.key_path("feature_dtype"));
  const std::string normalize = section.get<std::string>("normalize_features", "none");
  GNNPIPE_CHECK_CONFIG(normalize == "none" || normalize == "row", "{}: '{}' is not one of none, row",
                       section.key_path("normalize_features"), normalize);
  o.normalize_rows = normalize == "row";
  o.keys.split = section.get<int64_t>("split", 0);
  GNNPIPE_CHECK_CONFIG(o.keys.split >= 0, "{}: must be >= 0, got {}", section.key_path("split"), o.keys.split);
  if (section.has("keys")) {
    ConfigMap k = section.child("keys");
    o.keys.edges = k.get<std::string>("edges", "");
    o.keys.features = k.get<std::string>("features", "");
    o.keys.labels = k.get<std::string>("labels", "");
    o.keys.train = k.get<std::string>("train", "");
    o.keys.val = k.get<std::string>("val", "");
    o.keys.test = k.get<std::string>("test", "");
    k.finish();
  }
  section.allow({"synthetic", "keys"});
  section.finish();  // unknown keys first: a typo of `path` should say so, not "set exactly one"
  GNNPIPE_CHECK_CONFIG(o.path.empty() == section.has("synthetic"), "{}: set exactly one of path and synthetic",
                       section.path());
  if (section.has("synthetic")) {
    ConfigMap s = section.child("synthetic");
    graph::SyntheticOptions so;
    so.nodes = s.get("nodes", so.nodes);
    so.avg_degree = s.get("avg_degree", so.avg_degree);
    so.features = s.get("features", so.features);
    so.classes = s.get("classes", so.classes);
    so.seed = s.get("seed", so.seed);
    so.homophily = s.get("homophily", so.homophily);
    so.power_law_exponent = s.get("power_law_exponent", so.power_law_exponent);
    so.feature_noise = s.get("feature_noise", so.feature_noise);
    so.train_fraction = s.get("train_fraction", so.train_fraction);
    so.val_fraction = s.get("val_fraction", so.val_fraction);
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
    top.allow({"name", "model", "sampler", "optimizer", "pipeline", "memory", "run"});
    top.finish();
    return options;
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", path.string(), e.message());
  }
}

}  // namespace gnnpipe::experiments::config
