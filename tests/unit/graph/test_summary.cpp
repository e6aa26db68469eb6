#include <catch2/catch.hpp>

#include <tbb/global_control.h>

#include <cmath>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/random_features.hpp"
#include "gnnpipe/graph/summary.hpp"

using namespace gnnpipe::graph;

TEST_CASE("generated features wider than the machine's memory are a ConfigError naming the key", "[graph][features]") {
  CHECK_THROWS_WITH(random_features(100, 2000000000, 1),
                    Catch::Contains("random features (dataset.random_features): 100 x 2000000000 float32 features take"));
  CHECK_THROWS_AS(check_feature_bytes(100, 2000000000, "synthetic.features"), gnnpipe::core::ConfigError);
  CHECK_NOTHROW(check_feature_bytes(100, 16, "synthetic.features"));
}

TEST_CASE("random features are standard normal, seeded, and thread-count independent", "[graph][features][tsan]") {
  const FeatureStore a = random_features(300, 16, 7);
  FeatureStore b;
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    b = random_features(300, 16, 7);
  }
  CHECK(std::equal(a.float_values().begin(), a.float_values().end(), b.float_values().begin()));
  CHECK(random_features(300, 16, 8).float_values()[0] != a.float_values()[0]);
  double sum = 0, sq = 0;
  for (float x : a.float_values()) {
    sum += x;
    sq += x * x;
  }
  const auto n = static_cast<double>(a.float_values().size());
  CHECK(sum / n == Approx(0.0).margin(0.05));
  CHECK(sq / n == Approx(1.0).margin(0.06));
  CHECK_THROWS_AS(random_features(3, 0, 1), gnnpipe::core::ConfigError);
}

TEST_CASE("add_random_features records what was synthesized and refuses to replace features", "[graph][features]") {
  Dataset d;
  d.name = "g";
  d.graph = CsrGraph::from_coo(3, std::vector<NodeId>{0}, std::vector<NodeId>{1});
  add_random_features(d, 4, 0);
  CHECK(d.features.rows() == 3);
  REQUIRE(d.synthesized.size() == 1);
  CHECK(d.synthesized[0].find("random standard normal, 4 dims, seed 0") != std::string::npos);
  CHECK_THROWS_WITH(add_random_features(d, 4, 0), Catch::Contains("already") || Catch::Contains("has 4-dim features"));
}

TEST_CASE("summarize counts degrees, classes, splits and warns about oddities", "[graph][summary]") {
  Dataset d;
  d.name = "tiny";
  // 0->1, 2->1, 1->1 (self-loop), 0->1 (duplicate); node 3 isolated.
  d.graph = CsrGraph::from_coo(4, std::vector<NodeId>{0, 2, 1, 0}, std::vector<NodeId>{1, 1, 1, 1});
  std::vector<float> f(8, 0.0f);
  f[5] = NAN;
  d.features = FeatureStore(HostArray<float>(std::move(f)), 4, 2);
  d.labels.single = HostArray<int32_t>(std::vector<int32_t>{0, 0, -1, 2});
  d.labels.num_classes = 3;
  d.splits.train = HostArray<NodeId>(std::vector<NodeId>{0});
  const DatasetSummary s = summarize(d);
  CHECK(s.nodes == 4);
  CHECK(s.edges == 4);
  CHECK(s.in_degree.max == 4);
  CHECK(s.in_degree.mean == 1.0);
  CHECK(s.out_degree.max == 2);
  CHECK(s.isolated_nodes == 1);
  CHECK(s.self_loops == 1);
  CHECK_FALSE(s.symmetric);
  CHECK(s.non_finite_features == 1);
  CHECK(s.feature_min == 0.0);
  CHECK(s.feature_max == 0.0);
  CHECK(s.feature_nonzero_fraction == 0.0);
  CHECK(s.class_counts == std::vector<int64_t>{2, 0, 1});
  CHECK(s.unlabeled == 1);
  CHECK(s.train == 1);
  const std::string text = format_summary(s);
  for (const char* w : {"1 isolated nodes", "1 self-loops", "1 NaN or infinite", "duplicate edges", "class 1 has no nodes"}) {
    INFO(w);
    CHECK(text.find(w) != std::string::npos);
  }
  CHECK(text.find("nodes:      4\n") != std::string::npos);
  CHECK(text.find("features:   2 (float32), values in [0, 0], mean 0, 0.00% non-zero") != std::string::npos);
}

TEST_CASE("summarize warns about an empty graph and single-class labels, which a run refuses", "[graph][summary]") {
  Dataset empty;
  empty.name = "empty";
  const std::string none = format_summary(summarize(empty));
  CHECK(none.find("an empty graph (0 nodes)") != std::string::npos);
  Dataset one;
  one.name = "one";
  one.graph = CsrGraph::from_coo(2, std::vector<NodeId>{0}, std::vector<NodeId>{1});
  one.labels.single = HostArray<int32_t>(std::vector<int32_t>{0, 0});
  one.labels.num_classes = 1;
  const std::string text = format_summary(summarize(one));
  CHECK(text.find("1 class: a single-label run needs at least 2") != std::string::npos);
  CHECK(text.find("an empty graph") == std::string::npos);
}

TEST_CASE("feature statistics cover every storage dtype", "[graph][summary]") {
  Dataset d;
  d.name = "f";
  d.graph = CsrGraph::from_coo(2, std::vector<NodeId>{0}, std::vector<NodeId>{1});
  d.features = FeatureStore(HostArray<float>(std::vector<float>{-2, 0, 0, 6}), 2, 2);
  for (FeatureDType dtype : {FeatureDType::kFloat32, FeatureDType::kFloat16, FeatureDType::kBFloat16}) {
    Dataset copy = d;
    copy.features = d.features.converted(dtype);
    const DatasetSummary s = summarize(copy);
    CHECK(s.feature_min == -2.0);
    CHECK(s.feature_max == 6.0);
    CHECK(s.feature_mean == 1.0);
    CHECK(s.feature_nonzero_fraction == 0.5);
  }
}
