#include <catch2/catch.hpp>

#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/synthetic.hpp"

using namespace gnnpipe::graph;
using gnnpipe::core::ConfigError;

namespace {

SyntheticOptions small(uint64_t seed = 7) {
  return SyntheticOptions{.nodes = 2000, .avg_degree = 20, .features = 16, .classes = 8, .seed = seed};
}

bool same_features(const Dataset& a, const Dataset& b) {
  const auto x = a.features.float_values();
  const auto y = b.features.float_values();
  return std::equal(x.begin(), x.end(), y.begin(), y.end());
}

bool same_labels(const Dataset& a, const Dataset& b) {
  return std::equal(a.labels.single.begin(), a.labels.single.end(), b.labels.single.begin(), b.labels.single.end());
}

double inside_fraction(const Dataset& d) {
  std::size_t inside = 0;
  for (NodeId v = 0; v < d.num_nodes(); ++v) {
    for (NodeId u : d.graph.in_neighbors(v)) {
      inside += d.labels.single[static_cast<std::size_t>(u)] == d.labels.single[static_cast<std::size_t>(v)];
    }
  }
  return static_cast<double>(inside) / static_cast<double>(d.graph.num_edges());
}

}  // namespace

TEST_CASE("synthetic: the same seed gives the same dataset, another seed another", "[graph][synthetic]") {
  const Dataset a = make_synthetic(small(7));
  const Dataset b = make_synthetic(small(7));
  const Dataset c = make_synthetic(small(8));
  CHECK(a.graph.structure_hash() == b.graph.structure_hash());
  CHECK(same_features(a, b));
  CHECK(same_labels(a, b));
  CHECK(std::equal(a.splits.train.begin(), a.splits.train.end(), b.splits.train.begin(), b.splits.train.end()));
  CHECK(a.graph.structure_hash() != c.graph.structure_hash());
  CHECK_FALSE(same_features(a, c));
  CHECK_FALSE(same_labels(a, c));
}

TEST_CASE("synthetic: output does not depend on the thread count", "[graph][synthetic][tsan]") {
  // Large enough for several edge chunks per kind and several feature blocks.
  const SyntheticOptions o{.nodes = 20000, .avg_degree = 8, .features = 8, .classes = 5, .seed = 3};
  auto build = [&](int threads) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    return make_synthetic(o);
  };
  const Dataset one = build(1);
  const Dataset two = build(2);
  CHECK(one.graph.structure_hash() == two.graph.structure_hash());
  CHECK(same_features(one, two));
  CHECK(same_labels(one, two));
}

TEST_CASE("synthetic: a simple symmetric graph with the requested degree and homophily", "[graph][synthetic]") {
  for (const double homophily : {0.0, 0.5, 0.8, 1.0}) {
    SyntheticOptions o = small();
    o.homophily = homophily;
    const Dataset d = make_synthetic(o);
    INFO("homophily " << homophily);
    CHECK(d.name == "synthetic-2000");
    CHECK(d.num_nodes() == 2000);
    CHECK(d.graph.is_symmetric());
    CHECK(d.graph.count_self_loops() == 0);
    CHECK(d.graph.rows_sorted(/*strictly=*/true));  // sorted and no duplicates
    const double avg = static_cast<double>(d.graph.num_edges()) / d.num_nodes();
    CHECK(avg == Approx(20).epsilon(0.1));
    CHECK(inside_fraction(d) == Approx(homophily).margin(0.02));
  }
}

TEST_CASE("synthetic: degrees are heavy-tailed", "[graph][synthetic]") {
  const Dataset d = make_synthetic(SyntheticOptions{.nodes = 20000, .avg_degree = 10, .features = 4, .classes = 4});
  std::vector<EdgeOffset> degrees;
  for (NodeId v = 0; v < d.num_nodes(); ++v) degrees.push_back(d.graph.in_degree(v));
  std::sort(degrees.begin(), degrees.end());
  // Pareto with exponent 2.5: the median sits well below the mean and hubs reach many times it.
  CHECK(degrees[degrees.size() / 2] < 10);
  CHECK(degrees.back() > 100);
}

TEST_CASE("synthetic: labels, splits and the record", "[graph][synthetic]") {
  SyntheticOptions o = small();
  o.train_fraction = 0.5;
  o.val_fraction = 0.25;
  const Dataset d = make_synthetic(o);
  REQUIRE(d.labels.single.size() == 2000);
  CHECK(d.labels.num_classes == 8);
  CHECK_FALSE(d.labels.is_multi_label());
  std::vector<int> per_class(8, 0);
  for (int32_t c : d.labels.single) {
    REQUIRE(c >= 0);
    REQUIRE(c < 8);
    ++per_class[static_cast<std::size_t>(c)];
  }
  CHECK(per_class == std::vector<int>(8, 250));  // equal communities

  CHECK(d.splits.train.size() == 1000);
  CHECK(d.splits.val.size() == 500);
  CHECK(d.splits.test.size() == 500);
  std::vector<int> times(2000, 0);
  for (const auto* part : {&d.splits.train, &d.splits.val, &d.splits.test}) {
    CHECK(std::is_sorted(part->begin(), part->end()));
    for (NodeId v : *part) ++times[static_cast<std::size_t>(v)];
  }
  CHECK(std::all_of(times.begin(), times.end(), [](int t) { return t == 1; }));  // disjoint and covering

  REQUIRE(d.synthesized.size() == 1);
  CHECK(d.synthesized[0].find("nodes=2000") != std::string::npos);
  CHECK(d.synthesized[0].find("homophily=0.8") != std::string::npos);
  CHECK(d.synthesized[0].find("seed=7") != std::string::npos);
}

