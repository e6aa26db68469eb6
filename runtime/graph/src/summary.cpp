#include "gnnpipe/graph/summary.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::graph {
namespace {

DegreeStats stats_of(std::vector<EdgeOffset> degrees) {
  DegreeStats s;
  if (degrees.empty()) return s;
  const double total = static_cast<double>(std::accumulate(degrees.begin(), degrees.end(), int64_t{0}));
  // Not annotated for TSan (core/tsan_annotations.hpp): parallel_sort's tasks hand elements to each
  // other through edges inside libtbb that no body of ours can stand for. No [tsan] test runs it.
  tbb::parallel_sort(degrees.begin(), degrees.end());
  s.min = degrees.front();
  s.max = degrees.back();
  s.mean = total / static_cast<double>(degrees.size());
  s.median = degrees[degrees.size() / 2];
  s.p99 = degrees[std::min(degrees.size() - 1, static_cast<std::size_t>(0.99 * static_cast<double>(degrees.size())))];
  return s;
}

// Feature statistics in one pass over blocks of rows gathered as float32 (any storage dtype).
void summarize_features(const FeatureStore& f, DatasetSummary& s) {
  struct Acc {
    double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t finite = 0, nonzero = 0, non_finite = 0;
  };
  constexpr int64_t kRows = 1024;
  const auto cols = static_cast<std::size_t>(f.cols());
  const Acc total = tbb::parallel_reduce(
      tbb::blocked_range<int64_t>(0, (f.rows() + kRows - 1) / kRows), Acc{},
      core::tsan::fork_join([&](const tbb::blocked_range<int64_t>& blocks, Acc acc) {
        std::vector<NodeId> ids;
        std::vector<float> values;
        for (int64_t b = blocks.begin(); b < blocks.end(); ++b) {
          ids.clear();
          for (int64_t v = b * kRows; v < std::min(f.rows(), (b + 1) * kRows); ++v) ids.push_back(static_cast<NodeId>(v));
          values.resize(ids.size() * cols);
          f.gather(ids, values);
          for (float x : values) {
            if (!std::isfinite(x)) {
              ++acc.non_finite;
              continue;
            }
            acc.min = std::min(acc.min, static_cast<double>(x));
            acc.max = std::max(acc.max, static_cast<double>(x));
            acc.sum += x;
            ++acc.finite;
            acc.nonzero += x != 0.0f ? 1 : 0;
          }
        }
        return acc;
      }),
      [](Acc a, const Acc& b) {
        a.min = std::min(a.min, b.min);
        a.max = std::max(a.max, b.max);
        a.sum += b.sum;
        a.finite += b.finite;
        a.nonzero += b.nonzero;
        a.non_finite += b.non_finite;
        return a;
      });
  s.non_finite_features = total.non_finite;
  if (total.finite > 0) {
    s.feature_min = total.min;
    s.feature_max = total.max;
    s.feature_mean = total.sum / static_cast<double>(total.finite);
    s.feature_nonzero_fraction = static_cast<double>(total.nonzero) / static_cast<double>(total.finite);
  }
}

std::string format_degrees(const DegreeStats& s) {
  return fmt::format("min {}, median {}, mean {:.2f}, p99 {}, max {}", s.min, s.median, s.mean, s.p99, s.max);
}

}  // namespace

