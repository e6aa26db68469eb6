#include "gnnpipe/models/ops/gat.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/parallel.hpp"

namespace gnnpipe::models::cpu {

template <class T>
void sddmm_add(const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst, MatrixView<T> scores) {
  const int64_t heads = a_src.cols;
  check_shape(a_src, block.num_src, heads, "sddmm_add: a_src (num_src x H)");
  check_shape(a_dst, block.num_dst, heads, "sddmm_add: a_dst (num_dst x H)");
  check_shape(scores, block.num_edges(), heads, "sddmm_add: scores (E x H)");
  const int64_t avg = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
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
  const int64_t avg_dst = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
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
  const int64_t avg_src = block.num_src > 0 ? block.num_edges() / block.num_src + 1 : 1;
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
  const int64_t avg = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
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
  const int64_t avg = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
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

#define GNNPIPE_INSTANTIATE(T)                                                                                    \
  template void sddmm_add<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);                     \
  template void sddmm_add_backward<T>(const graph::Block&, ConstView<T>, MatrixView<T>, MatrixView<T>);           \
  template void edge_softmax<T>(const graph::Block&, MatrixView<T>);                                              \
  template void edge_softmax_backward<T>(const graph::Block&, ConstView<T>, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
