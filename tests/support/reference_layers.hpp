#pragma once
// Reading ../shared/reference's layer files (layers.npz, layers_ggnn_gaan.npz): arrays as doubles,
// PyG's [out, in] Linear weights into our [in, out] parameters, and the reference edge list.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::test {

// The reference file's arrays as doubles; 2-D weights come [out, in] (x @ W.T).
struct Reference {
  graph::io::NpzArchive npz;
  std::vector<double> get(const std::string& name) const {
    const auto a = graph::io::to_host_array<double>(npz.read(name), name);
    return {a.begin(), a.end()};
  }
};

// Copies a reference weight [out, in] into our [in, out] parameter.
template <class T>
void set_transposed(models::MatrixView<T> ours, const std::vector<double>& ref) {
  for (int64_t i = 0; i < ours.rows; ++i)
    for (int64_t o = 0; o < ours.cols; ++o) ours(i, o) = static_cast<T>(ref[static_cast<std::size_t>(o * ours.rows + i)]);
}

// The graph of edge list `name` ([2, E], row 0 sources, row 1 destinations; stored Fortran-order
// in the reference files, so the raw pairs are read) over `nodes` nodes.
inline graph::CsrGraph reference_graph(const graph::io::NpzArchive& npz, graph::NodeId nodes,
                                       const std::string& name = "edge_index") {
  const graph::io::NpyArray e = npz.read(name, {.allow_fortran_order = true});
  const auto flat = graph::io::to_host_array<int64_t>(e, name);
  const auto n = static_cast<std::size_t>(e.shape[1]);
  std::vector<graph::NodeId> src(n), dst(n);
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = static_cast<graph::NodeId>(e.fortran_order ? flat[2 * i] : flat[i]);
    dst[i] = static_cast<graph::NodeId>(e.fortran_order ? flat[2 * i + 1] : flat[n + i]);
  }
  return graph::CsrGraph::from_coo(nodes, src, dst);
}

// Every |got - want| within tol times the largest |want| (at least 1): the agreement of a
// re-implementation whose sums run in another order.
template <class T>
void expect_close_scaled(const std::vector<T>& got, const std::vector<double>& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::abs(w));
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    if (d > worst) worst = d, at = i;
  }
  INFO("worst difference " << worst << " at " << at << " (scale " << scale << ")");
  CHECK(worst <= tol * scale);
}

}  // namespace gnnpipe::test
