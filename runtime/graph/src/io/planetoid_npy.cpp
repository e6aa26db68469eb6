#include "gnnpipe/graph/io/planetoid_npy.hpp"

#include <fmt/format.h>

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

}  // namespace

Dataset read_planetoid_npy(const fs::path& dir) {
  const fs::path edge_path = dir / "edge_index.npy";
  GNNPIPE_CHECK_DATA(fs::exists(edge_path), "{}: missing (this converted folder has no edges; use the dataset's "
                     "GraphSAINT or OGB folder)", edge_path.string());
  auto labels = load<int32_t>(dir, "labels.npy");
  const auto n = static_cast<int64_t>(labels.size());

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
    if (const fs::path meta_path = dir / "meta.json"; fs::exists(meta_path)) {
      std::ifstream in(meta_path);
      const auto meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      GNNPIPE_CHECK_DATA(!meta.is_discarded(), "{}: not valid JSON", meta_path.string());
      if (meta.contains("num_features")) {
        GNNPIPE_CHECK_DATA(meta["num_features"].is_number_integer(), "{}: num_features is not an integer",
                           meta_path.string());
        const int64_t declared = meta["num_features"].get<int64_t>();
        GNNPIPE_CHECK_DATA(declared >= cols, "{}: num_features {} but a feature column {} exists", meta_path.string(),
                           declared, cols - 1);
        cols = declared;
      }
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
  d.splits.train = load<NodeId>(dir, "train_idx.npy");
  d.splits.val = load<NodeId>(dir, "val_idx.npy");
  d.splits.test = load<NodeId>(dir, "test_idx.npy");
  d.validate(dir.string());
  return d;
}

}  // namespace gnnpipe::graph::io
