#include "gnnpipe/graph/io/saint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/gnn_benchmark.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  GNNPIPE_CHECK_DATA(in.good(), "{}: cannot open", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: not valid JSON: {}", path.string(), e.what());
  }
}

NodeId node_key(const std::string& key, NodeId n, const fs::path& path) {
  NodeId v = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), v);
  GNNPIPE_CHECK_DATA(ec == std::errc() && end == key.data() + key.size() && v >= 0 && v < n,
                     "{}: key '{}' is not a node id in [0, {})", path.string(), key, n);
  return v;
}

void read_labels(Dataset& d, const fs::path& path) {
  const json map = read_json(path);
  GNNPIPE_CHECK_DATA(map.is_object() && !map.empty(), "{}: expected a non-empty object {{\"node\": class}}", path.string());
  const NodeId n = d.num_nodes();
  GNNPIPE_CHECK_DATA(map.size() == static_cast<std::size_t>(n), "{}: {} entries for {} nodes", path.string(), map.size(), n);
  const bool multi = map.begin()->is_array();
  if (multi) {
    const std::size_t c = map.begin()->size();
    GNNPIPE_CHECK_DATA(c > 0, "{}: empty multi-label vectors", path.string());
    HostArray<uint8_t> labels(static_cast<std::size_t>(n) * c);
    for (const auto& [key, value] : map.items()) {
      const NodeId v = node_key(key, n, path);
      GNNPIPE_CHECK_DATA(value.is_array() && value.size() == c, "{}: node {} has a label vector of size {}, expected {}",
                         path.string(), key, value.is_array() ? value.size() : 0, c);
      for (std::size_t k = 0; k < c; ++k) {
        GNNPIPE_CHECK_DATA(value[k].is_number_integer() && (value[k] == 0 || value[k] == 1),
                           "{}: node {} label {} is not 0 or 1", path.string(), key, k);
        labels[static_cast<std::size_t>(v) * c + k] = static_cast<uint8_t>(value[k].get<int>());
      }
    }
    d.labels.multi = std::move(labels);
    d.labels.num_classes = static_cast<int32_t>(c);
    return;
  }
  HostArray<int32_t> labels(std::vector<int32_t>(static_cast<std::size_t>(n), -1));
  int32_t max_label = -1;
  for (const auto& [key, value] : map.items()) {
    const NodeId v = node_key(key, n, path);
    GNNPIPE_CHECK_DATA(value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < (1 << 30),
                       "{}: node {} has label {}, expected a class id", path.string(), key, value.dump());
    labels[static_cast<std::size_t>(v)] = value.get<int32_t>();
    max_label = std::max(max_label, labels[static_cast<std::size_t>(v)]);
  }
  d.labels.single = std::move(labels);
  d.labels.num_classes = max_label + 1;
}

// labels.npy beside adj_full.npz (the layout of ../shared/datasets' converted/ folders): int [N]
// class ids (-1 unlabeled), or 0/1 [N, C] for multi-label.
void read_labels_npy(Dataset& d, const fs::path& path) {
  const NpyArray array = read_npy(path);
  const auto n = static_cast<int64_t>(d.num_nodes());
  GNNPIPE_CHECK_DATA((array.shape.size() == 1 || array.shape.size() == 2) && array.shape[0] == n,
                     "{}: labels must be [{}] or [{}, classes], got {} dimensions with {} rows", path.string(), n, n,
                     array.shape.size(), array.shape.empty() ? 0 : array.shape[0]);
  if (array.shape.size() == 2) {
    GNNPIPE_CHECK_DATA(array.shape[1] > 0, "{}: multi-label labels with 0 classes", path.string());
    d.labels.multi = to_host_array<uint8_t>(array, path.string());
    d.labels.num_classes = static_cast<int32_t>(array.shape[1]);
    return;  // Dataset::validate checks the 0/1 values
  }
  d.labels.single = to_host_array<int32_t>(array, path.string());
  const auto max = std::max_element(d.labels.single.begin(), d.labels.single.end());
  d.labels.num_classes = max == d.labels.single.end() ? 0 : *max + 1;
}

