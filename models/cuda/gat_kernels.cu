// GAT attention pieces (cpu twins: models/cpu/gat.cpp, the attention dropout of
// models/cpu/dropout_forward.cpp and the head_dot / head mean loops of models/src/layers/gat_layer.cpp).
// Per-destination reductions run one warp per row: lanes load the row's (edge, head) pairs in
// parallel and fold them per head in edge order through shuffles (util::fold_chunk), so every sum
// has the CPU's order and two runs agree bitwise.
#include <cstdint>
#include <limits>

#include "cuda_check.hpp"
#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "kernel_utils.cuh"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {
namespace {

using util::add_rn;
using util::kBlockThreads;
using util::kWarpSize;
using util::mul_rn;
using util::Pack;

struct AddFold {
  template <class T>
  __device__ T operator()(T acc, T v) const {
    return add_rn(acc, v);
  }
};
// std::max(acc, v) exactly: (acc < v) ? v : acc.
struct MaxFold {
  template <class T>
  __device__ T operator()(T acc, T v) const {
    return acc < v ? v : acc;
  }
};

inline unsigned warp_grid(int64_t rows) { return util::grid_for(rows, util::kWarpsPerBlock); }

// scores[e, h] = a_src[u, h] + a_dst[v, h]: a group of G lanes per destination, one lane per edge.
template <class T, int G>
__global__ void sddmm_add_kernel(int64_t rows, const int64_t* __restrict__ offsets, const int32_t* __restrict__ indices,
                                 const T* __restrict__ a_src, const T* __restrict__ a_dst, int64_t heads,
                                 T* __restrict__ scores) {
  const int lane = static_cast<int>(threadIdx.x % G);
  for (int64_t v = util::global_thread() / G; v < rows; v += util::grid_threads() / G) {
    const T* d = a_dst + v * heads;
    for (int64_t e = offsets[v] + lane, end = offsets[v + 1]; e < end; e += G) {
      const T* s = a_src + static_cast<int64_t>(indices[e]) * heads;
      for (int64_t h = 0; h < heads; ++h) scores[e * heads + h] = add_rn(s[h], d[h]);
    }
  }
}

// Attention dropout keyed by (global destination, global source, head): a group of G lanes per
// destination v (key.with(id(v)) derived once per lane), one lane per edge; for edge e = (u -> v)
// the heads take positions id(u) * heads + h of that stream, drawn a mask byte (eight heads) at a
// time by dropout_bits_at (the CPU twin's bits and layout, dropout_mask.hpp: edge e's mask is the
// row_bytes bytes from e * row_bytes). y may alias alpha: each pair is read and then written by
// one lane.
template <class T, int G>
__global__ void edge_dropout_kernel(int64_t rows, const int64_t* __restrict__ offsets,
                                    const int32_t* __restrict__ indices, const int32_t* __restrict__ row_ids,
                                    core::RngKey key, uint32_t threshold, T scale, const T* alpha, int64_t heads,
                                    int64_t row_bytes, T* y, uint8_t* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % G);
  for (int64_t v = util::global_thread() / G; v < rows; v += util::grid_threads() / G) {
    const core::RngKey dst_key =
        key.with(row_ids != nullptr ? static_cast<uint64_t>(row_ids[v]) : static_cast<uint64_t>(v));
    for (int64_t e = offsets[v] + lane, end = offsets[v + 1]; e < end; e += G) {
      const int32_t u = indices[e];
      const uint64_t first = (row_ids != nullptr ? static_cast<uint64_t>(row_ids[u]) : static_cast<uint64_t>(u)) *
                             static_cast<uint64_t>(heads);
      for (int64_t k = 0; k < row_bytes; ++k) {
        const int64_t h0 = 8 * k;
        const int n = heads - h0 < 8 ? static_cast<int>(heads - h0) : 8;
        const uint32_t bits =
            dropout_bits_at(dst_key, first + static_cast<uint64_t>(h0), static_cast<unsigned>(n), threshold);
        mask[e * row_bytes + k] = static_cast<uint8_t>(bits);
        const int64_t base = e * heads + h0;
        for (int j = 0; j < n; ++j) y[base + j] = (bits >> j) & 1u ? mul_rn(alpha[base + j], scale) : T{0};
      }
    }
  }
}

