// Options validation, features, splits and assembly of synthetic datasets (synthetic.hpp); the
// graph itself is in synthetic_graph.cpp.
#include "gnnpipe/graph/synthetic.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/random_features.hpp"
#include "synthetic_streams.hpp"

namespace gnnpipe::graph {
namespace {

using Range = tbb::blocked_range<std::size_t>;

bool is_fraction(double x) { return std::isfinite(x) && x >= 0.0 && x <= 1.0; }

// Sorted copy of order[begin, end) as an owned array.
HostArray<NodeId> sorted_part(const std::vector<NodeId>& order, std::size_t begin, std::size_t end) {
  std::vector<NodeId> part(order.begin() + static_cast<std::ptrdiff_t>(begin),
                           order.begin() + static_cast<std::ptrdiff_t>(end));
  std::sort(part.begin(), part.end());
  return HostArray<NodeId>(std::move(part));
}

}  // namespace

void validate(const SyntheticOptions& o) {
  constexpr int64_t kMaxNodes = std::numeric_limits<NodeId>::max();
  GNNPIPE_CHECK_CONFIG(o.nodes > 0 && o.nodes <= kMaxNodes, "synthetic.nodes must be > 0 and <= {}, got {}",
                       kMaxNodes, o.nodes);
  // A sparse-graph generator: at most a quarter of all possible neighbors on average, which also
  // keeps the degree cap sqrt(nodes * avg_degree) at least twice the mean.
  const double max_degree = static_cast<double>(o.nodes - 1) / 4.0;
  GNNPIPE_CHECK_CONFIG(std::isfinite(o.avg_degree) && o.avg_degree > 0 && o.avg_degree <= max_degree,
                       "synthetic.avg_degree must be > 0 and <= (nodes - 1) / 4 = {}, got {}", max_degree,
                       o.avg_degree);
  GNNPIPE_CHECK_CONFIG(o.features > 0, "synthetic.features must be > 0, got {}", o.features);
  check_feature_bytes(o.nodes, o.features, "synthetic.features");
  GNNPIPE_CHECK_CONFIG(o.classes >= 2 && o.classes <= o.nodes,
                       "synthetic.classes must be >= 2 and <= synthetic.nodes ({}), got {}", o.nodes, o.classes);
  GNNPIPE_CHECK_CONFIG(is_fraction(o.homophily), "synthetic.homophily must be in [0, 1], got {}", o.homophily);
  GNNPIPE_CHECK_CONFIG(std::isfinite(o.power_law_exponent) && o.power_law_exponent > 2.0,
                       "synthetic.power_law_exponent must be > 2 (a finite mean degree), got {}",
                       o.power_law_exponent);
  GNNPIPE_CHECK_CONFIG(std::isfinite(o.feature_noise) && o.feature_noise >= 0,
                       "synthetic.feature_noise must be >= 0, got {}", o.feature_noise);
  GNNPIPE_CHECK_CONFIG(is_fraction(o.train_fraction), "synthetic.train_fraction must be in [0, 1], got {}",
                       o.train_fraction);
  GNNPIPE_CHECK_CONFIG(is_fraction(o.val_fraction), "synthetic.val_fraction must be in [0, 1], got {}",
                       o.val_fraction);
  GNNPIPE_CHECK_CONFIG(o.train_fraction + o.val_fraction <= 1.0,
                       "synthetic.train_fraction + synthetic.val_fraction must be <= 1, got {} + {}",
                       o.train_fraction, o.val_fraction);
}

HostArray<float> make_synthetic_features(const SyntheticOptions& o, std::span<const int32_t> labels) {
  validate(o);
  const auto f = static_cast<std::size_t>(o.features);
  const auto k = static_cast<std::size_t>(o.classes);
  const std::size_t bad = static_cast<std::size_t>(
      std::find_if(labels.begin(), labels.end(), [&](int32_t c) { return c < 0 || c >= o.classes; }) - labels.begin());
  GNNPIPE_CHECK(bad == labels.size(), "synthetic features: label {} of node {} is outside [0, {})",
                bad < labels.size() ? labels[bad] : 0, bad, o.classes);

  std::vector<double> centroids(k * f);
  core::Rng centroid_rng(o.seed, {synthetic_streams::kCentroids});
  for (double& x : centroids) x = centroid_rng.normal();

  HostArray<float> values(labels.size() * f);
  tbb::parallel_for(Range(0, labels.size(), 1 << 10), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      core::Rng rng(o.seed, {synthetic_streams::kFeatures, v});
      const double* centroid = centroids.data() + static_cast<std::size_t>(labels[v]) * f;
      float* row = values.data() + v * f;
      for (std::size_t j = 0; j < f; ++j) row[j] = static_cast<float>(centroid[j] + o.feature_noise * rng.normal());
    }
  }));
  return values;
}

Splits make_random_splits(const SyntheticOptions& o, NodeId num_nodes) {
  validate(o);
  GNNPIPE_CHECK(num_nodes >= 0, "make_random_splits: negative node count {}", num_nodes);
  const auto n = static_cast<std::size_t>(num_nodes);
  std::vector<NodeId> order(n);
  std::iota(order.begin(), order.end(), NodeId{0});
  core::Rng rng(o.seed, {synthetic_streams::kSplits});
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  const auto train = std::min(n, static_cast<std::size_t>(std::llround(o.train_fraction * static_cast<double>(n))));
  const auto val = std::min(n - train, static_cast<std::size_t>(std::llround(o.val_fraction * static_cast<double>(n))));
  return Splits{.train = sorted_part(order, 0, train),
                .val = sorted_part(order, train, train + val),
                .test = sorted_part(order, train + val, n)};
}

std::string describe(const SyntheticOptions& o) {
  return fmt::format(
      "synthetic: degree-corrected SBM with power-law degrees (nodes={}, avg_degree={}, classes={}, homophily={}, "
      "power_law_exponent={}), features = class centroid N(0,1) + N(0,{}^2) noise ({}-dim float32), "
      "random split train={}/val={}/test={:.6g}, seed={}",
      o.nodes, o.avg_degree, o.classes, o.homophily, o.power_law_exponent, o.feature_noise, o.features,
      o.train_fraction, o.val_fraction, 1.0 - o.train_fraction - o.val_fraction, o.seed);
}

Dataset make_synthetic(const SyntheticOptions& options) {
  validate(options);
  SyntheticGraph parts = make_synthetic_graph(options);
  Dataset d;
  d.name = fmt::format("synthetic-{}", options.nodes);
  d.features = FeatureStore(make_synthetic_features(options, parts.communities.span()), options.nodes,
                            options.features, d.name);
  d.splits = make_random_splits(options, parts.graph.num_nodes());
  d.graph = std::move(parts.graph);
  d.labels = Labels{.single = std::move(parts.communities), .multi = {}, .num_classes = options.classes};
  d.synthesized = {describe(options)};
  d.validate(d.name);
  return d;
}

}  // namespace gnnpipe::graph
