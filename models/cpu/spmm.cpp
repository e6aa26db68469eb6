#include "gnnpipe/models/ops/spmm.hpp"

#include <algorithm>
#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
template <class T>
void spmm(const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  check_shape(x, block.num_src, x.cols, "spmm: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm: y (num_dst x F)");
  detail::weighted_rows(block.num_dst, block.offsets.data(), block.indices.data(), block.num_edges(), x, y,
                        [&](int64_t e) { return detail::edge_weight<T>(block, e); });
}

template <class T>
void spmm_bias(const graph::Block& block, ConstView<T> x, std::span<const T> bias, bool relu, MatrixView<T> y) {
  check_shape(x, block.num_src, x.cols, "spmm_bias: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm_bias: y (num_dst x F)");
  GNNPIPE_CHECK(static_cast<int64_t>(bias.size()) == x.cols, "spmm_bias: bias of {} values for {} columns",
                bias.size(), x.cols);
  // The same expressions as bias_add (out[c] += bias[c]) and relu (v > 0 ? v : 0).
  const auto epilogue = [&](std::span<T> o) {
    detail::bias_relu_row(o.data(), bias.data(), static_cast<int64_t>(o.size()), relu);
  };
  detail::weighted_rows(block.num_dst, block.offsets.data(), block.indices.data(), block.num_edges(), x, y,
                        [&](int64_t e) { return detail::edge_weight<T>(block, e); }, epilogue);
}

template <class T>
void spmm_bias_scaled(const graph::Block& block, ConstView<T> x, std::span<const float> factors,
                      std::span<const T> bias, bool relu, MatrixView<T> y) {
  if (factors.empty()) return spmm_bias<T>(block, x, bias, relu, y);
  check_shape(x, block.num_src, x.cols, "spmm_bias_scaled: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm_bias_scaled: y (num_dst x F)");
  GNNPIPE_CHECK(static_cast<int64_t>(bias.size()) == x.cols && static_cast<int64_t>(factors.size()) == x.rows,
                "spmm_bias_scaled: bias of {} values for {} columns, {} factors for {} rows", bias.size(), x.cols,
                factors.size(), x.rows);
  const auto epilogue = [&](std::span<T> o) {
    detail::bias_relu_row(o.data(), bias.data(), static_cast<int64_t>(o.size()), relu);
  };
  detail::weighted_rows<T, true>(block.num_dst, block.offsets.data(), block.indices.data(), block.num_edges(), x, y,
                                 [&](int64_t e) { return detail::edge_weight<T>(block, e); }, epilogue,
                                 factors.data());
}

template <class T>
void spmm_backward_scaled(const graph::Block& block, ConstView<T> dy, std::span<const float> factors, bool accumulate,
                          MatrixView<T> g) {
  check_shape(dy, block.num_dst, dy.cols, "spmm_backward_scaled: dy (num_dst x F)");
  check_shape(g, block.num_src, dy.cols, "spmm_backward_scaled: g (num_src x F)");
  GNNPIPE_CHECK(factors.empty() || static_cast<int64_t>(factors.size()) == block.num_src,
                "spmm_backward_scaled: {} factors for {} source rows", factors.size(), block.num_src);
  const int64_t f = dy.cols;
  const auto weight = [&](int64_t k) { return detail::edge_weight<T>(block, block.t_edges[k]); };
  detail::parallel_rows(block.num_src, detail::grain_for(detail::edges_per_row(block.num_edges(), block.num_src) * f),
                        [&](int64_t begin, int64_t end) {
                          std::vector<T> sum(static_cast<std::size_t>(f));  // one row of A^T dy, never stored
                          for (int64_t r = begin; r < end; ++r) {
                            detail::weighted_row(sum.data(), dy, block.t_indices.data(), block.t_offsets[r],
                                                 block.t_offsets[r + 1], weight);
                            const T s = factors.empty() ? T{1} : static_cast<T>(factors[static_cast<std::size_t>(r)]);
                            T* o = g.row(r).data();
                            // add_scaled_rows' o + s x (axpy(1)'s o + x), or scale_rows' x s (copy's x).
                            if (accumulate) {
                              detail::axpy_row(o, sum.data(), s, f);
                            } else {
                              detail::scale_row(o, sum.data(), s, f);
                            }
                          }
                        });
}

template <class T>
void spmm_backward(const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  check_shape(dy, block.num_dst, dy.cols, "spmm_backward: dy (num_dst x F)");
  check_shape(dx, block.num_src, dy.cols, "spmm_backward: dx (num_src x F)");
  detail::weighted_rows(block.num_src, block.t_offsets.data(), block.t_indices.data(), block.num_edges(), dy, dx,
                        [&](int64_t k) { return detail::edge_weight<T>(block, block.t_edges[k]); });
}

