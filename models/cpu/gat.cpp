#include "gnnpipe/models/ops/gat.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {

template <class T>
void sddmm_add(const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst, MatrixView<T> scores) {
  const int64_t heads = a_src.cols;
  check_shape(a_src, block.num_src, heads, "sddmm_add: a_src (num_src x H)");
  check_shape(a_dst, block.num_dst, heads, "sddmm_add: a_dst (num_dst x H)");
  check_shape(scores, block.num_edges(), heads, "sddmm_add: scores (E x H)");
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(avg * heads), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const T* d = a_dst.row(v).data();
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        const T* s = a_src.row(block.indices[e]).data();
        T* out = scores.row(e).data();
        for (int64_t h = 0; h < heads; ++h) out[h] = s[h] + d[h];
      }
    }
  });
}

template <class T>
void sddmm_add_backward(const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src, MatrixView<T> da_dst) {
  const int64_t heads = dscores.cols;
  check_shape(dscores, block.num_edges(), heads, "sddmm_add_backward: dscores (E x H)");
  check_shape(da_src, block.num_src, heads, "sddmm_add_backward: da_src (num_src x H)");
  check_shape(da_dst, block.num_dst, heads, "sddmm_add_backward: da_dst (num_dst x H)");
  const int64_t avg_dst = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(avg_dst * heads), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const std::span<T> out = da_dst.row(v);
      std::fill(out.begin(), out.end(), T{0});
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        const T* g = dscores.row(e).data();
        for (int64_t h = 0; h < heads; ++h) out[h] += g[h];
      }
    }
  });
  const int64_t avg_src = detail::edges_per_row(block.num_edges(), block.num_src);
  detail::parallel_rows(block.num_src, detail::grain_for(avg_src * heads), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const std::span<T> out = da_src.row(u);
      std::fill(out.begin(), out.end(), T{0});
      for (int64_t k = block.t_offsets[u]; k < block.t_offsets[u + 1]; ++k) {
        const T* g = dscores.row(block.t_edges[k]).data();
        for (int64_t h = 0; h < heads; ++h) out[h] += g[h];
      }
    }
  });
}

template <class T>
void edge_softmax(const graph::Block& block, MatrixView<T> scores) {
  const int64_t heads = scores.cols;
  check_shape(scores, block.num_edges(), heads, "edge_softmax: scores (E x H)");
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(4 * avg * heads), [&](int64_t begin, int64_t end) {
    std::vector<T> max(static_cast<std::size_t>(heads));
    std::vector<T> sum(static_cast<std::size_t>(heads));
    for (int64_t v = begin; v < end; ++v) {
      const int64_t first = block.offsets[v];
      const int64_t last = block.offsets[v + 1];
      if (first == last) continue;
      std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
      std::fill(sum.begin(), sum.end(), T{0});
      for (int64_t e = first; e < last; ++e) {
        for (int64_t h = 0; h < heads; ++h) max[h] = std::max(max[h], scores(e, h));
      }
      for (int64_t e = first; e < last; ++e) {
        for (int64_t h = 0; h < heads; ++h) {
          scores(e, h) = std::exp(scores(e, h) - max[h]);
          sum[h] += scores(e, h);
        }
      }
      for (int64_t e = first; e < last; ++e) {
        for (int64_t h = 0; h < heads; ++h) scores(e, h) /= sum[h];
      }
    }
  });
}

template <class T>
void edge_softmax_backward(const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha, MatrixView<T> dscores) {
  const int64_t heads = alpha.cols;
  check_shape(alpha, block.num_edges(), heads, "edge_softmax_backward: alpha (E x H)");
  check_shape(dalpha, block.num_edges(), heads, "edge_softmax_backward: dalpha (E x H)");
  check_shape(dscores, block.num_edges(), heads, "edge_softmax_backward: dscores (E x H)");
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  detail::parallel_rows(block.num_dst, detail::grain_for(3 * avg * heads), [&](int64_t begin, int64_t end) {
    std::vector<T> dot(static_cast<std::size_t>(heads));
    for (int64_t v = begin; v < end; ++v) {
      std::fill(dot.begin(), dot.end(), T{0});
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) dot[h] += alpha(e, h) * dalpha(e, h);
      }
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) dscores(e, h) = alpha(e, h) * (dalpha(e, h) - dot[h]);
      }
    }
  });
}

