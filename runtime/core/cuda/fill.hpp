#pragma once
// Launcher for the fill kernel (cuda/fill.cu). Internal to gnnpipe::core.
#include <cuda_runtime.h>

#include <cstddef>

namespace gnnpipe::core::cuda {

// Sets `count` elements of `element_size` bytes (1, 2, 4, 8) at device pointer `dst` to the
// low bytes of `pattern`, on `stream`. Checks the launch; throws CudaError on failure.
void launch_fill(void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                 cudaStream_t stream);

}  // namespace gnnpipe::core::cuda