// p == 0: the identity over the E * H pairs (no bits drawn), one thread per mask byte.
template <class T>
__global__ void edge_dropout_identity_kernel(const T* alpha, T* y, uint8_t* __restrict__ mask, int64_t edges,
                                             int64_t heads, int64_t row_bytes) {
  for (int64_t t = util::global_thread(); t < edges * row_bytes; t += util::grid_threads()) {
    const int64_t e = t / row_bytes;
    const int64_t h0 = 8 * (t - e * row_bytes);
    const int n = heads - h0 < 8 ? static_cast<int>(heads - h0) : 8;
    mask[t] = static_cast<uint8_t>((1u << n) - 1u);
    const int64_t base = e * heads + h0;
    for (int j = 0; j < n; ++j) y[base + j] = alpha[base + j];
  }
}

// out[r, h] = sum over entries k of row r (in order) of dscores[e, h], e = edge_of ? edge_of[k] : k.
// One warp per row (da_dst over the forward CSR, da_src over the transpose).
template <class T>
__global__ void head_segment_sum_kernel(int64_t rows, const int64_t* __restrict__ offsets,
                                        const int64_t* __restrict__ edge_of, const T* __restrict__ dscores,
                                        int64_t heads, T* __restrict__ out) {
  const int lane = util::lane_id();
  for (int64_t r = util::global_thread() / kWarpSize; r < rows; r += util::grid_threads() / kWarpSize) {
    const int64_t first = offsets[r];
    const int64_t count = offsets[r + 1] - first;
    for (int64_t h0 = 0; h0 < heads; h0 += kWarpSize) {
      const int hn = static_cast<int>(heads - h0 < kWarpSize ? heads - h0 : kWarpSize);
      T sum{0};
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int n, int h_first) {
        T value{0};
        if (valid) {
          const int64_t e = edge_of != nullptr ? edge_of[first + k] : first + k;
          value = dscores[e * heads + h0 + h];
        }
        sum = util::fold_chunk(sum, value, n, h_first, hn, AddFold{});
      });
      if (lane < hn) out[r * heads + h0 + lane] = sum;
    }
  }
}

// In place, per destination and head: s <- exp(s - max) / sum exp(s - max) over the row's edges,
// the max and the sum folded in edge order (the CPU's loops, in T). One warp per destination.
template <class T>
__global__ void edge_softmax_kernel(int64_t rows, const int64_t* __restrict__ offsets, int64_t heads,
                                    T* __restrict__ scores) {
  for (int64_t v = util::global_thread() / kWarpSize; v < rows; v += util::grid_threads() / kWarpSize) {
    const int64_t first = offsets[v];
    const int64_t count = offsets[v + 1] - first;
    if (count == 0) continue;
    for (int64_t h0 = 0; h0 < heads; h0 += kWarpSize) {
      const int hn = static_cast<int>(heads - h0 < kWarpSize ? heads - h0 : kWarpSize);
      T* base = scores + first * heads + h0;  // pair (k, h) at base[k * heads + h]
      T row_max = -std::numeric_limits<T>::infinity();
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int n, int h_first) {
        const T s = valid ? base[k * heads + h] : T{0};
        row_max = util::fold_chunk(row_max, s, n, h_first, hn, MaxFold{});
      });
      T sum{0};
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int n, int h_first) {
        const T m = __shfl_sync(util::kFullMask, row_max, h);
        T ex{0};
        if (valid) {
          ex = util::exp_t(util::sub_rn(base[k * heads + h], m));
          base[k * heads + h] = ex;
        }
        sum = util::fold_chunk(sum, ex, n, h_first, hn, AddFold{});
      });
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int, int) {
        const T s = __shfl_sync(util::kFullMask, sum, h);
        if (valid) base[k * heads + h] = util::div_rn(base[k * heads + h], s);
      });
    }
  }
}