template <class T>
void head_dot(ConstView<T> m, ConstView<T> att, MatrixView<T> a) {
  const int64_t heads = att.rows, channels = att.cols;
  GNNPIPE_CHECK(m.cols == heads * channels && m.rows >= a.rows && a.cols == heads,
                "head_dot: m {} and a {} do not fit att {} (H x C)", shape_str(m), shape_str(a), shape_str(att));
  detail::parallel_rows(a.rows, detail::grain_for(m.cols), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t h = 0; h < heads; ++h) {
        T sum{0};
        for (int64_t c = 0; c < channels; ++c) sum += m(n, h * channels + c) * att(h, c);
        a(n, h) = sum;
      }
  });
}

template <class T>
void head_dot_backward(ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm, MatrixView<T> datt) {
  const int64_t heads = att.rows, channels = att.cols, rows = da.rows;
  GNNPIPE_CHECK(m.cols == heads * channels && dm.cols == m.cols && m.rows >= rows && dm.rows >= rows &&
                    da.cols == heads && datt.rows == heads && datt.cols == channels,
                "head_dot_backward: m {}, da {}, dm {}, datt {} do not fit att {}", shape_str(m), shape_str(da),
                shape_str(dm), shape_str(datt), shape_str(att));
  detail::parallel_rows(rows, detail::grain_for(m.cols), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < channels; ++c) dm(n, h * channels + c) += da(n, h) * att(h, c);
  });
  // One task per (h, c), summing over n in increasing order: deterministic.
  detail::parallel_rows(heads * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t h = j / channels;
      T sum = datt.data[j];
      for (int64_t n = 0; n < rows; ++n) sum += da(n, h) * m(n, j);
      datt.data[j] = sum;
    }
  });
}

template <class T>
void head_mean(ConstView<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(y.cols > 0 && x.rows == y.rows && x.cols % y.cols == 0, "head_mean: x {} does not split into heads of y {}",
                shape_str(x), shape_str(y));
  const int64_t heads = x.cols / y.cols, channels = y.cols;
  const T inv = T{1} / static_cast<T>(heads);
  detail::parallel_rows(y.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v)
      for (int64_t c = 0; c < channels; ++c) {
        T sum{0};
        for (int64_t h = 0; h < heads; ++h) sum += x(v, h * channels + c);
        y(v, c) = sum * inv;
      }
  });
}

template <class T>
void head_mean_backward(ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(dy.cols > 0 && dx.rows == dy.rows && dx.cols % dy.cols == 0,
                "head_mean_backward: dx {} does not split into heads of dy {}", shape_str(dx), shape_str(dy));
  const int64_t heads = dx.cols / dy.cols, channels = dy.cols;
  const T inv = T{1} / static_cast<T>(heads);
  detail::parallel_rows(dy.rows, detail::grain_for(dx.cols), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t c = 0; c < channels; ++c) dx(v, h * channels + c) = dy(v, c) * inv;
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                    \
  template void sddmm_add<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);                     \
  template void sddmm_add_backward<T>(const graph::Block&, ConstView<T>, MatrixView<T>, MatrixView<T>);           \
  template void edge_softmax<T>(const graph::Block&, MatrixView<T>);                                              \
  template void edge_softmax_backward<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);       \
  template void head_dot<T>(ConstView<T>, ConstView<T>, MatrixView<T>);                                          \
  template void head_dot_backward<T>(ConstView<T>, ConstView<T>, ConstView<T>, MatrixView<T>, MatrixView<T>);    \
  template void head_mean<T>(ConstView<T>, MatrixView<T>);                                                        \
  template void head_mean_backward<T>(ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
