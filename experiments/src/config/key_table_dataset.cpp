// The rows of the `dataset` section and its nested `keys` and `synthetic` sections (key_table.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/key_table.hpp"
#include "gnnpipe/graph/io/load.hpp"

namespace gnnpipe::experiments::config {
namespace {

const char* const kAll = "all";
const char* const kSynthetic = "dataset.synthetic";

}  // namespace

const std::vector<Key<graph::DatasetOptions>>& dataset_keys() {
  using O = graph::DatasetOptions;
  static const std::vector<Key<O>> keys{
      {.name = "path",
       .doc = {"string", kAll,
               "A dataset directory or file; relative paths are looked up under --data-dir, else $GNNPIPE_DATA_DIR, "
               "else the current directory."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.path = s.get<std::string>(key, ""); },
       .write = [](const O& o) { return YAML::Node(o.path); },
       .written = [](const O& o) { return !o.path.empty(); }},
      {.name = "format",
       .doc = {"string", kAll,
               fmt::format("{} (mat: a MATLAB MAT-file with network, group and features).",
                           graph::io::dataset_format_names())},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.format = graph::io::parse_dataset_format(s.get<std::string>(key, "auto"), s.key_path(key));
           },
       .write = [](const O& o) { return text(graph::io::to_string(o.format)); }},
      {.name = "random_features",
       .doc = {"integer", kAll,
               "> 0: seeded random features of this width, for datasets without features (accuracy then "
               "meaningless)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.random_features = s.get<int64_t>(key, 0);
             check_at_least<int64_t>(s, key, o.random_features, 0);
           },
       .write = write_field<O, &O::random_features>},
      {.name = "random_features_seed",
       .doc = {"integer", kAll, "Seed of random_features."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.random_features_seed = s.get<uint64_t>(key, 0); },
       .write = write_field<O, &O::random_features_seed>},
      {.name = "feature_dtype",
       .doc = {"string", kAll,
               "float32, float16 or bfloat16 (fp32, fp16, bf16 as short names): how the features are stored, "
               "gathered and copied. A value float16 cannot hold (beyond 65504) is an error naming it."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.feature_dtype = graph::parse_feature_dtype(s.get<std::string>(key, "float32"), s.key_path(key));
           },
       .write = [](const O& o) { return text(graph::to_string(o.feature_dtype)); }},
      {.name = "normalize_features",
       .doc = {"string", kAll, "none or row (divide each feature row by its sum, as the GCN paper does)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             const std::string normalize = s.get<std::string>(key, "none");
             GNNPIPE_CHECK_CONFIG(normalize == "none" || normalize == "row", "{}: '{}' is not one of none, row",
                                  s.key_path(key), normalize);
             o.normalize_rows = normalize == "row";
           },
       .write = [](const O& o) { return YAML::Node(o.normalize_rows ? "row" : "none"); }},
      // Only when set (or for the schema): earlier runs keep their resolved config.
      {.name = "partition",
       .doc = {"string", kAll,
               "none, hash or metis: in a data-parallel run (mpirun, --ranks), each rank keeps the feature rows of its "
               "part of the nodes (a hash of the id, or METIS parts) and reads the others from their owners; one "
               "process keeps every row. The same training, bit for bit (docs/SCALE.md)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.partition = graph::parse_feature_partition(s.get<std::string>(key, "none"), s.key_path(key));
           },
       .write = [](const O& o) { return text(graph::to_string(o.partition)); },
       .written = [](const O& o) { return o.partition != graph::FeaturePartition::kNone; }},
      // Only when set (or for the schema): runs that name no arrays keep their resolved config.
      {.name = "split",
       .doc = {"integer", kAll,
               "Which split of boolean masks with several to use: a column of [N, splits], a row of "
               "[splits, N] (default 0)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.keys.split = s.get<int64_t>(key, 0);
             check_at_least<int64_t>(s, key, o.keys.split, 0);
           },
       .write = [](const O& o) { return YAML::Node(o.keys.split); },
       .written = [](const O& o) { return o.keys.split != 0; }},
  };
  return keys;
}

const std::vector<Key<graph::io::ArrayKeys>>& dataset_array_keys() {
  using O = graph::io::ArrayKeys;
  const graph::io::DefaultArrayNames& names = graph::io::kDefaultArrayNames;
  const auto defaults = [](const std::vector<const char*>& list) { return fmt::format("{}", fmt::join(list, ", ")); };
  static const std::vector<Key<O>> keys{
      {.name = "edges",
       .doc = {"string", kAll, "Array name of an .npz's edge list, [2, E] or [E, 2] (default: " + defaults(names.edges) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.edges = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::edges>},
      {.name = "features",
       .doc = {"string", kAll, "Array name of the features (default: " + defaults(names.features) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.features = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::features>},
      {.name = "labels",
       .doc = {"string", kAll, "Array name of the labels (default: " + defaults(names.labels) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.labels = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::labels>},
      {.name = "train",
       .doc = {"string", kAll, "Array name of the train mask or node ids (default: " + defaults(names.train) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.train = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::train>},
      {.name = "val",
       .doc = {"string", kAll, "Array name of the validation split (default: " + defaults(names.val) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.val = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::val>},
      {.name = "test",
       .doc = {"string", kAll, "Array name of the test split (default: " + defaults(names.test) + ")."},
       .read = [](ConfigMap& s, const std::string& key, O& o) { o.test = s.get<std::string>(key, ""); },
       .write = write_field<O, &O::test>},
  };
  return keys;
}

const std::vector<Key<graph::SyntheticOptions>>& synthetic_keys() {
  using O = graph::SyntheticOptions;
  static const std::vector<Key<O>> keys{
      {.name = "nodes", .doc = {"integer", kSynthetic, "Number of nodes."},
       .read = read_field<O, &O::nodes>, .write = write_field<O, &O::nodes>},
      {.name = "avg_degree", .doc = {"number", kSynthetic, "Average undirected degree."},
       .read = read_field<O, &O::avg_degree>, .write = write_number<O, &O::avg_degree>},
      {.name = "features", .doc = {"integer", kSynthetic, "Feature width."},
       .read = read_field<O, &O::features>, .write = write_field<O, &O::features>},
      {.name = "classes", .doc = {"integer", kSynthetic, "Classes (= communities)."},
       .read = read_field<O, &O::classes>, .write = write_field<O, &O::classes>},
      {.name = "seed", .doc = {"integer", kSynthetic, "Seed of the generator."},
       .read = read_field<O, &O::seed>, .write = write_field<O, &O::seed>},
      {.name = "homophily", .doc = {"number", kSynthetic, "Share of edges inside a community."},
       .read = read_field<O, &O::homophily>, .write = write_number<O, &O::homophily>},
      {.name = "power_law_exponent", .doc = {"number", kSynthetic, "Exponent of the degree distribution."},
       .read = read_field<O, &O::power_law_exponent>, .write = write_number<O, &O::power_law_exponent>},
      {.name = "feature_noise", .doc = {"number", kSynthetic, "Std of the noise added to each class centroid."},
       .read = read_field<O, &O::feature_noise>, .write = write_number<O, &O::feature_noise>},
      {.name = "train_fraction", .doc = {"number", kSynthetic, "Share of nodes in the training split."},
       .read = read_field<O, &O::train_fraction>, .write = write_number<O, &O::train_fraction>},
      {.name = "val_fraction", .doc = {"number", kSynthetic, "Share of nodes in the validation split."},
       .read = read_field<O, &O::val_fraction>, .write = write_number<O, &O::val_fraction>},
  };
  return keys;
}

}  // namespace gnnpipe::experiments::config
