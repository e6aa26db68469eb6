#include "gnnpipe/graph/io/named_npz.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/npz.hpp"

namespace gnnpipe::graph::io {
namespace {

// The array named `given` (which must exist), else the first default present; nullopt if none.
std::optional<std::string> pick(const ArraySource& npz, const std::string& given, const std::vector<const char*>& names,
                                const char* role) {
  if (!given.empty()) {
    GNNPIPE_CHECK_DATA(npz.contains(given), "{}: no array '{}' (dataset.keys.{}); the file holds: {}",
                       npz.origin(), given, role, fmt::join(npz.names(), ", "));
    return given;
  }
  for (const char* name : names) {
    if (npz.contains(name)) return std::string(name);
  }
  return std::nullopt;
}

bool is_mask_dtype(DType t) { return t == DType::kBool || t == DType::kUInt8; }

HostArray<NodeId> read_split(const ArraySource& npz, const std::string& name, int64_t n, int64_t split) {
  const std::string what = npz.origin() + ":" + name;
  const NpyArray a = npz.read(name);
  if (!is_mask_dtype(a.dtype)) {  // node ids
    GNNPIPE_CHECK_DATA(a.shape.size() == 1, "{}: a list of node ids must be 1-D, got {} dimensions", what,
                       a.shape.size());
    GNNPIPE_CHECK_DATA(split == 0, "{}: dataset.split is {} but this array is one list of node ids", what, split);
    const auto ids = to_host_array<int64_t>(a, what);
    std::vector<NodeId> out;
    out.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      GNNPIPE_CHECK_DATA(ids[i] >= 0 && ids[i] < n, "{}: node id {} at index {} is outside [0, {})", what, ids[i], i, n);
      out.push_back(static_cast<NodeId>(ids[i]));
    }
    return HostArray<NodeId>(std::move(out));
  }
  // [N], [N, S] (splits as columns, geom-gcn) or [S, N] (splits as rows: the heterophilous-graphs
  // benchmark's files, e.g. tolokers.npz's [10, N]); [N, N] reads as [N, S].
  const bool rows_are_nodes = a.shape.size() >= 1 && a.shape[0] == n;
  const bool splits_as_rows = a.shape.size() == 2 && !rows_are_nodes && a.shape[1] == n;
  GNNPIPE_CHECK_DATA((a.shape.size() == 1 && rows_are_nodes) || (a.shape.size() == 2 && (rows_are_nodes || splits_as_rows)),
                     "{}: a mask must be [{}], [{}, splits] or [splits, {}], got shape [{}]", what, n, n, n,
                     fmt::join(a.shape, ", "));
  const int64_t splits = a.shape.size() == 1 ? 1 : splits_as_rows ? a.shape[0] : a.shape[1];
  GNNPIPE_CHECK_DATA(split >= 0 && split < splits, "{}: dataset.split {} is outside the {} split(s) this mask holds",
                     what, split, splits);
  const auto mask = to_host_array<uint8_t>(a, what);
  std::vector<NodeId> out;
  for (int64_t v = 0; v < n; ++v) {
    const uint8_t bit = mask[static_cast<std::size_t>(splits_as_rows ? split * n + v : v * splits + split)];
    GNNPIPE_CHECK_DATA(bit <= 1, "{}: mask value {} at node {}, expected 0 or 1", what, bit, v);
    if (bit == 1) out.push_back(static_cast<NodeId>(v));
  }
  return HostArray<NodeId>(std::move(out));
}

// An open archive as an ArraySource.
class ArchiveSource final : public ArraySource {
 public:
  explicit ArchiveSource(const NpzArchive& npz) : npz_(npz) {}
  std::string origin() const override { return npz_.path().string(); }
  std::vector<std::string> names() const override { return npz_.names(); }
  bool contains(const std::string& name) const override { return npz_.contains(name); }
  NpyArray read(const std::string& name) const override { return npz_.read(name); }

 private:
  const NpzArchive& npz_;
};

}  // namespace

Dataset read_named_npz(const NpzArchive& npz, const ArrayKeys& keys) {
  return read_named_arrays(ArchiveSource(npz), keys, npz.path().stem().string());
}