// dscores = alpha * (dalpha - sum over the row's edges of alpha * dalpha), per head; the sum folded
// in edge order. dscores may alias dalpha: each pair is read and then written by the same lane.
template <class T>
__global__ void edge_softmax_backward_kernel(int64_t rows, const int64_t* __restrict__ offsets, int64_t heads,
                                             const T* __restrict__ alpha, const T* dalpha, T* dscores) {
  for (int64_t v = util::global_thread() / kWarpSize; v < rows; v += util::grid_threads() / kWarpSize) {
    const int64_t first = offsets[v];
    const int64_t count = offsets[v + 1] - first;
    for (int64_t h0 = 0; h0 < heads; h0 += kWarpSize) {
      const int hn = static_cast<int>(heads - h0 < kWarpSize ? heads - h0 : kWarpSize);
      const int64_t base = first * heads + h0;
      T dot{0};
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int n, int h_first) {
        const int64_t i = base + k * heads + h;
        const T p = valid ? mul_rn(alpha[i], dalpha[i]) : T{0};
        dot = util::fold_chunk(dot, p, n, h_first, hn, AddFold{});
      });
      util::for_each_chunk(count, hn, [&](int64_t k, int h, bool valid, int, int) {
        const T d = __shfl_sync(util::kFullMask, dot, h);
        const int64_t i = base + k * heads + h;
        if (valid) dscores[i] = mul_rn(alpha[i], util::sub_rn(dalpha[i], d));
      });
    }
  }
}

// a[n, h] = sum over c (increasing) of m[n, h*C+c] * att[h, c]: one thread per (n, h).
template <class T, int V>
__global__ void head_dot_kernel(const T* __restrict__ m, int64_t rows, const T* __restrict__ att, int64_t heads,
                                int64_t channels, T* __restrict__ a) {
  using P = Pack<T, V>;
  const int64_t packs = channels / V;
  for (int64_t i = util::global_thread(); i < rows * heads; i += util::grid_threads()) {
    const int64_t n = i / heads;
    const int64_t h = i - n * heads;
    const P* row = reinterpret_cast<const P*>(m + (n * heads + h) * channels);
    const P* w = reinterpret_cast<const P*>(att + h * channels);
    T sum{0};
    for (int64_t j = 0; j < packs; ++j) {
      const P pm = util::ldg_pack(row, j);
      const P pw = util::ldg_pack(w, j);
#pragma unroll
      for (int t = 0; t < V; ++t) sum = add_rn(sum, mul_rn(pm.v[t], pw.v[t]));
    }
    a[i] = sum;
  }
}

// dm[n, h*C+c] += da[n, h] * att[h, c]: one warp per row n, lanes over c.
template <class T>
__global__ void head_dot_backward_m_kernel(const T* __restrict__ da, int64_t rows, const T* __restrict__ att,
                                           int64_t heads, int64_t channels, T* __restrict__ dm) {
  const int lane = util::lane_id();
  for (int64_t n = util::global_thread() / kWarpSize; n < rows; n += util::grid_threads() / kWarpSize) {
    for (int64_t h = 0; h < heads; ++h) {
      const T g = da[n * heads + h];
      T* out = dm + (n * heads + h) * channels;
      for (int64_t c = lane; c < channels; c += kWarpSize) out[c] = add_rn(out[c], mul_rn(g, att[h * channels + c]));
    }
  }
}

// The value summed into datt[h, c] (column j = h*C + c) by row n: da[n, h] * m[n, j].
template <class T>
struct HeadDotAttTerm {
  const T* m;
  const T* da;
  int64_t heads;
  int64_t channels;
  __device__ T operator()(int64_t n, int64_t j) const {
    return mul_rn(da[n * heads + j / channels], m[n * heads * channels + j]);
  }
};

template <class T>
__global__ void head_dot_backward_att_kernel(HeadDotAttTerm<T> term, int64_t rows, T* __restrict__ datt) {
  util::column_block_sum(rows, term.heads * term.channels, term, datt);
}

