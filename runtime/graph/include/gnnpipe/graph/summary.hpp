#pragma once
// What `gnnpipe data info` prints: counts, degree statistics, features, labels, splits, and
// warnings about things that usually mean a broken or surprising dataset.
#include <cstdint>
#include <string>
#include <vector>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph {

struct DegreeStats {
  int64_t min = 0;
  int64_t max = 0;
  double mean = 0.0;
  int64_t median = 0;
  int64_t p99 = 0;
};

struct DatasetSummary {
  std::string name;
  int64_t nodes = 0;
  int64_t edges = 0;
  DegreeStats in_degree;
  DegreeStats out_degree;
  int64_t isolated_nodes = 0;  // no in- and no out-edges
  int64_t self_loops = 0;
  bool symmetric = false;
  int64_t feature_dim = 0;
  std::string feature_dtype;
  int64_t non_finite_features = 0;
  // Over the finite feature values: range, mean, and the fraction that are non-zero.
  double feature_min = 0, feature_max = 0, feature_mean = 0, feature_nonzero_fraction = 0;
  int32_t classes = 0;
  bool multi_label = false;
  std::vector<int64_t> class_counts;  // single-label: nodes per class; multi-label: positives per class
  int64_t unlabeled = 0;
  int64_t train = 0, val = 0, test = 0;
  std::vector<std::string> synthesized;
  std::vector<std::string> warnings;
};

DatasetSummary summarize(const Dataset& dataset);
// Plain text for people, one fact per line.
std::string format_summary(const DatasetSummary& summary);

}  // namespace gnnpipe::graph