TEST_CASE("synthetic: features predict the class", "[graph][synthetic]") {
  SyntheticOptions o = small();
  o.feature_noise = 3.0;  // hard enough that a perfect score would be suspicious
  const Dataset d = make_synthetic(o);
  REQUIRE(d.features.rows() == 2000);
  REQUIRE(d.features.cols() == 16);
  // Centroids estimated on the training nodes, scored on the test nodes.
  const auto f = static_cast<std::size_t>(o.features);
  const auto k = static_cast<std::size_t>(o.classes);
  std::vector<double> centroid(k * f, 0.0);
  std::vector<double> count(k, 0.0);
  for (NodeId v : d.splits.train) {
    const auto c = static_cast<std::size_t>(d.labels.single[static_cast<std::size_t>(v)]);
    const auto row = d.features.row(v);
    for (std::size_t j = 0; j < f; ++j) centroid[c * f + j] += row[j];
    count[c] += 1;
  }
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < f; ++j) centroid[c * f + j] /= count[c];
  }
  std::size_t correct = 0;
  for (NodeId v : d.splits.test) {
    const auto row = d.features.row(v);
    double best = std::numeric_limits<double>::infinity();
    std::size_t best_class = 0;
    for (std::size_t c = 0; c < k; ++c) {
      double dist = 0;
      for (std::size_t j = 0; j < f; ++j) dist += (row[j] - centroid[c * f + j]) * (row[j] - centroid[c * f + j]);
      if (dist < best) best = dist, best_class = c;
    }
    correct += best_class == static_cast<std::size_t>(d.labels.single[static_cast<std::size_t>(v)]);
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(d.splits.test.size());
  INFO("nearest-centroid accuracy " << accuracy);
  CHECK(accuracy > 3.0 / 8.0);  // chance is 1/8
  CHECK(accuracy < 1.0);
}

TEST_CASE("synthetic: bad options are ConfigErrors naming the field", "[graph][synthetic][errors]") {
  auto fails_naming = [](SyntheticOptions o, const std::string& field) {
    try {
      make_synthetic(o);
    } catch (const ConfigError& e) {
      INFO(e.message());
      return e.message().find(field) != std::string::npos;
    }
    return false;
  };
  auto with = [](auto change) {
    SyntheticOptions o{.nodes = 100, .avg_degree = 4, .features = 4, .classes = 4};
    change(o);
    return o;
  };
  CHECK(fails_naming(with([](auto& o) { o.nodes = 0; }), "synthetic.nodes must be > 0"));
  CHECK(fails_naming(with([](auto& o) { o.nodes = int64_t{1} << 31; }), "synthetic.nodes"));
  CHECK(fails_naming(with([](auto& o) { o.avg_degree = 0; }), "synthetic.avg_degree"));
  CHECK(fails_naming(with([](auto& o) { o.avg_degree = 50; }), "synthetic.avg_degree"));
  CHECK(fails_naming(with([](auto& o) { o.avg_degree = std::nan(""); }), "synthetic.avg_degree"));
  CHECK(fails_naming(with([](auto& o) { o.features = 0; }), "synthetic.features"));
  CHECK(fails_naming(with([](auto& o) { o.classes = 1; }), "synthetic.classes"));
  CHECK(fails_naming(with([](auto& o) { o.classes = 101; }), "synthetic.classes"));
  CHECK(fails_naming(with([](auto& o) { o.homophily = 1.5; }), "synthetic.homophily"));
  CHECK(fails_naming(with([](auto& o) { o.power_law_exponent = 2.0; }), "synthetic.power_law_exponent"));
  CHECK(fails_naming(with([](auto& o) { o.feature_noise = -1; }), "synthetic.feature_noise"));
  CHECK(fails_naming(with([](auto& o) { o.train_fraction = -0.1; }), "synthetic.train_fraction"));
  CHECK(fails_naming(with([](auto& o) { o.val_fraction = 2; }), "synthetic.val_fraction"));
  CHECK(fails_naming(with([](auto& o) { o.train_fraction = 0.9; }), "synthetic.train_fraction + synthetic.val_fraction"));
  CHECK_NOTHROW(make_synthetic(with([](auto&) {})));
}