// y[v, c] = (sum over h (increasing) of x[v, h*C+c]) * (1 / H): one warp per row, lanes over c.
template <class T>
__global__ void head_mean_kernel(const T* __restrict__ x, int64_t rows, int64_t heads, int64_t channels, T inv_heads,
                                 T* __restrict__ y) {
  const int lane = util::lane_id();
  for (int64_t v = util::global_thread() / kWarpSize; v < rows; v += util::grid_threads() / kWarpSize) {
    const T* in = x + v * heads * channels;
    for (int64_t c = lane; c < channels; c += kWarpSize) {
      T sum{0};
      for (int64_t h = 0; h < heads; ++h) sum = add_rn(sum, in[h * channels + c]);
      y[v * channels + c] = mul_rn(sum, inv_heads);
    }
  }
}

// dx[v, h*C+c] = dy[v, c] * (1 / H): one warp per row, lanes over c.
template <class T>
__global__ void head_mean_backward_kernel(const T* __restrict__ dy, int64_t rows, int64_t heads, int64_t channels,
                                          T inv_heads, T* __restrict__ dx) {
  const int lane = util::lane_id();
  for (int64_t v = util::global_thread() / kWarpSize; v < rows; v += util::grid_threads() / kWarpSize) {
    T* out = dx + v * heads * channels;
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t c = lane; c < channels; c += kWarpSize) {
        out[h * channels + c] = mul_rn(dy[v * channels + c], inv_heads);
      }
    }
  }
}

}  // namespace

template <class T>
void launch_sddmm_add(const BlockArrays& b, const T* a_src, const T* a_dst, int64_t heads, T* scores,
                      cudaStream_t stream) {
  if (b.num_dst <= 0 || b.num_edges <= 0 || heads <= 0) return;
  util::with_group_size(util::group_size_for(b.num_edges / b.num_dst + 1), [&]<int G>() {
    sddmm_add_kernel<T, G><<<util::grid_for(b.num_dst, kBlockThreads / G), kBlockThreads, 0, stream>>>(
        b.num_dst, b.offsets, b.indices, a_src, a_dst, heads, scores);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  });
}

template <class T>
void launch_sddmm_add_backward(const BlockArrays& b, const T* dscores, int64_t heads, T* da_src, T* da_dst,
                               cudaStream_t stream) {
  if (heads <= 0) return;
  if (b.num_dst > 0) {
    head_segment_sum_kernel<T>
        <<<warp_grid(b.num_dst), kBlockThreads, 0, stream>>>(b.num_dst, b.offsets, nullptr, dscores, heads, da_dst);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  }
  if (b.num_src > 0) {
    head_segment_sum_kernel<T>
        <<<warp_grid(b.num_src), kBlockThreads, 0, stream>>>(b.num_src, b.t_offsets, b.t_edges, dscores, heads, da_src);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  }
}

