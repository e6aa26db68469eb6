// GGNN and GaAN pieces (cpu twins: models/cpu/gated.cpp): one thread per output element, each
// walking its row's edges (or its transposed row) in the CPU's order with uncontracted arithmetic,
// so sums have the CPU's order and two runs agree bitwise. The GRU's sigmoid and tanh use CUDA's
// libm (within a few ulp of the host's: the parity tests bound the difference).
#include <cstdint>

#include "cuda_check.hpp"
#include "kernel_utils.cuh"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {
namespace {

using util::add_rn;
using util::kBlockThreads;
using util::mul_rn;
using util::sub_rn;

inline unsigned grid(int64_t n) { return util::grid_for(n, kBlockThreads); }

__device__ __forceinline__ float tanh_t(float a) { return tanhf(a); }
__device__ __forceinline__ double tanh_t(double a) { return tanh(a); }

template <class T>
__device__ __forceinline__ T sigmoid(T x) {
  return util::div_rn(T{1}, add_rn(T{1}, util::exp_t(-x)));
}

// The gates of element (n, k) of a GRU of width c: r, z, candidate n.
template <class T>
struct Gates {
  T r, z, n;
};

template <class T>
__device__ __forceinline__ Gates<T> gru_gates(const T* i, const T* g, int64_t c, int64_t k) {
  Gates<T> out;
  out.r = sigmoid(add_rn(i[k], g[k]));
  out.z = sigmoid(add_rn(i[c + k], g[c + k]));
  out.n = tanh_t(add_rn(i[2 * c + k], mul_rn(out.r, g[2 * c + k])));
  return out;
}

template <class T>
__global__ void gru_cell_kernel(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ h,
                                int64_t h_cols, int64_t rows, int64_t c, T* __restrict__ h_new) {
  for (int64_t idx = util::global_thread(); idx < rows * c; idx += util::grid_threads()) {
    const int64_t n = idx / c, k = idx % c;
    const Gates<T> s = gru_gates(gi + n * 3 * c, gh + n * 3 * c, c, k);
    const T prev = k < h_cols ? h[n * h_cols + k] : T{0};
    h_new[idx] = add_rn(mul_rn(sub_rn(T{1}, s.z), s.n), mul_rn(s.z, prev));
  }
}

template <class T>
__global__ void gru_cell_backward_kernel(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ h,
                                         int64_t h_cols, const T* __restrict__ dh_new, int64_t rows, int64_t c,
                                         T* __restrict__ dgi, T* __restrict__ dgh, T* __restrict__ dh) {
  for (int64_t idx = util::global_thread(); idx < rows * c; idx += util::grid_threads()) {
    const int64_t n = idx / c, k = idx % c;
    const T* i = gi + n * 3 * c;
    const T* g = gh + n * 3 * c;
    const Gates<T> s = gru_gates(i, g, c, k);
    const T prev = k < h_cols ? h[n * h_cols + k] : T{0};
    const T d = dh_new[idx];
    const T dn = mul_rn(mul_rn(d, sub_rn(T{1}, s.z)), sub_rn(T{1}, mul_rn(s.n, s.n)));
    const T dz = mul_rn(mul_rn(mul_rn(d, sub_rn(prev, s.n)), s.z), sub_rn(T{1}, s.z));
    const T dr = mul_rn(mul_rn(mul_rn(dn, g[2 * c + k]), s.r), sub_rn(T{1}, s.r));
    T* di = dgi + n * 3 * c;
    T* dg = dgh + n * 3 * c;
    di[k] = dr;
    dg[k] = dr;
    di[c + k] = dz;
    dg[c + k] = dz;
    di[2 * c + k] = dn;
    dg[2 * c + k] = mul_rn(dn, s.r);
    if (k < h_cols) dh[n * h_cols + k] = mul_rn(d, s.z);
  }
}

template <class T>
__global__ void segment_max_kernel(BlockArrays b, const T* __restrict__ x, int64_t f, T* __restrict__ y,
                                   int64_t* __restrict__ argmax) {
  for (int64_t idx = util::global_thread(); idx < b.num_dst * f; idx += util::grid_threads()) {
    const int64_t v = idx / f, c = idx % f;
    const int64_t first = b.offsets[v], last = b.offsets[v + 1];
    if (first == last) {
      y[idx] = T{0};
      argmax[idx] = -1;
      continue;
    }
    T best = x[static_cast<int64_t>(b.indices[first]) * f + c];
    int64_t arg = first;
    for (int64_t e = first + 1; e < last; ++e) {
      const T value = x[static_cast<int64_t>(b.indices[e]) * f + c];
      if (best < value) {
        best = value;
        arg = e;
      }
    }
    y[idx] = best;
    argmax[idx] = arg;
  }
}

template <class T>
__global__ void segment_max_backward_kernel(BlockArrays b, const int64_t* __restrict__ argmax, const T* __restrict__ dy,
                                            int64_t f, T* __restrict__ dx) {
  for (int64_t idx = util::global_thread(); idx < b.num_src * f; idx += util::grid_threads()) {
    const int64_t u = idx / f, c = idx % f;
    T sum{0};
    for (int64_t k = b.t_offsets[u]; k < b.t_offsets[u + 1]; ++k) {
      const int64_t v = b.t_indices[k];
      if (argmax[v * f + c] == b.t_edges[k]) sum = add_rn(sum, dy[v * f + c]);
    }
    dx[idx] = sum;
  }
}

template <class T>
__global__ void spmm_mean_kernel(BlockArrays b, const T* __restrict__ x, int64_t f, T* __restrict__ y) {
  for (int64_t idx = util::global_thread(); idx < b.num_dst * f; idx += util::grid_threads()) {
    const int64_t v = idx / f, c = idx % f;
    const int64_t first = b.offsets[v], last = b.offsets[v + 1];
    T sum{0};
    for (int64_t e = first; e < last; ++e) sum = add_rn(sum, x[static_cast<int64_t>(b.indices[e]) * f + c]);
    if (last > first) sum = mul_rn(sum, util::div_rn(T{1}, static_cast<T>(last - first)));
    y[idx] = sum;
  }
}

template <class T>
__global__ void spmm_mean_backward_kernel(BlockArrays b, const T* __restrict__ dy, int64_t f, T* __restrict__ dx) {
  for (int64_t idx = util::global_thread(); idx < b.num_src * f; idx += util::grid_threads()) {
    const int64_t u = idx / f, c = idx % f;
    T sum{0};
    for (int64_t k = b.t_offsets[u]; k < b.t_offsets[u + 1]; ++k) {
      const int64_t v = b.t_indices[k];
      const T inv = util::div_rn(T{1}, static_cast<T>(b.offsets[v + 1] - b.offsets[v]));
      sum = add_rn(sum, mul_rn(inv, dy[v * f + c]));
    }
    dx[idx] = sum;
  }
}

template <class T>
__global__ void head_scale_kernel(const T* __restrict__ gate, const T* __restrict__ x, int64_t rows, int64_t heads,
                                  int64_t ch, T* __restrict__ y) {
  const int64_t cols = heads * ch;
  for (int64_t idx = util::global_thread(); idx < rows * cols; idx += util::grid_threads()) {
    const int64_t n = idx / cols, h = (idx % cols) / ch;
    y[idx] = mul_rn(gate[n * heads + h], x[idx]);
  }
}

// One thread per (row, head): dgate sums its channels in order and writes its dx entries.
template <class T>
__global__ void head_scale_backward_kernel(const T* __restrict__ gate, const T* __restrict__ x, const T* __restrict__ dy,
                                           int64_t rows, int64_t heads, int64_t ch, T* __restrict__ dx,
                                           T* __restrict__ dgate) {
  for (int64_t idx = util::global_thread(); idx < rows * heads; idx += util::grid_threads()) {
    const int64_t n = idx / heads, h = idx % heads;
    const int64_t base = n * heads * ch + h * ch;
    const T g = gate[idx];
    T sum{0};
    for (int64_t c = 0; c < ch; ++c) {
      sum = add_rn(sum, mul_rn(dy[base + c], x[base + c]));
      dx[base + c] = mul_rn(g, dy[base + c]);
    }
    dgate[idx] = sum;
  }
}

template <class T>
__global__ void axpy_kernel(T a, const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) y[i] = add_rn(y[i], mul_rn(a, x[i]));
}

}  // namespace

