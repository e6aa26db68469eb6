#include "gnnpipe/models/ops/gated.hpp"

#include <algorithm>
#include <cmath>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

template <class T>
T sigmoid(T x) {
  return T{1} / (T{1} + std::exp(-x));
}

// Checks the GRU operands' shapes; returns C.
template <class T>
int64_t gru_width(ConstView<T> gi, ConstView<T> gh, ConstView<T> h, int64_t c, const char* what) {
  GNNPIPE_CHECK(gi.cols == 3 * c && gh.rows == gi.rows && gh.cols == gi.cols && h.rows == gi.rows && h.cols <= c,
                "{}: gi {}, gh {} and h {} do not fit a GRU of width {}", what, shape_str(gi), shape_str(gh),
                shape_str(h), c);
  return c;
}

}  // namespace

template <class T>
void gru_cell(ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new) {
  const int64_t c = gru_width<T>(gi, gh, h, h_new.cols, "gru_cell");
  check_shape(h_new, gi.rows, c, "gru_cell: h_new");
  detail::parallel_rows(gi.rows, detail::grain_for(8 * c), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* i = gi.row(n).data();
      const T* g = gh.row(n).data();
      for (int64_t k = 0; k < c; ++k) {
        const T r = sigmoid(i[k] + g[k]);
        const T z = sigmoid(i[c + k] + g[c + k]);
        const T nn = std::tanh(i[2 * c + k] + r * g[2 * c + k]);
        const T prev = k < h.cols ? h(n, k) : T{0};
        h_new(n, k) = (T{1} - z) * nn + z * prev;
      }
    }
  });
}

template <class T>
void gru_cell_backward(ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new, MatrixView<T> dgi,
                       MatrixView<T> dgh, MatrixView<T> dh) {
  const int64_t c = gru_width<T>(gi, gh, h, dh_new.cols, "gru_cell_backward");
  check_shape(dh_new, gi.rows, c, "gru_cell_backward: dh_new");
  check_shape(dgi, gi.rows, 3 * c, "gru_cell_backward: dgi");
  check_shape(dgh, gi.rows, 3 * c, "gru_cell_backward: dgh");
  check_shape(dh, gi.rows, h.cols, "gru_cell_backward: dh");
  detail::parallel_rows(gi.rows, detail::grain_for(12 * c), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* i = gi.row(n).data();
      const T* g = gh.row(n).data();
      T* di = dgi.row(n).data();
      T* dg = dgh.row(n).data();
      for (int64_t k = 0; k < c; ++k) {
        const T r = sigmoid(i[k] + g[k]);
        const T z = sigmoid(i[c + k] + g[c + k]);
        const T nn = std::tanh(i[2 * c + k] + r * g[2 * c + k]);
        const T prev = k < h.cols ? h(n, k) : T{0};
        const T d = dh_new(n, k);
        const T dn = d * (T{1} - z) * (T{1} - nn * nn);  // through tanh
        const T dz = d * (prev - nn) * z * (T{1} - z);      // through sigmoid
        const T dr = dn * g[2 * c + k] * r * (T{1} - r);
        di[k] = dr;
        dg[k] = dr;
        di[c + k] = dz;
        dg[c + k] = dz;
        di[2 * c + k] = dn;
        dg[2 * c + k] = dn * r;
        if (k < h.cols) dh(n, k) = d * z;
      }
    }
  });
}

template <class T>
void segment_max(const graph::Block& block, ConstView<T> x, MatrixView<T> y, MatrixView<int64_t> argmax) {
  check_shape(x, block.num_src, x.cols, "segment_max: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "segment_max: y (num_dst x F)");
  check_shape(MatrixView<const int64_t>(argmax), block.num_dst, x.cols, "segment_max: argmax (num_dst x F)");
  const int64_t f = x.cols;
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(avg * f), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const int64_t first = block.offsets[v], last = block.offsets[v + 1];
      if (first == last) {
        std::fill(y.row(v).begin(), y.row(v).end(), T{0});
        std::fill(argmax.row(v).begin(), argmax.row(v).end(), int64_t{-1});
        continue;
      }
      const T* in = x.row(block.indices[first]).data();
      std::copy(in, in + f, y.row(v).begin());
      std::fill(argmax.row(v).begin(), argmax.row(v).end(), first);
      for (int64_t e = first + 1; e < last; ++e) {
        in = x.row(block.indices[e]).data();
        for (int64_t c = 0; c < f; ++c) {
          if (y(v, c) < in[c]) {  // strict: the first maximum wins ties
            y(v, c) = in[c];
            argmax(v, c) = e;
          }
        }
      }
    }
  });
}

