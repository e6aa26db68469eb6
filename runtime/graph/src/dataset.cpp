#include "gnnpipe/graph/dataset.hpp"

#include <algorithm>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "parallel_find.hpp"

namespace gnnpipe::graph {
namespace {

constexpr std::size_t kMaxClassesAnyGraph = 65536;

void validate_labels(const Dataset& d, const std::string& source) {
  const auto n = static_cast<std::size_t>(d.num_nodes());
  const Labels& labels = d.labels;
  if (labels.empty()) {
    GNNPIPE_CHECK_DATA(labels.num_classes == 0, "{}: {} classes but no labels", source, labels.num_classes);
    GNNPIPE_CHECK_DATA(d.splits.train.empty() && d.splits.val.empty() && d.splits.test.empty(),
                       "{}: train/val/test splits but no labels", source);
    return;
  }
  GNNPIPE_CHECK_DATA(labels.num_classes > 0, "{}: the number of classes is {}, expected > 0", source, labels.num_classes);
  if (labels.is_multi_label()) {
    const auto c = static_cast<std::size_t>(labels.num_classes);
    GNNPIPE_CHECK_DATA(labels.multi.size() == n * c, "{}: {} multi-label values for {} nodes x {} classes", source,
                       labels.multi.size(), n, c);
    const std::size_t bad = detail::first_index_where(labels.multi.size(), [&](std::size_t i) { return labels.multi[i] > 1; });
    GNNPIPE_CHECK_DATA(bad == labels.multi.size(), "{}: multi-label value {} of node {} class {} is not 0 or 1",
                       source, bad < labels.multi.size() ? labels.multi[bad] : 0, bad / c, bad % c);
    return;
  }
  GNNPIPE_CHECK_DATA(labels.single.size() == n, "{}: {} labels for {} nodes", source, labels.single.size(), n);
  // Classes are counted from the largest label: one corrupt label (10^6 among 7 classes) would
  // size every logit array by it. More classes than both the nodes and 65,536 is refused.
  GNNPIPE_CHECK_DATA(static_cast<std::size_t>(labels.num_classes) <= std::max<std::size_t>(n, kMaxClassesAnyGraph),
                     "{}: {} classes for {} nodes (the largest label is {}): more classes than nodes; a corrupt label?",
                     source, labels.num_classes, n, labels.num_classes - 1);
  const std::size_t bad = detail::first_index_where(n, [&](std::size_t v) {
    return labels.single[v] < -1 || labels.single[v] >= labels.num_classes;
  });
  GNNPIPE_CHECK_DATA(bad == n, "{}: label {} of node {} is outside [-1, {}) (num_classes is {})", source,
                     bad < n ? labels.single[bad] : 0, bad, labels.num_classes, labels.num_classes);
}

void validate_split(const HostArray<NodeId>& split, const char* name, const Dataset& d, const std::string& source) {
  const NodeId n = d.num_nodes();
  const std::size_t bad = detail::first_index_where(split.size(), [&](std::size_t i) { return split[i] < 0 || split[i] >= n; });
  GNNPIPE_CHECK_DATA(bad == split.size(), "{}: {} split member {} at position {} is outside [0, {})", source, name,
                     bad < split.size() ? split[bad] : 0, bad, n);
  std::vector<NodeId> sorted(split.begin(), split.end());
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  GNNPIPE_CHECK_DATA(dup == sorted.end(), "{}: node {} appears more than once in the {} split", source,
                     dup != sorted.end() ? *dup : 0, name);
}

}  // namespace

void Dataset::validate(const std::string& source) const {
  const auto n = static_cast<int64_t>(num_nodes());
  GNNPIPE_CHECK_DATA(features.empty() || features.rows() == n, "{}: {} feature rows for {} nodes", source,
                     features.rows(), n);
  validate_labels(*this, source);
  validate_split(splits.train, "train", *this, source);
  validate_split(splits.val, "val", *this, source);
  validate_split(splits.test, "test", *this, source);
  // Every train node needs a label (val/test may hold unlabeled slots, e.g. CiteSeer's isolated ones).
  if (!labels.empty() && !labels.is_multi_label()) {
    const std::size_t bad = detail::first_index_where(splits.train.size(), [&](std::size_t i) {
      return labels.single[static_cast<std::size_t>(splits.train[i])] < 0;
    });
    GNNPIPE_CHECK_DATA(bad == splits.train.size(), "{}: train node {} has no label (-1)", source,
                       bad < splits.train.size() ? splits.train[bad] : 0);
  }
  const FeatureStore::Position p = features.first_non_finite();
  GNNPIPE_CHECK_DATA(p.row == features.rows(), "{}: feature [{}, {}] is NaN or infinite", source, p.row, p.col);
}

}  // namespace gnnpipe::graph
