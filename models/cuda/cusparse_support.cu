#include "cusparse_support.hpp"

#include "cuda_check.hpp"

namespace gnnpipe::models::cuda {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t wanted = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
}

__global__ void narrow_offsets_kernel(const int64_t* __restrict__ src, int32_t* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<int32_t>(src[i]);
  }
}

template <class T>
__global__ void edge_values_kernel(const float* __restrict__ weights, const int64_t* __restrict__ edge_of,
                                   T* __restrict__ values, int64_t n) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    values[k] = weights == nullptr ? T{1} : static_cast<T>(weights[edge_of == nullptr ? k : edge_of[k]]);
  }
}

}  // namespace

void launch_narrow_offsets(const int64_t* src, int32_t* dst, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  narrow_offsets_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void launch_edge_values(const float* weights, const int64_t* edge_of, T* values, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  edge_values_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(weights, edge_of, values, n);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

template void launch_edge_values<float>(const float*, const int64_t*, float*, int64_t, cudaStream_t);
template void launch_edge_values<double>(const float*, const int64_t*, double*, int64_t, cudaStream_t);

}  // namespace gnnpipe::models::cuda