HostArray<NodeId> read_role(const json& roles, const char* key, NodeId n, const fs::path& path) {
  GNNPIPE_CHECK_DATA(roles.contains(key) && roles[key].is_array(), "{}: missing the \"{}\" list", path.string(), key);
  std::vector<NodeId> ids;
  ids.reserve(roles[key].size());
  for (const auto& value : roles[key]) {
    GNNPIPE_CHECK_DATA(value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < n,
                       "{}: \"{}\" member {} is not a node id in [0, {})", path.string(), key, value.dump(), n);
    ids.push_back(value.get<NodeId>());
  }
  return HostArray<NodeId>(std::move(ids));
}

}  // namespace

Dataset read_saint(const fs::path& dir) {
  const fs::path adj_path = dir / "adj_full.npz";
  const NpzArchive adj = NpzArchive::open(adj_path);
  const std::string what = adj_path.string();
  const auto shape = to_host_array<int64_t>(adj.read("shape"), what + ":shape");
  GNNPIPE_CHECK_DATA(shape.size() == 2 && shape[0] == shape[1] && shape[0] >= 0, "{}: shape must be square, got {} x {}",
                     what, shape.size() > 0 ? shape[0] : -1, shape.size() > 1 ? shape[1] : -1);
  auto indptr = to_host_array<int64_t>(adj.read("indptr"), what + ":indptr");
  auto indices = to_host_array<int32_t>(adj.read("indices"), what + ":indices");
  if (adj.contains("data")) {
    const auto data = to_host_array<uint8_t>(adj.read("data"), what + ":data");
    GNNPIPE_CHECK_DATA(data.size() == indices.size(), "{}: {} data values for {} indices", what, data.size(), indices.size());
    const auto zero = std::find(data.begin(), data.end(), uint8_t{0});
    GNNPIPE_CHECK_DATA(zero == data.end(), "{}: explicit zero entry at position {} (not an edge)", what, zero - data.begin());
  }
  GNNPIPE_CHECK_DATA(indptr.size() == static_cast<std::size_t>(shape[0] + 1), "{}: indptr has {} entries for {} nodes",
                     what, indptr.size(), shape[0]);
  // Row i of the scipy matrix lists the targets of i's edges: transpose into rows = destinations.
  Dataset d;
  d.name = dir.parent_path().filename().string();
  d.graph = CsrGraph::from_arrays(std::move(indptr), std::move(indices), what).transposed();
  if (const fs::path labels_npy = dir / "labels.npy"; !fs::exists(dir / "class_map.json") && fs::exists(labels_npy)) {
    read_labels_npy(d, labels_npy);
  } else {
    read_labels(d, dir / "class_map.json");
  }
  const fs::path role_path = dir / "role.json";
  const fs::path split_dir = dir.parent_path() / "splits";
  if (!fs::exists(role_path) && fs::exists(split_dir / (std::string(kSplitPrefix) + "train.npy"))) {
    read_split_dir(d, split_dir, kSplitPrefix);  // a derived split beside the data (BlogCatalog)
  } else {
    const json roles = read_json(role_path);
    d.splits.train = read_role(roles, "tr", d.num_nodes(), role_path);
    d.splits.val = read_role(roles, "va", d.num_nodes(), role_path);
    d.splits.test = read_role(roles, "te", d.num_nodes(), role_path);
  }
  if (const fs::path feats = dir / "feats.npy"; fs::exists(feats)) {
    const NpyArray array = read_npy(feats);
    GNNPIPE_CHECK_DATA(array.shape.size() == 2, "{}: features must be 2-D, got {} dimensions", feats.string(),
                       array.shape.size());
    d.features = FeatureStore(to_host_array<float>(array, feats.string()), array.shape[0], array.shape[1], feats.string());
  }
  d.validate(dir.string());
  return d;
}

}  // namespace gnnpipe::graph::io