Dataset read_named_arrays(const ArraySource& npz, const ArrayKeys& keys, const std::string& dataset_name) {
  const std::string base = npz.origin();
  const auto edge_name = pick(npz, keys.edges, kDefaultArrayNames.edges, "edges");
  GNNPIPE_CHECK_DATA(edge_name.has_value(),
                     "{}: no edge list (looked for {}; name it with dataset.keys.edges); the file holds: {}", base,
                     fmt::join(kDefaultArrayNames.edges, ", "), fmt::join(npz.names(), ", "));
  Dataset d;
  d.name = dataset_name;
  int64_t n = -1;
  if (const auto name = pick(npz, keys.features, kDefaultArrayNames.features, "features")) {
    const std::string what = base + ":" + *name;
    const NpyArray a = npz.read(*name);
    GNNPIPE_CHECK_DATA(a.shape.size() == 2, "{}: features must be [nodes, features], got {} dimensions", what,
                       a.shape.size());
    d.features = FeatureStore(to_host_array<float>(a, what), a.shape[0], a.shape[1], what);
    n = a.shape[0];
  }
  if (const auto name = pick(npz, keys.labels, kDefaultArrayNames.labels, "labels")) {
    const std::string what = base + ":" + *name;
    const NpyArray a = npz.read(*name);
    GNNPIPE_CHECK_DATA(a.shape.size() == 1 || a.shape.size() == 2, "{}: labels must be [nodes] or [nodes, classes]",
                       what);
    GNNPIPE_CHECK_DATA(n < 0 || a.shape[0] == n, "{}: {} label rows for {} feature rows", what, a.shape[0], n);
    n = a.shape[0];
    if (a.shape.size() == 2) {
      GNNPIPE_CHECK_DATA(a.shape[1] > 0, "{}: multi-label labels with 0 classes", what);
      d.labels.multi = to_host_array<uint8_t>(a, what);
      d.labels.num_classes = static_cast<int32_t>(a.shape[1]);
    } else {
      d.labels.single = to_host_array<int32_t>(a, what);
      const auto max = std::max_element(d.labels.single.begin(), d.labels.single.end());
      d.labels.num_classes = max == d.labels.single.end() ? 0 : *max + 1;
    }
  }
  {
    const std::string what = base + ":" + *edge_name;
    const NpyArray a = npz.read(*edge_name);
    GNNPIPE_CHECK_DATA(a.shape.size() == 2 && (a.shape[0] == 2 || a.shape[1] == 2),
                       "{}: an edge list must be [2, E] or [E, 2], got {}", what,
                       a.shape.size() == 2 ? fmt::format("[{}, {}]", a.shape[0], a.shape[1])
                                           : fmt::format("{} dimensions", a.shape.size()));
    const auto ends = to_host_array<int64_t>(a, what);
    const bool rows_are_ends = a.shape[0] == 2;  // [2, E] (PyG's edge_index; [2, 2] is read this way)
    const int64_t e = rows_are_ends ? a.shape[1] : a.shape[0];
    std::vector<NodeId> src(static_cast<std::size_t>(e)), dst(static_cast<std::size_t>(e));
    int64_t max_id = -1;
    for (int64_t k = 0; k < e; ++k) {
      const int64_t s = rows_are_ends ? ends[static_cast<std::size_t>(k)] : ends[static_cast<std::size_t>(2 * k)];
      const int64_t t = rows_are_ends ? ends[static_cast<std::size_t>(e + k)] : ends[static_cast<std::size_t>(2 * k + 1)];
      GNNPIPE_CHECK_DATA(s >= 0 && t >= 0 && s < (int64_t{1} << 31) - 1 && t < (int64_t{1} << 31) - 1,
                         "{}: edge {} ({} -> {}) has a node id outside [0, 2^31-1)", what, k, s, t);
      GNNPIPE_CHECK_DATA(n < 0 || (s < n && t < n), "{}: edge {} ({} -> {}) names a node beyond the {} of the features/labels",
                         what, k, s, t, n);
      src[static_cast<std::size_t>(k)] = static_cast<NodeId>(s);
      dst[static_cast<std::size_t>(k)] = static_cast<NodeId>(t);
      max_id = std::max({max_id, s, t});
    }
    if (n < 0) n = max_id + 1;
    d.graph = CsrGraph::from_coo(static_cast<NodeId>(n), src, dst);
  }
  const auto train = pick(npz, keys.train, kDefaultArrayNames.train, "train");
  const auto val = pick(npz, keys.val, kDefaultArrayNames.val, "val");
  const auto test = pick(npz, keys.test, kDefaultArrayNames.test, "test");
  GNNPIPE_CHECK_DATA(train.has_value() == val.has_value() && val.has_value() == test.has_value(),
                     "{}: a split needs train, val and test arrays; found only {}", base,
                     fmt::join(std::vector<std::string>{train.value_or(""), val.value_or(""), test.value_or("")}, " "));
  if (train) {
    d.splits.train = read_split(npz, *train, n, keys.split);
    d.splits.val = read_split(npz, *val, n, keys.split);
    d.splits.test = read_split(npz, *test, n, keys.split);
  } else {
    GNNPIPE_CHECK_DATA(keys.split == 0, "{}: dataset.split is {} but the file has no split arrays", base, keys.split);
  }
  d.validate(base);
  return d;
}

}  // namespace gnnpipe::graph::io
