// Optimizer steps (cpu twins: models/src/adam.cpp, models/src/optimizer.cpp): one thread per
// parameter element, the CPU's expressions in the same order with correctly rounded operations
// (no FMA contraction), so a GPU step matches the CPU step bit for bit.
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

// g = grad + decay w; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g; w -= step_size m / (sqrt(v) / sqrt_c2 + eps).
template <class T>
__global__ void adam_kernel(T* __restrict__ w, const T* __restrict__ grad, T* __restrict__ m, T* __restrict__ v,
                            const T* __restrict__ decay, int64_t n, T b1, T b2, T step_size, T sqrt_c2, T eps) {
  const T one_minus_b1 = sub_rn(T{1}, b1);
  const T one_minus_b2 = sub_rn(T{1}, b2);
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    const T wi = w[i];
    const T g = add_rn(grad[i], mul_rn(decay[i], wi));
    const T mi = add_rn(mul_rn(b1, m[i]), mul_rn(one_minus_b1, g));
    const T vi = add_rn(mul_rn(b2, v[i]), mul_rn(mul_rn(one_minus_b2, g), g));
    m[i] = mi;
    v[i] = vi;
    const T denom = add_rn(util::div_rn(util::sqrt_rn(vi), sqrt_c2), eps);
    w[i] = sub_rn(wi, util::div_rn(mul_rn(step_size, mi), denom));
  }
}

// g = grad + decay w; vel = first ? g : momentum vel + g; w -= lr (momentum > 0 ? vel : g).
template <class T>
__global__ void sgd_kernel(T* __restrict__ w, const T* __restrict__ grad, T* __restrict__ velocity,
                           const T* __restrict__ decay, int64_t n, T lr, T momentum, bool first) {
  for (int64_t i = util::global_thread(); i < n; i += util::grid_threads()) {
    const T wi = w[i];
    const T g = add_rn(grad[i], mul_rn(decay[i], wi));
    const T vel = first ? g : add_rn(mul_rn(momentum, velocity[i]), g);
    velocity[i] = vel;
    w[i] = sub_rn(wi, mul_rn(lr, momentum > T{0} ? vel : g));
  }
}

}  // namespace

template <class T>
void launch_adam(T* w, const T* grad, T* m, T* v, const T* decay, int64_t n, T b1, T b2, T step_size, T sqrt_c2, T eps,
                 cudaStream_t stream) {
  if (n <= 0) return;
  adam_kernel<T><<<util::grid_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(w, grad, m, v, decay, n, b1, b2,
                                                                                 step_size, sqrt_c2, eps);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_sgd(T* w, const T* grad, T* velocity, const T* decay, int64_t n, T lr, T momentum, bool first,
                cudaStream_t stream) {
  if (n <= 0) return;
  sgd_kernel<T><<<util::grid_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(w, grad, velocity, decay, n, lr,
                                                                                momentum, first);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

#define GNNPIPE_INSTANTIATE(T)                                                                        \
  template void launch_adam<T>(T*, const T*, T*, T*, const T*, int64_t, T, T, T, T, T, cudaStream_t); \
  template void launch_sgd<T>(T*, const T*, T*, const T*, int64_t, T, T, bool, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
