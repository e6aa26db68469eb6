// Elementwise ops (cpu twins: models/cpu/elementwise.cpp, dropout_*.cpp) and the bias gradient,
// whose column sums keep the CPU's fixed 256-row blocking (util::column_block_sum).
#include <cuda_fp16.h>

#include <cstdint>

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

inline unsigned elementwise_grid(int64_t n) { return util::grid_for(n, kBlockThreads); }

// y[r, c] += bias[c]: one warp per row, lanes over columns.
template <class T>
__global__ void bias_add_kernel(T* __restrict__ y, int64_t rows, int64_t cols, const T* __restrict__ bias) {
  const int lane = util::lane_id();
  for (int64_t r = util::global_thread() / kWarpSize; r < rows; r += util::grid_threads() / kWarpSize) {
    T* row = y + r * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) row[c] = add_rn(row[c], bias[c]);
  }
}

// out[out_rows[i], :] = src[src_rows[i], :] (null lists: i): one warp per row, lanes over columns
// (coalesced reads and writes of a row).
template <class T>
__global__ void copy_rows_kernel(const T* __restrict__ src, int64_t cols, const int32_t* __restrict__ src_rows,
                                 T* __restrict__ out, const int32_t* __restrict__ out_rows, int64_t count) {
  const int lane = util::lane_id();
  for (int64_t i = util::global_thread() / kWarpSize; i < count; i += util::grid_threads() / kWarpSize) {
    const T* in = src + (src_rows != nullptr ? static_cast<int64_t>(src_rows[i]) : i) * cols;
    T* row = out + (out_rows != nullptr ? static_cast<int64_t>(out_rows[i]) : i) * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) row[c] = in[c];
  }
}

// out[out_rows[i], :] += src[i, :]: one warp per row (rows distinct: no atomics).
template <class T>
__global__ void add_rows_kernel(const T* __restrict__ src, int64_t rows, int64_t cols, T* __restrict__ out,
                                const int32_t* __restrict__ out_rows) {
  const int lane = util::lane_id();
  for (int64_t i = util::global_thread() / kWarpSize; i < rows; i += util::grid_threads() / kWarpSize) {
    const T* in = src + i * cols;
    T* row = out + (out_rows != nullptr ? static_cast<int64_t>(out_rows[i]) : i) * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) row[c] = add_rn(row[c], in[c]);
  }
}

__global__ void widen_16bit_kernel(const uint16_t* __restrict__ src, bool bfloat16, int64_t n, float* __restrict__ dst) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    dst[i] = bfloat16 ? __uint_as_float(static_cast<unsigned>(src[i]) << 16) : __half2float(__ushort_as_half(src[i]));
  }
}

template <class T>
struct RowMajorTerm {
  const T* dy;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t c) const { return dy[r * cols + c]; }
};

template <class T>
__global__ void bias_grad_accumulate_kernel(RowMajorTerm<T> term, int64_t rows, T* __restrict__ dbias) {
  util::column_block_sum(rows, term.cols, term, dbias);
}

// The same sums in two passes over many more blocks (the one-pass kernel has a block per 8 columns:
// 16 of 132 SMs for a 128-wide gradient). Pass 1: the sum of each kSumRows-row block of each
// column, in row order, into partial[block][col]: a thread per (row block, column), 32 columns (one
// 128-byte row segment of floats) by 8 row blocks per thread block. Pass 2: per column, the
// partials in block order, then out[c] += total. The same additions in the same order as the CPU
// twin and column_block_sum, so all three agree bitwise.
template <class T>
__global__ void column_partials_kernel(const T* __restrict__ dy, int64_t rows, int64_t cols, T* __restrict__ partial) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x % 32;
  const int64_t block = static_cast<int64_t>(blockIdx.y) * 8 + threadIdx.x / 32;
  const int64_t first = block * util::kSumRows;
  if (c >= cols || first >= rows) return;
  const int64_t last = first + util::kSumRows < rows ? first + util::kSumRows : rows;
  T sum{0};
#pragma unroll 8
  for (int64_t r = first; r < last; ++r) sum = add_rn(sum, __ldg(dy + r * cols + c));
  partial[block * cols + c] = sum;
}