template <class T>
void segment_max_backward(const graph::Block& block, MatrixView<const int64_t> argmax, ConstView<T> dy,
                          MatrixView<T> dx) {
  check_shape(dy, block.num_dst, dy.cols, "segment_max_backward: dy (num_dst x F)");
  check_shape(argmax, block.num_dst, dy.cols, "segment_max_backward: argmax (num_dst x F)");
  check_shape(dx, block.num_src, dy.cols, "segment_max_backward: dx (num_src x F)");
  const int64_t f = dy.cols;
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_src);
  detail::parallel_rows(block.num_src, detail::grain_for(avg * f), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const std::span<T> out = dx.row(u);
      std::fill(out.begin(), out.end(), T{0});
      for (int64_t k = block.t_offsets[u]; k < block.t_offsets[u + 1]; ++k) {
        const int64_t v = block.t_indices[k], e = block.t_edges[k];
        for (int64_t c = 0; c < f; ++c) {
          if (argmax(v, c) == e) out[c] += dy(v, c);
        }
      }
    }
  });
}

template <class T>
void spmm_mean(const graph::Block& block, ConstView<T> x, MatrixView<T> y) {
  check_shape(x, block.num_src, x.cols, "spmm_mean: x (num_src x F)");
  check_shape(y, block.num_dst, x.cols, "spmm_mean: y (num_dst x F)");
  const int64_t f = x.cols;
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(avg * f), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const std::span<T> out = y.row(v);
      std::fill(out.begin(), out.end(), T{0});
      const int64_t first = block.offsets[v], last = block.offsets[v + 1];
      for (int64_t e = first; e < last; ++e) {
        const T* in = x.row(block.indices[e]).data();
        for (int64_t c = 0; c < f; ++c) out[c] += in[c];
      }
      if (last > first) {
        const T inv = T{1} / static_cast<T>(last - first);
        for (int64_t c = 0; c < f; ++c) out[c] *= inv;
      }
    }
  });
}

template <class T>
void spmm_mean_backward(const graph::Block& block, ConstView<T> dy, MatrixView<T> dx) {
  check_shape(dy, block.num_dst, dy.cols, "spmm_mean_backward: dy (num_dst x F)");
  check_shape(dx, block.num_src, dy.cols, "spmm_mean_backward: dx (num_src x F)");
  detail::weighted_rows(block.num_src, block.t_offsets.data(), block.t_indices.data(), block.num_edges(), dy, dx,
                        [&](int64_t k) {
                          const int64_t v = block.t_indices[k];
                          return T{1} / static_cast<T>(block.offsets[v + 1] - block.offsets[v]);
                        });
}

template <class T>
void head_scale(ConstView<T> gate, ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(gate.rows == x.rows && gate.cols > 0 && x.cols % gate.cols == 0,
                "head_scale: gate {} does not fit x {}", shape_str(gate), shape_str(x));
  check_shape(y, x.rows, x.cols, "head_scale: y");
  const int64_t heads = gate.cols, ch = x.cols / heads;
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < ch; ++c) y(n, h * ch + c) = gate(n, h) * x(n, h * ch + c);
  });
}

template <class T>
void head_scale_backward(ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx, MatrixView<T> dgate) {
  GNNPIPE_CHECK(gate.rows == x.rows && gate.cols > 0 && x.cols % gate.cols == 0,
                "head_scale_backward: gate {} does not fit x {}", shape_str(gate), shape_str(x));
  check_shape(dy, x.rows, x.cols, "head_scale_backward: dy");
  check_shape(dx, x.rows, x.cols, "head_scale_backward: dx");
  check_shape(dgate, gate.rows, gate.cols, "head_scale_backward: dgate");
  const int64_t heads = gate.cols, ch = x.cols / heads;
  detail::parallel_rows(x.rows, detail::grain_for(2 * x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t h = 0; h < heads; ++h) {
        T sum{0};
        for (int64_t c = 0; c < ch; ++c) {
          const int64_t j = h * ch + c;
          sum += dy(n, j) * x(n, j);
          dx(n, j) = gate(n, h) * dy(n, j);
        }
        dgate(n, h) = sum;
      }
  });
}

template <class T>
void axpy(std::type_identity_t<T> a, ConstView<T> x, MatrixView<T> y) {
  check_shape(y, x.rows, x.cols, "axpy: y");
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t c = 0; c < x.cols; ++c) y(n, c) += a * x(n, c);
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                      \
  template void gru_cell<T>(ConstView<T>, ConstView<T>, ConstView<T>, MatrixView<T>);                              \
  template void gru_cell_backward<T>(ConstView<T>, ConstView<T>, ConstView<T>, ConstView<T>, MatrixView<T>,        \
                                     MatrixView<T>, MatrixView<T>);                                                 \
  template void segment_max<T>(const graph::Block&, ConstView<T>, MatrixView<T>, MatrixView<int64_t>);             \
  template void segment_max_backward<T>(const graph::Block&, MatrixView<const int64_t>, ConstView<T>,               \
                                        MatrixView<T>);                                                             \
  template void spmm_mean<T>(const graph::Block&, ConstView<T>, MatrixView<T>);                                    \
  template void spmm_mean_backward<T>(const graph::Block&, ConstView<T>, MatrixView<T>);                           \
  template void head_scale<T>(ConstView<T>, ConstView<T>, MatrixView<T>);                                          \
  template void head_scale_backward<T>(ConstView<T>, ConstView<T>, ConstView<T>, MatrixView<T>, MatrixView<T>);    \
  template void axpy<T>(T, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