namespace {

// Checks alpha (E x H) and a feature matrix of H * C columns; returns C.
int64_t channels_per_head(const graph::Block& block, int64_t alpha_rows, int64_t heads, int64_t feature_cols,
                          const char* what) {
  GNNPIPE_CHECK(alpha_rows == block.num_edges() && heads > 0,
                "{}: alpha has shape [{} x {}], expected [{} edges x heads > 0]", what, alpha_rows, heads,
                block.num_edges());
  GNNPIPE_CHECK(feature_cols % heads == 0, "{}: {} feature columns do not split into {} heads", what, feature_cols,
                heads);
  return feature_cols / heads;
}

}  // namespace

namespace {

// out[r] = sum over entries k of row r: alpha[edge_of(k)] (per head) * in[neighbor[k]], for the
// rows of a CSR (offsets, neighbor). Forward walks the destination CSR (edge_of(k) = k),
// the x-gradient walks the transpose (edge_of(k) = t_edges[k]): same loop, no atomics.
template <class T, class EdgeOf>
void edge_weighted_rows(int64_t rows, const graph::EdgeOffset* offsets, const graph::NodeId* neighbor, EdgeOf edge_of,
                        int64_t edges, ConstView<T> alpha, ConstView<T> in, MatrixView<T> out, int64_t ch) {
  const int64_t heads = alpha.cols;
  const int64_t avg = rows > 0 ? edges / rows + 1 : 1;
  detail::parallel_rows(rows, detail::grain_for(avg * in.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const std::span<T> o = out.row(r);
      std::fill(o.begin(), o.end(), T{0});
      for (int64_t k = offsets[r]; k < offsets[r + 1]; ++k) {
        const T* src = in.row(neighbor[k]).data();
        const T* a = alpha.row(edge_of(k)).data();
        for (int64_t h = 0; h < heads; ++h) detail::axpy_row(o.data() + h * ch, src + h * ch, a[h], ch);
      }
    }
  });
}

}  // namespace

template <class T>
void spmm_edge_weighted(const graph::Block& block, ConstView<T> alpha, ConstView<T> x, MatrixView<T> y) {
  const int64_t ch = channels_per_head(block, alpha.rows, alpha.cols, x.cols, "spmm_edge_weighted");
  check_shape(x, block.num_src, x.cols, "spmm_edge_weighted: x (num_src x H*C)");
  check_shape(y, block.num_dst, x.cols, "spmm_edge_weighted: y (num_dst x H*C)");
  edge_weighted_rows<T>(block.num_dst, block.offsets.data(), block.indices.data(), [](int64_t k) { return k; },
                        block.num_edges(), alpha, x, y, ch);
}

template <class T>
void spmm_edge_weighted_backward_x(const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx) {
  const int64_t ch = channels_per_head(block, alpha.rows, alpha.cols, dy.cols, "spmm_edge_weighted_backward_x");
  check_shape(dy, block.num_dst, dy.cols, "spmm_edge_weighted_backward_x: dy (num_dst x H*C)");
  check_shape(dx, block.num_src, dy.cols, "spmm_edge_weighted_backward_x: dx (num_src x H*C)");
  const graph::EdgeOffset* t_edges = block.t_edges.data();
  edge_weighted_rows<T>(block.num_src, block.t_offsets.data(), block.t_indices.data(),
                        [t_edges](int64_t k) { return t_edges[k]; }, block.num_edges(), alpha, dy, dx, ch);
}

template <class T>
void spmm_edge_weighted_backward_alpha(const graph::Block& block, ConstView<T> x, ConstView<T> dy,
                                       MatrixView<T> dalpha) {
  const int64_t heads = dalpha.cols;
  const int64_t ch = channels_per_head(block, dalpha.rows, heads, x.cols, "spmm_edge_weighted_backward_alpha");
  check_shape(x, block.num_src, x.cols, "spmm_edge_weighted_backward_alpha: x (num_src x H*C)");
  check_shape(dy, block.num_dst, x.cols, "spmm_edge_weighted_backward_alpha: dy (num_dst x H*C)");
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(avg * x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const T* g = dy.row(v).data();
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        const T* in = x.row(block.indices[e]).data();
        T* out = dalpha.row(e).data();
        for (int64_t h = 0; h < heads; ++h) {
          T sum = 0;
          for (int64_t c = h * ch; c < (h + 1) * ch; ++c) sum += g[c] * in[c];
          out[h] = sum;
        }
      }
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                    \
  template void spmm<T>(const graph::Block&, ConstView<T>, MatrixView<T>);                                        \
  template void spmm_backward<T>(const graph::Block&, ConstView<T>, MatrixView<T>);                               \
  template void spmm_bias<T>(const graph::Block&, ConstView<T>, std::span<const T>, bool, MatrixView<T>);          \
  template void spmm_bias_scaled<T>(const graph::Block&, ConstView<T>, std::span<const float>, std::span<const T>, \
                                    bool, MatrixView<T>);                                                          \
  template void spmm_backward_scaled<T>(const graph::Block&, ConstView<T>, std::span<const float>, bool,           \
                                        MatrixView<T>);                                                            \
  template void spmm_edge_weighted<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);            \
  template void spmm_edge_weighted_backward_x<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>); \
  template void spmm_edge_weighted_backward_alpha<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