template <class T>
__global__ void column_totals_kernel(const T* __restrict__ partial, int64_t blocks, int64_t cols, T* __restrict__ out) {
  for (int64_t c = util::global_thread(); c < cols; c += util::grid_threads()) {
    T total{0};
    for (int64_t b = 0; b < blocks; ++b) total = add_rn(total, partial[b * cols + c]);
    out[c] = add_rn(out[c], total);
  }
}

// relu: v > 0 ? v : 0; elu: v > 0 ? v : alpha * expm1(v); leaky: v > 0 ? v : slope * v.
template <ActivationKind kKind, class T>
__device__ __forceinline__ T activate(T v, T param) {
  if constexpr (kKind == ActivationKind::kRelu) {
    return v > T{0} ? v : T{0};
  } else if constexpr (kKind == ActivationKind::kElu) {
    return v > T{0} ? v : mul_rn(param, util::expm1_t(v));
  } else {
    return v > T{0} ? v : mul_rn(param, v);
  }
}

// From the forward output y: relu: y > 0 ? g : 0; elu: y > 0 ? g : g * (y + alpha);
// leaky: y > 0 ? g : slope * g.
template <ActivationKind kKind, class T>
__device__ __forceinline__ T activate_backward(T y, T g, T param) {
  if constexpr (kKind == ActivationKind::kRelu) {
    return y > T{0} ? g : T{0};
  } else if constexpr (kKind == ActivationKind::kElu) {
    return y > T{0} ? g : mul_rn(g, add_rn(y, param));
  } else {
    return y > T{0} ? g : mul_rn(param, g);
  }
}

// y may alias x, so no __restrict__.
template <ActivationKind kKind, class T>
__global__ void activation_kernel(const T* x, T* y, int64_t n, T param) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) y[i] = activate<kKind>(x[i], param);
}

// dx may alias dy.
template <ActivationKind kKind, class T>
__global__ void activation_backward_kernel(const T* y, const T* dy, T* dx, int64_t n, T param) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    dx[i] = activate_backward<kKind>(y[i], dy[i], param);
  }
}

// One thread per mask byte: byte k of row r holds the bits of columns [8k, 8k + n), n = min(8,
// cols - 8k), drawn by dropout_bits_at at positions id(r) * cols + 8k of the key's stream (one or
// two Philox blocks; the CPU twin draws the same bits, dropout_mask.hpp), and the thread applies
// them to those n elements. Mask byte r * row_bytes + k is the thread's index t (not written when
// mask is null). y may alias x: each element is read and then written by one thread.
template <class T>
__global__ void dropout_forward_kernel(core::RngKey key, uint32_t threshold, T scale, const T* x,
                                       const int32_t* __restrict__ row_ids, int64_t rows, int64_t cols,
                                       int64_t row_bytes, T* y, uint8_t* __restrict__ mask) {
  for (int64_t t = util::global_thread(); t < rows * row_bytes; t += util::grid_threads()) {
    const int64_t r = t / row_bytes;
    const int64_t c0 = 8 * (t - r * row_bytes);
    const int n = cols - c0 < 8 ? static_cast<int>(cols - c0) : 8;
    const uint64_t id = row_ids != nullptr ? static_cast<uint64_t>(row_ids[r]) : static_cast<uint64_t>(r);
    const uint32_t bits =
        dropout_bits_at(key, id * static_cast<uint64_t>(cols) + static_cast<uint64_t>(c0), static_cast<unsigned>(n),
                        threshold);
    if (mask != nullptr) mask[t] = static_cast<uint8_t>(bits);
    const int64_t base = r * cols + c0;
    for (int j = 0; j < n; ++j) y[base + j] = (bits >> j) & 1u ? mul_rn(x[base + j], scale) : T{0};
  }
}

