#pragma once
// Test-only kernels for the GPU test binary.
#include <cuda_runtime.h>

#include <cstdint>

namespace gnnpipe::test {

// Spins for about `nanoseconds` on the GPU, then writes `value` to *flag: lets a test hold a stream
// busy long enough that a missing event wait would be visible.
void launch_delay_then_write(uint32_t* flag, uint32_t value, uint64_t nanoseconds, cudaStream_t stream);

}  // namespace gnnpipe::test
