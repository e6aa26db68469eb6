#include "gnnpipe/graph/io/planetoid_npy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/csr_features.hpp"
#include "gnnpipe/graph/io/npy.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;

template <class T>
HostArray<T> load(const fs::path& dir, const char* name) {
  const fs::path path = dir / name;
  return to_host_array<T>(read_npy(path), path.string());
}

// meta.json's counts (each -1 where it gives none; the file is optional).
struct Meta {
  fs::path path;
  int64_t num_nodes = -1, num_classes = -1, num_features = -1;
};

Meta read_meta(const fs::path& dir) {
  Meta m{dir / "meta.json"};
  if (!fs::exists(m.path)) return m;
  std::ifstream in(m.path);
  const auto meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  GNNPIPE_CHECK_DATA(!meta.is_discarded(), "{}: not valid JSON", m.path.string());
  const auto count = [&](const char* key) -> int64_t {
    if (!meta.contains(key)) return -1;
    GNNPIPE_CHECK_DATA(meta[key].is_number_integer() && meta[key].get<int64_t>() >= 0,
                       "{}: {} is not a count", m.path.string(), key);
    return meta[key].get<int64_t>();
  };
  m.num_nodes = count("num_nodes");
  m.num_classes = count("num_classes");
  m.num_features = count("num_features");
  return m;
}

}  // namespace

Dataset read_planetoid_npy(const fs::path& dir) {
  const fs::path edge_path = dir / "edge_index.npy";
  GNNPIPE_CHECK_DATA(fs::exists(edge_path), "{}: missing (this converted folder has no edges; use the dataset's "
                     "GraphSAINT or OGB folder)", edge_path.string());
  const Meta meta = read_meta(dir);
  auto labels = load<int32_t>(dir, "labels.npy");
  const auto n = static_cast<int64_t>(labels.size());
  // The node count is the labels' length: checked against meta.json first, so a labels file cut
  // short is named as such rather than as edges past the node count.
  GNNPIPE_CHECK_DATA(meta.num_nodes < 0 || meta.num_nodes == n, "{}: {} labels, but {} says num_nodes {}",
                     (dir / "labels.npy").string(), n, meta.path.string(), meta.num_nodes);

  // edge_index is [2, E]: in C order the sources come first, then the targets; in Fortran order
  // (as these files are written) the pairs are interleaved.
  const NpyArray edges = read_npy(edge_path, {.allow_fortran_order = true});
  GNNPIPE_CHECK_DATA(edges.shape.size() == 2 && edges.shape[0] == 2, "{}: expected shape [2, E]", edge_path.string());
  const auto flat = to_host_array<int64_t>(edges, edge_path.string());
  const auto e = static_cast<std::size_t>(edges.shape[1]);
  std::vector<NodeId> src(e), dst(e);
  for (std::size_t i = 0; i < e; ++i) {
    const int64_t s = edges.fortran_order ? flat[2 * i] : flat[i];
    const int64_t t = edges.fortran_order ? flat[2 * i + 1] : flat[e + i];
    GNNPIPE_CHECK_DATA(s >= 0 && s < n && t >= 0 && t < n, "{}: edge {} ({} -> {}) has a node id outside [0, {})",
                       edge_path.string(), i, s, t, n);
    src[i] = static_cast<NodeId>(s);
    dst[i] = static_cast<NodeId>(t);
  }
  Dataset d;
  d.name = dir.parent_path().filename().string();
  d.graph = CsrGraph::from_coo(static_cast<NodeId>(n), src, dst);

  if (fs::exists(dir / "features_csr_indptr.npy")) {
    const auto indptr = load<int64_t>(dir, "features_csr_indptr.npy");
    const auto indices = load<int64_t>(dir, "features_csr_indices.npy");
    int64_t cols = 0;
    for (int64_t c : indices) cols = std::max(cols, c + 1);
    // The width is the vocabulary size, which trailing all-zero columns would hide: take it from
    // meta.json when given, else from the largest column id.
    if (meta.num_features >= 0) {
      GNNPIPE_CHECK_DATA(meta.num_features >= cols, "{}: num_features {} but a feature column {} exists",
                         meta.path.string(), meta.num_features, cols - 1);
      cols = meta.num_features;
    }
    d.features = dense_from_csr(indptr, indices, load<float>(dir, "features_csr_data.npy"), n, cols,
                                (dir / "features_csr_*.npy").string());
  }
  if (fs::exists(dir / "feature_row_known.npy")) {
    const auto known = load<uint8_t>(dir, "feature_row_known.npy");
    int64_t count = 0;
    for (uint8_t k : known) count += k != 0 ? 1 : 0;
    if (count < n) d.synthesized.push_back(fmt::format("features: known for only {} of {} rows; the rest are zero", count, n));
  }
  int32_t max_label = -1;
  for (int32_t l : labels) max_label = std::max(max_label, l);
  d.labels.single = std::move(labels);
  d.labels.num_classes = max_label + 1;
  if (meta.num_classes >= 0) {
    // The declared count, which a class without labeled nodes would hide; a label past it is the
    // validation's "outside [-1, num_classes)".
    d.labels.num_classes = static_cast<int32_t>(std::min<int64_t>(meta.num_classes, INT32_MAX));
  }
  d.splits.train = load<NodeId>(dir, "train_idx.npy");
  d.splits.val = load<NodeId>(dir, "val_idx.npy");
  d.splits.test = load<NodeId>(dir, "test_idx.npy");
  d.validate(dir.string());
  return d;
}

}  // namespace gnnpipe::graph::io