// p == 0: the identity, every element kept (no bits drawn); one thread per mask byte as above.
template <class T>
__global__ void dropout_identity_kernel(const T* x, T* y, uint8_t* __restrict__ mask, int64_t rows, int64_t cols,
                                        int64_t row_bytes) {
  for (int64_t t = util::global_thread(); t < rows * row_bytes; t += util::grid_threads()) {
    const int64_t r = t / row_bytes;
    const int64_t c0 = 8 * (t - r * row_bytes);
    const int n = cols - c0 < 8 ? static_cast<int>(cols - c0) : 8;
    if (mask != nullptr) mask[t] = static_cast<uint8_t>((1u << n) - 1u);
    const int64_t base = r * cols + c0;
    for (int j = 0; j < n; ++j) y[base + j] = x[base + j];
  }
}

// One thread per element (r, c): bit c % 8 of mask byte r * row_bytes + c / 8. dx may alias dy.
template <class T>
__global__ void dropout_backward_kernel(const uint8_t* __restrict__ mask, T scale, const T* dy, T* dx, int64_t rows,
                                        int64_t cols, int64_t row_bytes) {
  for (int64_t i = util::global_thread(); i < rows * cols; i += util::grid_threads()) {
    const int64_t r = i / cols;
    const int64_t c = i - r * cols;
    const bool kept = (mask[r * row_bytes + (c >> 3)] >> (c & 7)) & 1u;
    dx[i] = kept ? mul_rn(dy[i], scale) : T{0};
  }
}

template <class T>
__global__ void scale_kernel(T* __restrict__ x, int64_t n, T s) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) x[i] = mul_rn(x[i], s);
}

template <class T>
__global__ void convert_from_float_kernel(const float* __restrict__ src, T* __restrict__ dst, int64_t n) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) dst[i] = static_cast<T>(src[i]);
}

}  // namespace