template <class T>
void launch_edge_softmax(const BlockArrays& b, int64_t heads, T* scores, cudaStream_t stream) {
  if (b.num_dst <= 0 || b.num_edges <= 0 || heads <= 0) return;
  edge_softmax_kernel<T><<<warp_grid(b.num_dst), kBlockThreads, 0, stream>>>(b.num_dst, b.offsets, heads, scores);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_edge_softmax_backward(const BlockArrays& b, int64_t heads, const T* alpha, const T* dalpha, T* dscores,
                                  cudaStream_t stream) {
  if (b.num_dst <= 0 || b.num_edges <= 0 || heads <= 0) return;
  edge_softmax_backward_kernel<T>
      <<<warp_grid(b.num_dst), kBlockThreads, 0, stream>>>(b.num_dst, b.offsets, heads, alpha, dalpha, dscores);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_edge_dropout_forward(const BlockArrays& b, const int32_t* row_ids, core::RngKey key, T p, const T* alpha,
                                 int64_t heads, T* y, uint8_t* mask, cudaStream_t stream) {
  if (b.num_dst <= 0 || b.num_edges <= 0 || heads <= 0) return;
  const int64_t row_bytes = dropout_mask_row_bytes(heads);
  if (p == T{0}) {
    edge_dropout_identity_kernel<T><<<util::grid_for(b.num_edges * row_bytes, kBlockThreads), kBlockThreads, 0,
                                      stream>>>(alpha, y, mask, b.num_edges, heads, row_bytes);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const T scale = T{1} / (T{1} - p);  // in T, as the CPU twin
  const uint32_t threshold = dropout_threshold(static_cast<double>(p));
  util::with_group_size(util::group_size_for(b.num_edges / b.num_dst + 1), [&]<int G>() {
    edge_dropout_kernel<T, G><<<util::grid_for(b.num_dst, kBlockThreads / G), kBlockThreads, 0, stream>>>(
        b.num_dst, b.offsets, b.indices, row_ids, key, threshold, scale, alpha, heads, row_bytes, y, mask);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  });
}

template <class T>
void launch_head_dot(const T* m, int64_t rows, const T* att, int64_t heads, int64_t channels, T* a,
                     cudaStream_t stream) {
  if (rows <= 0 || heads <= 0) return;
  constexpr int kV = util::kVecWidth<T>;
  const unsigned blocks = util::grid_for(rows * heads, kBlockThreads);
  if (channels % kV == 0 && util::aligned16(m) && util::aligned16(att)) {
    head_dot_kernel<T, kV><<<blocks, kBlockThreads, 0, stream>>>(m, rows, att, heads, channels, a);
  } else {
    head_dot_kernel<T, 1><<<blocks, kBlockThreads, 0, stream>>>(m, rows, att, heads, channels, a);
  }
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_dot_backward_m(const T* da, int64_t rows, const T* att, int64_t heads, int64_t channels, T* dm,
                                cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  head_dot_backward_m_kernel<T><<<warp_grid(rows), kBlockThreads, 0, stream>>>(da, rows, att, heads, channels, dm);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_dot_backward_att(const T* m, const T* da, int64_t rows, int64_t heads, int64_t channels, T* datt,
                                  cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  const HeadDotAttTerm<T> term{m, da, heads, channels};
  head_dot_backward_att_kernel<T>
      <<<util::column_sum_grid(heads * channels), util::kSumThreads, 0, stream>>>(term, rows, datt);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_mean(const T* x, int64_t rows, int64_t heads, int64_t channels, T* y, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  const T inv = T{1} / static_cast<T>(heads);  // the CPU twin multiplies by 1 / H
  head_mean_kernel<T><<<warp_grid(rows), kBlockThreads, 0, stream>>>(x, rows, heads, channels, inv, y);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_mean_backward(const T* dy, int64_t rows, int64_t heads, int64_t channels, T* dx, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  const T inv = T{1} / static_cast<T>(heads);
  head_mean_backward_kernel<T><<<warp_grid(rows), kBlockThreads, 0, stream>>>(dy, rows, heads, channels, inv, dx);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

#define GNNPIPE_INSTANTIATE(T)                                                                                      \
  template void launch_sddmm_add<T>(const BlockArrays&, const T*, const T*, int64_t, T*, cudaStream_t);             \
  template void launch_sddmm_add_backward<T>(const BlockArrays&, const T*, int64_t, T*, T*, cudaStream_t);          \
  template void launch_edge_softmax<T>(const BlockArrays&, int64_t, T*, cudaStream_t);                              \
  template void launch_edge_softmax_backward<T>(const BlockArrays&, int64_t, const T*, const T*, T*, cudaStream_t); \
  template void launch_edge_dropout_forward<T>(const BlockArrays&, const int32_t*, core::RngKey, T, const T*,       \
                                               int64_t, T*, uint8_t*, cudaStream_t);                                \
  template void launch_head_dot<T>(const T*, int64_t, const T*, int64_t, int64_t, T*, cudaStream_t);                \
  template void launch_head_dot_backward_m<T>(const T*, int64_t, const T*, int64_t, int64_t, T*, cudaStream_t);     \
  template void launch_head_dot_backward_att<T>(const T*, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);   \
  template void launch_head_mean<T>(const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);                         \
  template void launch_head_mean_backward<T>(const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
