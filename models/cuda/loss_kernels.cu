// Losses over listed rows (cpu twins: models/cpu/loss.cpp). One warp per listed row writes its
// gradient row and its row loss (in double, summed in column order through shuffles); then one block
// sums the row losses in a fixed order into *loss. Deterministic, no atomics, no host sync.
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

constexpr int kTotalThreads = 256;  // a power of two: the tree below halves it

inline unsigned warp_grid(int64_t rows) { return util::grid_for(rows, util::kWarpsPerBlock); }

// Per listed row k (r = rows[k]), as the CPU: max in T, sum of exp(x - max) in double in column
// order, log_z = max + log(sum); row_loss[k] = (log_z - x[label]) * (weights ? w_k : 1) (the
// unweighted mean is scaled once, on the total); dlogits[r, c] = T((exp(x[c] - log_z) - [c == label])
// * scale), scale = weights ? w_k : 1 / num_rows. A label outside [0, classes) is not read: its row
// loss is NaN and its gradient the plain softmax (the CPU twin throws instead).
template <class T>
__global__ void log_softmax_nll_kernel(const T* __restrict__ logits, int64_t classes,
                                       const int32_t* __restrict__ labels, const int32_t* __restrict__ rows,
                                       int64_t num_rows, const float* __restrict__ weights, double inv_n,
                                       T* __restrict__ dlogits, double* __restrict__ row_loss) {
  const int lane = util::lane_id();
  for (int64_t k = util::global_thread() / kWarpSize; k < num_rows; k += util::grid_threads() / kWarpSize) {
    const int64_t r = rows[k];
    const T* x = logits + r * classes;
    T* d = dlogits + r * classes;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t c = lane; c < classes; c += kWarpSize) m = m < x[c] ? x[c] : m;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const T other = __shfl_xor_sync(util::kFullMask, m, offset);
      m = m < other ? other : m;
    }
    const double max = m;
    // Every lane folds the same values in the same order, so all hold the same sum.
    double sum = 0;
    for (int64_t base = 0; base < classes; base += kWarpSize) {
      const int64_t c = base + lane;
      const double term = c < classes ? exp(sub_rn(static_cast<double>(x[c]), max)) : 0.0;
      const int n = classes - base < kWarpSize ? static_cast<int>(classes - base) : kWarpSize;
      for (int j = 0; j < n; ++j) sum = add_rn(sum, __shfl_sync(util::kFullMask, term, j));
    }
    const double log_z = add_rn(max, log(sum));
    const int32_t label = labels[r];
    const bool valid = label >= 0 && label < classes;
    const double scale = weights != nullptr ? static_cast<double>(weights[k]) : inv_n;
    if (lane == 0) {
      row_loss[k] = valid ? mul_rn(sub_rn(log_z, static_cast<double>(x[label])), weights != nullptr ? scale : 1.0)
                          : std::numeric_limits<double>::quiet_NaN();
    }
    for (int64_t c = lane; c < classes; c += kWarpSize) {
      const double p = exp(sub_rn(static_cast<double>(x[c]), log_z));
      d[c] = static_cast<T>(mul_rn(sub_rn(p, c == label ? 1.0 : 0.0), scale));
    }
  }
}

// Per listed row k, in double as the CPU: row_loss[k] = sum over c (in order) of
// max(x, 0) - x t + log1p(exp(-|x|)); dlogits[r, c] = T((sigmoid(x) - t) * inv_n).
template <class T>
__global__ void bce_with_logits_kernel(const T* __restrict__ logits, int64_t classes,
                                       const uint8_t* __restrict__ targets, const int32_t* __restrict__ rows,
                                       int64_t num_rows, const float* __restrict__ weights, double inv_n, double inv_c,
                                       T* __restrict__ dlogits, double* __restrict__ row_loss) {
  const int lane = util::lane_id();
  for (int64_t k = util::global_thread() / kWarpSize; k < num_rows; k += util::grid_threads() / kWarpSize) {
    const int64_t r = rows[k];
    const T* x = logits + r * classes;
    const uint8_t* t = targets + r * classes;
    T* d = dlogits + r * classes;
    const double scale = weights == nullptr ? inv_n : mul_rn(static_cast<double>(weights[k]), inv_c);
    double sum = 0;
    for (int64_t base = 0; base < classes; base += kWarpSize) {
      const int64_t c = base + lane;
      double term = 0;
      if (c < classes) {
        const double v = x[c];
        const double target = t[c] != 0 ? 1.0 : 0.0;
        const double positive = v < 0.0 ? 0.0 : v;  // std::max(v, 0.0)
        term = add_rn(sub_rn(positive, mul_rn(v, target)), log1p(exp(-fabs(v))));
        // sigmoid without overflow: exp of a non-positive number only.
        const double sig = v >= 0 ? util::div_rn(1.0, add_rn(1.0, exp(-v))) : util::div_rn(exp(v), add_rn(1.0, exp(v)));
        d[c] = static_cast<T>(mul_rn(sub_rn(sig, target), scale));
      }
      const int n = classes - base < kWarpSize ? static_cast<int>(classes - base) : kWarpSize;
      for (int j = 0; j < n; ++j) sum = add_rn(sum, __shfl_sync(util::kFullMask, term, j));
    }
    if (lane == 0) row_loss[k] = weights == nullptr ? sum : mul_rn(sum, scale);
  }
}