void launch_widen_16bit(const uint16_t* src, bool bfloat16, int64_t n, float* dst, cudaStream_t stream) {
  if (n <= 0) return;
  widen_16bit_kernel<<<elementwise_grid(n), kBlockThreads, 0, stream>>>(src, bfloat16, n, dst);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_copy_rows(const T* src, int64_t cols, const int32_t* src_rows, T* out, const int32_t* out_rows, int64_t count,
                      cudaStream_t stream) {
  if (count <= 0 || cols <= 0) return;
  copy_rows_kernel<T><<<util::grid_for(count, util::kWarpsPerBlock), kBlockThreads, 0, stream>>>(src, cols, src_rows, out,
                                                                                                   out_rows, count);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_add_rows(const T* src, int64_t rows, int64_t cols, T* out, const int32_t* out_rows, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  add_rows_kernel<T><<<util::grid_for(rows, util::kWarpsPerBlock), kBlockThreads, 0, stream>>>(src, rows, cols, out,
                                                                                                 out_rows);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_bias_add(T* y, int64_t rows, int64_t cols, const T* bias, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  bias_add_kernel<T><<<util::grid_for(rows, util::kWarpsPerBlock), kBlockThreads, 0, stream>>>(y, rows, cols, bias);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_bias_grad_accumulate(const T* dy, int64_t rows, int64_t cols, T* dbias, T* workspace,
                                 std::size_t workspace_bytes, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t blocks = (rows + util::kSumRows - 1) / util::kSumRows;
  if (workspace != nullptr && static_cast<std::size_t>(blocks * cols) * sizeof(T) <= workspace_bytes &&
      (blocks + 7) / 8 <= 65535) {
    const dim3 grid(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>((blocks + 7) / 8));
    column_partials_kernel<T><<<grid, kBlockThreads, 0, stream>>>(dy, rows, cols, workspace);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
    column_totals_kernel<T><<<util::grid_for(cols, kBlockThreads), kBlockThreads, 0, stream>>>(workspace, blocks, cols, dbias);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
    return;
  }
  bias_grad_accumulate_kernel<T>
      <<<util::column_sum_grid(cols), util::kSumThreads, 0, stream>>>(RowMajorTerm<T>{dy, cols}, rows, dbias);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_activation(ActivationKind kind, const T* x, T* y, int64_t n, T param, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned blocks = elementwise_grid(n);
  switch (kind) {
    case ActivationKind::kRelu:
      activation_kernel<ActivationKind::kRelu, T><<<blocks, kBlockThreads, 0, stream>>>(x, y, n, param);
      break;
    case ActivationKind::kElu:
      activation_kernel<ActivationKind::kElu, T><<<blocks, kBlockThreads, 0, stream>>>(x, y, n, param);
      break;
    case ActivationKind::kLeakyRelu:
      activation_kernel<ActivationKind::kLeakyRelu, T><<<blocks, kBlockThreads, 0, stream>>>(x, y, n, param);
      break;
  }
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_activation_backward(ActivationKind kind, const T* y, const T* dy, T* dx, int64_t n, T param,
                                cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned blocks = elementwise_grid(n);
  switch (kind) {
    case ActivationKind::kRelu:
      activation_backward_kernel<ActivationKind::kRelu, T><<<blocks, kBlockThreads, 0, stream>>>(y, dy, dx, n, param);
      break;
    case ActivationKind::kElu:
      activation_backward_kernel<ActivationKind::kElu, T><<<blocks, kBlockThreads, 0, stream>>>(y, dy, dx, n, param);
      break;
    case ActivationKind::kLeakyRelu:
      activation_backward_kernel<ActivationKind::kLeakyRelu, T>
          <<<blocks, kBlockThreads, 0, stream>>>(y, dy, dx, n, param);
      break;
  }
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_dropout_forward(core::RngKey key, T p, const T* x, const int32_t* row_ids, int64_t rows, int64_t cols, T* y,
                            uint8_t* mask, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  const unsigned blocks = elementwise_grid(rows * row_bytes);
  if (p == T{0}) {
    dropout_identity_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(x, y, mask, rows, cols, row_bytes);
  } else {
    const T scale = T{1} / (T{1} - p);  // in T, as the CPU twin
    dropout_forward_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(
        key, dropout_threshold(static_cast<double>(p)), scale, x, row_ids, rows, cols, row_bytes, y, mask);
  }
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_dropout_backward(const uint8_t* mask, T p, const T* dy, T* dx, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const T scale = T{1} / (T{1} - p);
  dropout_backward_kernel<T><<<elementwise_grid(rows * cols), kBlockThreads, 0, stream>>>(
      mask, scale, dy, dx, rows, cols, dropout_mask_row_bytes(cols));
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_scale(T* x, int64_t n, T s, cudaStream_t stream) {
  if (n <= 0) return;
  scale_kernel<T><<<elementwise_grid(n), kBlockThreads, 0, stream>>>(x, n, s);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_convert_from_float(const float* src, T* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  convert_from_float_kernel<T><<<elementwise_grid(n), kBlockThreads, 0, stream>>>(src, dst, n);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template void launch_copy_rows<uint16_t>(const uint16_t*, int64_t, const int32_t*, uint16_t*, const int32_t*, int64_t,
                                         cudaStream_t);
template void launch_copy_rows<uint8_t>(const uint8_t*, int64_t, const int32_t*, uint8_t*, const int32_t*, int64_t,
                                        cudaStream_t);

#define GNNPIPE_INSTANTIATE(T)                                                                                   \
  template void launch_bias_add<T>(T*, int64_t, int64_t, const T*, cudaStream_t);                                \
  template void launch_copy_rows<T>(const T*, int64_t, const int32_t*, T*, const int32_t*, int64_t, cudaStream_t); \
  template void launch_add_rows<T>(const T*, int64_t, int64_t, T*, const int32_t*, cudaStream_t);              \
  template void launch_bias_grad_accumulate<T>(const T*, int64_t, int64_t, T*, T*, std::size_t, cudaStream_t);                    \
  template void launch_activation<T>(ActivationKind, const T*, T*, int64_t, T, cudaStream_t);                    \
  template void launch_activation_backward<T>(ActivationKind, const T*, const T*, T*, int64_t, T, cudaStream_t); \
  template void launch_dropout_forward<T>(core::RngKey, T, const T*, const int32_t*, int64_t, int64_t, T*,       \
                                          uint8_t*, cudaStream_t);                                               \
  template void launch_dropout_backward<T>(const uint8_t*, T, const T*, T*, int64_t, int64_t, cudaStream_t);     \
  template void launch_scale<T>(T*, int64_t, T, cudaStream_t);                                                   \
  template void launch_convert_from_float<T>(const float*, T*, int64_t, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
