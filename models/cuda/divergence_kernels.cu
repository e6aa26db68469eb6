// MH-Aug's consistency terms (cpu twins: models/cpu/divergence.cpp) and scale_rows (cpu twin:
// models/cpu/elementwise.cpp). One warp per row, as log_softmax_nll_kernel: the row maximum in T
// through shuffles, then each sum over the row's columns in double, folded in column order by every
// lane (the CPU twin's order); lane 0 writes the row value to the scratch and one block totals the
// row values in a fixed order (launch_ordered_total, loss_kernels.cu). Deterministic, no atomics, no
// host sync. Arithmetic is uncontracted (util::add_rn and friends), as the CPU twin rounds it. The
// CPU twin forms each softmax value as exp(x_c - max) / sum (one exp an element), these kernels as
// exp(x_c - log_z): equal to double rounding, far inside the parity bound (tests/gpu).
#include <cmath>
#include <cstdint>
#include <limits>

#include "cuda_check.hpp"
#include "kernel_utils.cuh"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {
namespace {

using util::add_rn;
using util::kBlockThreads;
using util::kWarpSize;
using util::mul_rn;
using util::sub_rn;

inline unsigned warp_grid(int64_t rows) { return util::grid_for(rows, util::kWarpsPerBlock); }

// sum over c < cols of term(c) in double, in column order: lane l evaluates the columns l, l + 32,
// ... and every lane folds each chunk's 32 values in lane order, so all lanes hold the same sum,
// rounded as the CPU's sequential loop. Called by the whole warp.
template <class Term>
__device__ __forceinline__ double warp_ordered_sum(int64_t cols, const Term& term) {
  const int lane = util::lane_id();
  double sum = 0;
  for (int64_t base = 0; base < cols; base += kWarpSize) {
    const int64_t c = base + lane;
    const double t = c < cols ? term(c) : 0.0;
    const int n = cols - base < kWarpSize ? static_cast<int>(cols - base) : kWarpSize;
    for (int j = 0; j < n; ++j) sum = add_rn(sum, __shfl_sync(util::kFullMask, t, j));
  }
  return sum;
}

// log sum_c exp(x[c]) as the CPU's log_sum_exp: the maximum in T, the sum of exp(x - max) in double
// in column order; every lane gets it. Called by the whole warp.
template <class T>
__device__ __forceinline__ double warp_log_sum_exp(const T* x, int64_t cols) {
  const int lane = util::lane_id();
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t c = lane; c < cols; c += kWarpSize) m = m < x[c] ? x[c] : m;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const T other = __shfl_xor_sync(util::kFullMask, m, offset);
    m = m < other ? other : m;
  }
  const double max = m;
  const double sum = warp_ordered_sum(cols, [&](int64_t c) { return exp(sub_rn(static_cast<double>(x[c]), max)); });
  return add_rn(max, log(sum));
}

// H = -sum_c p_c log p_c of softmax(x), log_z its log-sum-exp, as the CPU's row_entropy.
template <class T>
__device__ __forceinline__ double warp_entropy(const T* x, int64_t cols, double log_z) {
  return -warp_ordered_sum(cols, [&](int64_t c) {
    const double lp = sub_rn(static_cast<double>(x[c]), log_z);
    return mul_rn(exp(lp), lp);
  });
}

// Per row i: KL_i from the two log-softmaxes; row_value[i] = w_i KL_i; with s = scale w_i,
// dp[i, c] += T(s p (lp - lq - KL_i)), dq[i, c] = T(s (q - p)).
template <class T>
__global__ void softmax_kl_kernel(const T* __restrict__ p_logits, const T* __restrict__ q_logits, int64_t rows,
                                  int64_t cols, const float* __restrict__ weights, double scale, T* __restrict__ dp,
                                  T* __restrict__ dq, double* __restrict__ row_value) {
  const int lane = util::lane_id();
  for (int64_t i = util::global_thread() / kWarpSize; i < rows; i += util::grid_threads() / kWarpSize) {
    const T* xp = p_logits + i * cols;
    const T* xq = q_logits + i * cols;
    const double lzp = warp_log_sum_exp(xp, cols);
    const double lzq = warp_log_sum_exp(xq, cols);
    const double kl = warp_ordered_sum(cols, [&](int64_t c) {
      const double lp = sub_rn(static_cast<double>(xp[c]), lzp);
      const double lq = sub_rn(static_cast<double>(xq[c]), lzq);
      return mul_rn(exp(lp), sub_rn(lp, lq));
    });
    const double w = weights[i];
    const double s = mul_rn(scale, w);
    T* gp = dp + i * cols;
    T* gq = dq + i * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const double lp = sub_rn(static_cast<double>(xp[c]), lzp);
      const double lq = sub_rn(static_cast<double>(xq[c]), lzq);
      const double p = exp(lp);
      gp[c] = add_rn(gp[c], static_cast<T>(mul_rn(mul_rn(s, p), sub_rn(sub_rn(lp, lq), kl))));
      gq[c] = static_cast<T>(mul_rn(s, sub_rn(exp(lq), p)));
    }
    if (lane == 0) row_value[i] = mul_rn(w, kl);
  }
}

