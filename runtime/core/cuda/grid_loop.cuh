#pragma once
// Grid-stride loops for kernels of any module under */cuda/ (core_cuda puts this directory on
// their include path): a launch of blocks_for(n) blocks of kGridThreads threads, each thread
// taking elements first_index(), first_index() + grid_stride(), ... below n.
#include <cuda_runtime.h>

#include <cstdint>

namespace gnnpipe::core::cuda {

inline constexpr unsigned kGridThreads = 256;
inline constexpr int64_t kMaxGridBlocks = 65535;  // the loop strides, so any count fits

// Blocks for n elements: at least one, at most kMaxGridBlocks.
inline unsigned blocks_for(int64_t n) {
  const int64_t wanted = (n + kGridThreads - 1) / kGridThreads;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < kMaxGridBlocks ? wanted : kMaxGridBlocks));
}
__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace gnnpipe::core::cuda
