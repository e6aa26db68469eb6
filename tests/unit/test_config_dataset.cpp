#include <catch2/catch.hpp>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/config/dataset_section.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe::experiments::config;
using gnnpipe::core::ConfigError;

namespace {
gnnpipe::graph::DatasetOptions parse(const std::string& yaml) {
  return parse_dataset_section(ConfigMap(YAML::Load(yaml), "dataset"));
}
}  // namespace

TEST_CASE("the dataset section reads path, format, random features and dtype", "[config]") {
  const auto o = parse("{path: ogbn-arxiv/netbenchmark, format: saint, random_features: 128, feature_dtype: bf16}");
  CHECK(o.path == "ogbn-arxiv/netbenchmark");
  CHECK(o.format == gnnpipe::graph::io::DatasetFormat::kSaint);
  CHECK(o.random_features == 128);
  CHECK(o.feature_dtype == gnnpipe::graph::FeatureDType::kBFloat16);
  CHECK_FALSE(o.synthetic.has_value());
  CHECK_FALSE(o.normalize_rows);
  CHECK(parse("{path: cora, normalize_features: row}").normalize_rows);
  CHECK_THROWS_WITH(parse("{path: cora, normalize_features: l2}"),
                    Catch::Contains("dataset.normalize_features: 'l2' is not one of none, row"));
  CHECK(o.partition == gnnpipe::graph::FeaturePartition::kNone);
  CHECK(parse("{path: cora, partition: hash}").partition == gnnpipe::graph::FeaturePartition::kHash);
  CHECK(parse("{path: cora, partition: metis}").partition == gnnpipe::graph::FeaturePartition::kMetis);
  CHECK_THROWS_WITH(parse("{path: cora, partition: random}"),
                    Catch::Contains("dataset.partition: 'random' is not one of none, hash, metis"));
}

TEST_CASE("the dataset section reads the array names of an .npz and the split column", "[config]") {
  const auto o = parse("{path: mine.npz, keys: {edges: links, features: attributes, train: tr}, split: 3}");
  CHECK(o.keys.edges == "links");
  CHECK(o.keys.features == "attributes");
  CHECK(o.keys.train == "tr");
  CHECK(o.keys.labels.empty());
  CHECK(o.keys.split == 3);
  CHECK(parse("{path: cora}").keys.empty());
  CHECK_THROWS_WITH(parse("{path: a.npz, keys: {edge: e}}"), Catch::Contains("dataset.keys.edge: unknown key"));
  CHECK_THROWS_WITH(parse("{path: a.npz, split: -1}"), Catch::Contains("dataset.split: must be >= 0, got -1"));
}

TEST_CASE("the dataset section reads a synthetic graph with defaults for missing keys", "[config]") {
  const auto o = parse("{synthetic: {nodes: 5000, avg_degree: 8, classes: 5, seed: 3}}");
  REQUIRE(o.synthetic.has_value());
  CHECK(o.synthetic->nodes == 5000);
  CHECK(o.synthetic->avg_degree == 8.0);
  CHECK(o.synthetic->classes == 5);
  CHECK(o.synthetic->seed == 3);
  CHECK(o.synthetic->features == 64);
  const auto d = gnnpipe::graph::load_dataset(o, ".");
  CHECK(d.num_nodes() == 5000);
  CHECK(d.labels.num_classes == 5);
}

TEST_CASE("bad dataset sections are ConfigErrors naming the key path", "[config]") {
  CHECK_THROWS_WITH(parse("{pth: cora}"), Catch::Contains("dataset.pth: unknown key (did you mean 'path'?)"));
  CHECK_THROWS_WITH(parse("{path: cora, format: csv}"), Catch::Contains("dataset.format: 'csv' is not one of"));
  CHECK_THROWS_WITH(parse("{path: cora, random_features: many}"),
                    Catch::Contains("dataset.random_features: 'many' is not a valid integer"));
  CHECK_THROWS_WITH(parse("{path: cora, random_features: -3}"), Catch::Contains("dataset.random_features: must be >= 0"));
  CHECK_THROWS_WITH(parse("{path: cora, synthetic: {nodes: 10}}"), Catch::Contains("set exactly one of path and synthetic"));
  CHECK_THROWS_WITH(parse("{}"), Catch::Contains("set exactly one of path and synthetic"));
  CHECK_THROWS_WITH(parse("{synthetic: {nodes: 0}}"), Catch::Contains("dataset.synthetic.nodes must be > 0"));
  CHECK_THROWS_WITH(parse("{synthetic: {nodez: 10}}"), Catch::Contains("dataset.synthetic.nodez: unknown key (did you mean 'nodes'?)"));
  CHECK_THROWS_WITH(parse("{path: [a, b]}"), Catch::Contains("dataset.path: expected a string value, got a list"));
  CHECK_THROWS_WITH(parse_dataset_section(ConfigMap(YAML::Load("[1, 2]"), "dataset")),
                    Catch::Contains("dataset: expected a mapping"));
}

TEST_CASE("experiment files: the dataset section, top-level typos and YAML syntax errors", "[config]") {
  gnnpipe::test::TempDir dir;
  const auto good = dir / "good.yaml";
  gnnpipe::test::write_text(good, "name: x\ndataset:\n  synthetic: {nodes: 1000, avg_degree: 4, classes: 3}\n"
                                  "model: {type: sage}\nrun: {epochs: 1}\n");
  CHECK(read_dataset_options(good).synthetic->nodes == 1000);
  const auto typo = dir / "typo.yaml";
  gnnpipe::test::write_text(typo, "dataset: {path: cora}\nsampeler: {type: neighbor}\n");
  CHECK_THROWS_WITH(read_dataset_options(typo), Catch::Contains("typo.yaml: sampeler: unknown key (did you mean 'sampler'?)"));
  const auto broken = dir / "broken.yaml";
  gnnpipe::test::write_text(broken, "dataset: {path: cora\n");
  CHECK_THROWS_AS(read_dataset_options(broken), ConfigError);
  CHECK_THROWS_WITH(read_dataset_options(broken), Catch::Contains("broken.yaml: 2:"));
  CHECK_THROWS_WITH(read_dataset_options(dir / "none.yaml"), Catch::Contains("none.yaml: no such config file"));
  CHECK(closest_key("optimiser", {"optimizer", "model"}) == "optimizer");
  CHECK(closest_key("zzzzzzzz", {"optimizer", "model"}).empty());
}
