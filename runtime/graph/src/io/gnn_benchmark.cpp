#include "gnnpipe/graph/io/gnn_benchmark.hpp"

#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/csr_features.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"

namespace gnnpipe::graph::io {
namespace {

namespace fs = std::filesystem;

// The (rows, cols) of an `*_shape` entry.
std::pair<int64_t, int64_t> read_shape(const NpzArchive& npz, const std::string& name, const std::string& what) {
  const auto shape = to_host_array<int64_t>(npz.read(name), what + ":" + name);
  GNNPIPE_CHECK_DATA(shape.size() == 2 && shape[0] >= 0 && shape[1] >= 0, "{}:{}: expected two non-negative sizes", what,
                     name);
  return {shape[0], shape[1]};
}

}  // namespace

Dataset read_gnn_benchmark_npz(const NpzArchive& npz) {
  const fs::path& file = npz.path();
  const std::string what = file.string();
  const auto [n, n_cols] = read_shape(npz, "adj_shape", what);
  GNNPIPE_CHECK_DATA(n == n_cols, "{}: adjacency is {} x {}, not square", what, n, n_cols);
  const auto indptr = to_host_array<int64_t>(npz.read("adj_indptr"), what + ":adj_indptr");
  const auto indices = to_host_array<int32_t>(npz.read("adj_indices"), what + ":adj_indices");
  GNNPIPE_CHECK_DATA(indptr.size() == static_cast<std::size_t>(n + 1), "{}: adj_indptr has {} entries for {} nodes", what,
                     indptr.size(), n);
  // Validate as CSR, then list the stored edges i -> j and build undirected, without self-loops.
  const CsrGraph stored = CsrGraph::from_arrays(indptr, indices, what + ":adj");
  std::vector<NodeId> src(indices.size());
  for (NodeId v = 0; v < stored.num_nodes(); ++v) {
    std::fill(src.begin() + stored.offsets()[static_cast<std::size_t>(v)],
              src.begin() + stored.offsets()[static_cast<std::size_t>(v) + 1], v);
  }
  Dataset d;
  d.name = file.stem().string();
  d.graph = CsrGraph::from_coo(static_cast<NodeId>(n), src, stored.indices(),
                               {.symmetrize = true, .dedupe = true, .self_loops = SelfLoops::kRemove});

  if (npz.contains("attr_data")) {
    const auto [rows, cols] = read_shape(npz, "attr_shape", what);
    GNNPIPE_CHECK_DATA(rows == n, "{}: {} feature rows for {} nodes", what, rows, n);
    d.features = dense_from_csr(to_host_array<int64_t>(npz.read("attr_indptr"), what + ":attr_indptr"),
                                to_host_array<int64_t>(npz.read("attr_indices"), what + ":attr_indices"),
                                to_host_array<float>(npz.read("attr_data"), what + ":attr_data"), rows, cols,
                                what + ":attr");
  } else if (npz.contains("attr_matrix")) {
    const NpyArray dense = npz.read("attr_matrix");
    GNNPIPE_CHECK_DATA(dense.shape.size() == 2 && dense.shape[0] == n, "{}: attr_matrix must be {} x F", what, n);
    d.features = FeatureStore(to_host_array<float>(dense, what + ":attr_matrix"), dense.shape[0], dense.shape[1], what);
  }
  if (npz.contains("labels")) {
    auto labels = to_host_array<int32_t>(npz.read("labels"), what + ":labels");
    GNNPIPE_CHECK_DATA(labels.size() == static_cast<std::size_t>(n), "{}: {} labels for {} nodes", what, labels.size(), n);
    int32_t max_label = -1;
    for (int32_t l : labels) max_label = std::max(max_label, l);
    d.labels.single = std::move(labels);
    d.labels.num_classes = max_label + 1;
  }
  d.validate(what);
  return d;
}

void read_split_dir(Dataset& dataset, const fs::path& dir, const std::string& prefix) {
  auto read = [&](const char* part) {
    const fs::path path = dir / (prefix + part + ".npy");
    return to_host_array<NodeId>(read_npy(path), path.string());
  };
  dataset.splits.train = read("train");
  dataset.splits.val = read("val");
  dataset.splits.test = read("test");
}

}  // namespace gnnpipe::graph::io
