#pragma once
// Fixtures shared by the models tests: random matrices and blocks, a tiny hand-checkable block,
// and the scalar probe sum(out .* r) whose gradient with respect to out is r.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "graph_helpers.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::test {

// Uniform values in [lo, hi); with min_abs > 0, values closer to 0 than min_abs are pushed out to
// +-min_abs (keeps random inputs away from the kink of relu-like functions).
inline models::Matrix<double> random_matrix(core::Rng& rng, int64_t rows, int64_t cols, double lo = -1, double hi = 1,
                                            double min_abs = 0) {
  models::Matrix<double> m(rows, cols);
  for (double& v : m.flat()) {
    v = lo + (hi - lo) * rng.uniform_double();
    if (std::abs(v) < min_abs) v = v < 0 ? -min_abs : min_abs;
  }
  return m;
}

// A random block: each destination gets 0..max_degree distinct random sources (destinations are
// the first num_dst sources), with weights in [0.1, 1.1) when `weighted`.
inline graph::Block random_block(core::Rng& rng, graph::NodeId num_dst, graph::NodeId num_src, int max_degree,
                                 bool weighted) {
  std::vector<graph::EdgeOffset> offsets{0};
  std::vector<graph::NodeId> indices;
  std::vector<float> weights;
  for (graph::NodeId v = 0; v < num_dst; ++v) {
    const auto degree = static_cast<int>(rng.below(static_cast<uint64_t>(max_degree) + 1));
    std::vector<graph::NodeId> row;
    for (int k = 0; k < degree; ++k) {
      const auto u = static_cast<graph::NodeId>(rng.below(static_cast<uint64_t>(num_src)));
      if (std::find(row.begin(), row.end(), u) == row.end()) row.push_back(u);
    }
    for (graph::NodeId u : row) {
      indices.push_back(u);
      if (weighted) weights.push_back(0.1f + rng.uniform());
    }
    offsets.push_back(static_cast<graph::EdgeOffset>(indices.size()));
  }
  return graph::Block::from_csr(num_dst, num_src, graph::HostArray<graph::EdgeOffset>(std::move(offsets)),
                                graph::HostArray<graph::NodeId>(std::move(indices)),
                                graph::HostArray<float>(std::move(weights)));
}

// 3 destinations, 4 sources: dst 0 <- {0 (w 0.5), 2 (w 2)}, dst 1 <- {0 (w 1), 1 (w 0.25)}, dst 2 <- {}.
// Forward edge ids 0..3 in that order; source 3 has no edges.
inline graph::Block tiny_block(bool weighted) {
  return graph::Block::from_csr(3, 4, graph::HostArray<graph::EdgeOffset>(std::vector<graph::EdgeOffset>{0, 2, 4, 4}),
                                graph::HostArray<graph::NodeId>(std::vector<graph::NodeId>{0, 2, 0, 1}),
                                weighted ? graph::HostArray<float>(std::vector<float>{0.5f, 2.0f, 1.0f, 0.25f})
                                         : graph::HostArray<float>());
}

// sum over elements of a .* b (same shapes).
inline double dot(models::MatrixView<const double> a, models::MatrixView<const double> b) {
  double sum = 0;
  for (int64_t i = 0; i < a.size(); ++i) sum += a.data[i] * b.data[i];
  return sum;
}

template <class T>
std::vector<T> values_of(models::MatrixView<const T> m) {
  return {m.data, m.data + m.size()};
}

// The message of the core::Error thrown by `f`, or a marker that fails every Contains().
template <class F>
std::string error_of(F&& f) {
  return message_of<core::Error>(std::forward<F>(f));
}

}  // namespace gnnpipe::test