template <class T>
void launch_gru_cell(const T* gi, const T* gh, const T* h, int64_t h_cols, int64_t rows, int64_t c, T* h_new,
                     cudaStream_t stream) {
  if (rows <= 0 || c <= 0) return;
  gru_cell_kernel<T><<<grid(rows * c), kBlockThreads, 0, stream>>>(gi, gh, h, h_cols, rows, c, h_new);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_gru_cell_backward(const T* gi, const T* gh, const T* h, int64_t h_cols, const T* dh_new, int64_t rows,
                              int64_t c, T* dgi, T* dgh, T* dh, cudaStream_t stream) {
  if (rows <= 0 || c <= 0) return;
  gru_cell_backward_kernel<T>
      <<<grid(rows * c), kBlockThreads, 0, stream>>>(gi, gh, h, h_cols, dh_new, rows, c, dgi, dgh, dh);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_segment_max(const BlockArrays& b, const T* x, int64_t f, T* y, int64_t* argmax, cudaStream_t stream) {
  if (b.num_dst <= 0 || f <= 0) return;
  segment_max_kernel<T><<<grid(b.num_dst * f), kBlockThreads, 0, stream>>>(b, x, f, y, argmax);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_segment_max_backward(const BlockArrays& b, const int64_t* argmax, const T* dy, int64_t f, T* dx,
                                 cudaStream_t stream) {
  if (b.num_src <= 0 || f <= 0) return;
  segment_max_backward_kernel<T><<<grid(b.num_src * f), kBlockThreads, 0, stream>>>(b, argmax, dy, f, dx);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_spmm_mean(const BlockArrays& b, const T* x, int64_t f, T* y, cudaStream_t stream) {
  if (b.num_dst <= 0 || f <= 0) return;
  spmm_mean_kernel<T><<<grid(b.num_dst * f), kBlockThreads, 0, stream>>>(b, x, f, y);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_spmm_mean_backward(const BlockArrays& b, const T* dy, int64_t f, T* dx, cudaStream_t stream) {
  if (b.num_src <= 0 || f <= 0) return;
  spmm_mean_backward_kernel<T><<<grid(b.num_src * f), kBlockThreads, 0, stream>>>(b, dy, f, dx);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_scale(const T* gate, const T* x, int64_t rows, int64_t heads, int64_t channels, T* y,
                       cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  head_scale_kernel<T><<<grid(rows * heads * channels), kBlockThreads, 0, stream>>>(gate, x, rows, heads, channels, y);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_head_scale_backward(const T* gate, const T* x, const T* dy, int64_t rows, int64_t heads, int64_t channels,
                                T* dx, T* dgate, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || channels <= 0) return;
  head_scale_backward_kernel<T>
      <<<grid(rows * heads), kBlockThreads, 0, stream>>>(gate, x, dy, rows, heads, channels, dx, dgate);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_axpy(T a, const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  axpy_kernel<T><<<grid(n), kBlockThreads, 0, stream>>>(a, x, y, n);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

#define GNNPIPE_INSTANTIATE(T)                                                                                         \
  template void launch_gru_cell<T>(const T*, const T*, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);        \
  template void launch_gru_cell_backward<T>(const T*, const T*, const T*, int64_t, const T*, int64_t, int64_t, T*,    \
                                            T*, T*, cudaStream_t);                                                     \
  template void launch_segment_max<T>(const BlockArrays&, const T*, int64_t, T*, int64_t*, cudaStream_t);             \
  template void launch_segment_max_backward<T>(const BlockArrays&, const int64_t*, const T*, int64_t, T*,             \
                                               cudaStream_t);                                                          \
  template void launch_spmm_mean<T>(const BlockArrays&, const T*, int64_t, T*, cudaStream_t);                         \
  template void launch_spmm_mean_backward<T>(const BlockArrays&, const T*, int64_t, T*, cudaStream_t);                \
  template void launch_head_scale<T>(const T*, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);                \
  template void launch_head_scale_backward<T>(const T*, const T*, const T*, int64_t, int64_t, int64_t, T*, T*,        \
                                              cudaStream_t);                                                           \
  template void launch_axpy<T>(T, const T*, T*, int64_t, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