// *out = (sum of values[0, n)) * scale in a fixed order: thread t sums t, t + kTotalThreads, ... in
// order, then a fixed-shape tree in shared memory. One block; the result depends only on n.
__global__ void ordered_total_kernel(const double* __restrict__ values, int64_t n, double scale,
                                     double* __restrict__ out) {
  __shared__ double partial[kTotalThreads];
  const int tid = static_cast<int>(threadIdx.x);
  double sum = 0;
  for (int64_t i = tid; i < n; i += kTotalThreads) sum = add_rn(sum, values[i]);
  partial[tid] = sum;
  __syncthreads();
  for (int stride = kTotalThreads / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] = add_rn(partial[tid], partial[tid + stride]);
    __syncthreads();
  }
  if (tid == 0) *out = mul_rn(partial[0], scale);
}

template <class T>
void zero_rows(T* dlogits, int64_t n, int64_t classes, cudaStream_t stream) {
  if (n > 0 && classes > 0) {
    GNNPIPE_CUDA_CHECK(cudaMemsetAsync(dlogits, 0, static_cast<size_t>(n * classes) * sizeof(T), stream));
  }
}

}  // namespace

// Declared in kernels.hpp: divergence_kernels.cu totals its row values with it too.
void launch_ordered_total(const double* values, int64_t n, double scale, double* out, cudaStream_t stream) {
  ordered_total_kernel<<<1, kTotalThreads, 0, stream>>>(values, n, scale, out);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_log_softmax_nll(const T* logits, int64_t n, int64_t classes, const int32_t* labels, const int32_t* rows,
                            int64_t num_rows, const float* weights, T* dlogits, double* row_loss, double* loss,
                            cudaStream_t stream) {
  zero_rows(dlogits, n, classes, stream);
  if (num_rows <= 0) {
    GNNPIPE_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(double), stream));  // all-zero bits: 0.0
    return;
  }
  const double inv_n = 1.0 / static_cast<double>(num_rows);
  log_softmax_nll_kernel<T><<<warp_grid(num_rows), kBlockThreads, 0, stream>>>(logits, classes, labels, rows, num_rows,
                                                                               weights, inv_n, dlogits, row_loss);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
  launch_ordered_total(row_loss, num_rows, weights != nullptr ? 1.0 : inv_n, loss, stream);
}

template <class T>
void launch_bce_with_logits(const T* logits, int64_t n, int64_t classes, const uint8_t* targets, const int32_t* rows,
                            int64_t num_rows, const float* weights, T* dlogits, double* row_loss, double* loss,
                            cudaStream_t stream) {
  zero_rows(dlogits, n, classes, stream);
  if (num_rows <= 0 || classes <= 0) {  // the CPU twin's 0 (no 0 / 0)
    GNNPIPE_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(double), stream));
    return;
  }
  // As the CPU twin: multiply by the inverse of num_rows * classes rather than divide.
  const double inv_n = 1.0 / (static_cast<double>(num_rows) * static_cast<double>(classes));
  const double inv_c = 1.0 / static_cast<double>(classes);
  bce_with_logits_kernel<T><<<warp_grid(num_rows), kBlockThreads, 0, stream>>>(
      logits, classes, targets, rows, num_rows, weights, inv_n, inv_c, dlogits, row_loss);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
  launch_ordered_total(row_loss, num_rows, weights == nullptr ? inv_n : 1.0, loss, stream);
}

#define GNNPIPE_INSTANTIATE(T)                                                                                     \
  template void launch_log_softmax_nll<T>(const T*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t,     \
                                          const float*, T*, double*, double*, cudaStream_t);                       \
  template void launch_bce_with_logits<T>(const T*, int64_t, int64_t, const uint8_t*, const int32_t*, int64_t,     \
                                          const float*, T*, double*, double*, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