DatasetSummary summarize(const Dataset& d) {
  DatasetSummary s;
  const CsrGraph& g = d.graph;
  s.name = d.name;
  s.nodes = g.num_nodes();
  s.edges = g.num_edges();
  std::vector<EdgeOffset> in(static_cast<std::size_t>(s.nodes));
  for (NodeId v = 0; v < g.num_nodes(); ++v) in[static_cast<std::size_t>(v)] = g.in_degree(v);
  std::vector<EdgeOffset> out = g.out_degrees();
  for (std::size_t v = 0; v < in.size(); ++v) s.isolated_nodes += (in[v] == 0 && out[v] == 0) ? 1 : 0;
  s.in_degree = stats_of(std::move(in));
  s.out_degree = stats_of(std::move(out));
  s.self_loops = g.count_self_loops();
  s.symmetric = g.is_symmetric();

  s.feature_dim = d.features.cols();
  s.feature_dtype = d.features.empty() ? "none" : to_string(d.features.dtype());
  if (!d.features.empty()) summarize_features(d.features, s);

  s.classes = d.labels.num_classes;
  s.multi_label = d.labels.is_multi_label();
  s.class_counts.assign(static_cast<std::size_t>(std::max(0, s.classes)), 0);
  if (s.multi_label) {
    const auto c = static_cast<std::size_t>(s.classes);
    for (std::size_t i = 0; i < d.labels.multi.size(); ++i) s.class_counts[i % c] += d.labels.multi[i];
  } else {
    for (int32_t label : d.labels.single) {
      if (label < 0) {
        ++s.unlabeled;
      } else if (label < s.classes) {
        ++s.class_counts[static_cast<std::size_t>(label)];
      }
    }
  }
  s.train = static_cast<int64_t>(d.splits.train.size());
  s.val = static_cast<int64_t>(d.splits.val.size());
  s.test = static_cast<int64_t>(d.splits.test.size());
  s.synthesized = d.synthesized;

  if (s.isolated_nodes > 0) s.warnings.push_back(fmt::format("{} isolated nodes (no edges)", s.isolated_nodes));
  if (s.self_loops > 0) s.warnings.push_back(fmt::format("{} self-loops", s.self_loops));
  if (s.non_finite_features > 0) s.warnings.push_back(fmt::format("{} NaN or infinite feature values", s.non_finite_features));
  if (s.nodes == 0) s.warnings.push_back("an empty graph (0 nodes): nothing can train on it");
  if (d.features.empty()) {
    s.warnings.push_back("no node features (model.embedding learns them; dataset.random_features for timing runs)");
  }
  if (!d.labels.empty() && d.labels.num_classes < 2 && !d.labels.is_multi_label()) {
    s.warnings.push_back(fmt::format("{} class: a single-label run needs at least 2", d.labels.num_classes));
  }
  if (d.labels.empty()) s.warnings.push_back("no labels");
  if (!d.labels.empty() && s.train == 0) s.warnings.push_back("no train split");
  if (!g.rows_sorted(true)) s.warnings.push_back("duplicate edges");
  for (std::size_t c = 0; c < s.class_counts.size(); ++c) {
    if (s.class_counts[c] == 0) s.warnings.push_back(fmt::format("class {} has no nodes", c));
  }
  return s;
}

std::string format_summary(const DatasetSummary& s) {
  std::string text = fmt::format("dataset:    {}\n", s.name);
  text += fmt::format("nodes:      {}\n", s.nodes);
  text += fmt::format("edges:      {} stored ({})\n", s.edges, s.symmetric ? "symmetric" : "directed");
  text += fmt::format("in-degree:  {}\n", format_degrees(s.in_degree));
  text += fmt::format("out-degree: {}\n", format_degrees(s.out_degree));
  text += s.feature_dim > 0
              ? fmt::format("features:   {} ({}), values in [{:.4g}, {:.4g}], mean {:.4g}, {:.2f}% non-zero\n",
                            s.feature_dim, s.feature_dtype, s.feature_min, s.feature_max, s.feature_mean,
                            100.0 * s.feature_nonzero_fraction)
              : "features:   none\n";
  text += fmt::format("classes:    {}{}\n", s.classes, s.multi_label ? " (multi-label)" : "");
  if (!s.class_counts.empty()) {
    text += "per class:  ";
    for (std::size_t c = 0; c < s.class_counts.size(); ++c) text += fmt::format("{}{}", c == 0 ? "" : " ", s.class_counts[c]);
    text += s.multi_label ? " (positives)\n" : fmt::format(" (+{} unlabeled)\n", s.unlabeled);
  }
  text += fmt::format("splits:     train {}, val {}, test {}\n", s.train, s.val, s.test);
  for (const auto& line : s.synthesized) text += fmt::format("synthetic:  {}\n", line);
  for (const auto& w : s.warnings) text += fmt::format("warning:    {}\n", w);
  return text;
}

}  // namespace gnnpipe::graph