// Per row i: row_value[i] = w_i H_i; dlogits[i, c] = T(-(scale w_i) p (lp + H_i)).
template <class T>
__global__ void softmax_entropy_kernel(const T* __restrict__ logits, int64_t rows, int64_t cols,
                                       const float* __restrict__ weights, double scale, T* __restrict__ dlogits,
                                       double* __restrict__ row_value) {
  const int lane = util::lane_id();
  for (int64_t i = util::global_thread() / kWarpSize; i < rows; i += util::grid_threads() / kWarpSize) {
    const T* x = logits + i * cols;
    const double log_z = warp_log_sum_exp(x, cols);
    const double h = warp_entropy(x, cols, log_z);
    const double w = weights[i];
    const double neg_s = -mul_rn(scale, w);
    T* d = dlogits + i * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const double lp = sub_rn(static_cast<double>(x[c]), log_z);
      d[c] = static_cast<T>(mul_rn(mul_rn(neg_s, exp(lp)), add_rn(lp, h)));
    }
    if (lane == 0) row_value[i] = mul_rn(w, h);
  }
}

// Per row r: out[ids[r]] = float(H_r / log_cols), 0 when cols <= 1; a negative id is skipped.
template <class T>
__global__ void softmax_entropy_scatter_kernel(const T* __restrict__ logits, int64_t rows, int64_t cols,
                                               double log_cols, const int32_t* __restrict__ ids,
                                               float* __restrict__ out) {
  const int lane = util::lane_id();
  for (int64_t r = util::global_thread() / kWarpSize; r < rows; r += util::grid_threads() / kWarpSize) {
    const T* x = logits + r * cols;
    double h = 0;
    if (cols > 1) h = util::div_rn(warp_entropy(x, cols, warp_log_sum_exp(x, cols)), log_cols);  // warp-uniform
    const int32_t id = ids[r];
    if (lane == 0 && id >= 0) out[id] = static_cast<float>(h);
  }
}

// y[i] = x[i] * T(factors[i / cols]) over rows * cols elements; x and y may be the same array (each
// element is read and then written by one thread), hence no __restrict__ on them.
template <class T>
__global__ void scale_rows_kernel(const T* x, int64_t n, int64_t cols, const float* __restrict__ factors, T* y) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    y[i] = mul_rn(x[i], static_cast<T>(factors[i / cols]));
  }
}

// y[i] += x[i] * T(factors[i / cols]): mul_rn then add_rn (never contracted to an FMA), as the CPU.
template <class T>
__global__ void add_scaled_rows_kernel(const T* __restrict__ x, int64_t n, int64_t cols,
                                       const float* __restrict__ factors, T* __restrict__ y) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    y[i] = add_rn(y[i], mul_rn(x[i], static_cast<T>(factors[i / cols])));
  }
}

void zero_loss(double* loss, cudaStream_t stream) {
  GNNPIPE_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(double), stream));  // all-zero bits: 0.0
}

}  // namespace

template <class T>
void launch_softmax_kl(const T* p_logits, const T* q_logits, int64_t rows, int64_t cols, const float* weights, T scale,
                       T* dp, T* dq, double* row_value, double* loss, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) {
    zero_loss(loss, stream);
    return;
  }
  const double s = static_cast<double>(scale);
  softmax_kl_kernel<T>
      <<<warp_grid(rows), kBlockThreads, 0, stream>>>(p_logits, q_logits, rows, cols, weights, s, dp, dq, row_value);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
  launch_ordered_total(row_value, rows, s, loss, stream);
}

template <class T>
void launch_softmax_entropy(const T* logits, int64_t rows, int64_t cols, const float* weights, T scale, T* dlogits,
                            double* row_value, double* loss, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) {
    zero_loss(loss, stream);
    return;
  }
  const double s = static_cast<double>(scale);
  softmax_entropy_kernel<T>
      <<<warp_grid(rows), kBlockThreads, 0, stream>>>(logits, rows, cols, weights, s, dlogits, row_value);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
  launch_ordered_total(row_value, rows, s, loss, stream);
}

template <class T>
void launch_softmax_entropy_scatter(const T* logits, int64_t rows, int64_t cols, const int32_t* ids, float* out,
                                    cudaStream_t stream) {
  if (rows <= 0) return;
  // The host's log, as the CPU twin's: the divisor is bitwise the same on both.
  const double log_cols = cols > 1 ? std::log(static_cast<double>(cols)) : 0.0;
  softmax_entropy_scatter_kernel<T>
      <<<warp_grid(rows), kBlockThreads, 0, stream>>>(logits, rows, cols, log_cols, ids, out);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_scale_rows(const T* x, int64_t rows, int64_t cols, const float* factors, T* y, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  scale_rows_kernel<T><<<util::grid_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(x, n, cols, factors, y);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_add_scaled_rows(const T* x, int64_t rows, int64_t cols, const float* factors, T* y, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  add_scaled_rows_kernel<T><<<util::grid_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(x, n, cols, factors, y);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

#define GNNPIPE_INSTANTIATE(T)                                                                                        \
  template void launch_softmax_kl<T>(const T*, const T*, int64_t, int64_t, const float*, T, T*, T*, double*, double*, \
                                     cudaStream_t);                                                                   \
  template void launch_softmax_entropy<T>(const T*, int64_t, int64_t, const float*, T, T*, double*, double*,          \
                                          cudaStream_t);                                                              \
  template void launch_softmax_entropy_scatter<T>(const T*, int64_t, int64_t, const int32_t*, float*, cudaStream_t);  \
  template void launch_scale_rows<T>(const T*, int64_t, int64_t, const float*, T*, cudaStream_t);                  \
  template void launch_add_scaled_rows<T>(const T*, int64_t, int64_t, const float*, T*, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
