#pragma once
// A test-only kernel that faults: for the process-level test of what a run reports after a
// sticky CUDA error (tests/gpu/fault_main.cpp).
#include <cuda_runtime.h>

namespace gnnpipe::test {

// Writes far past the end of `buffer` (2^40 bytes beyond it: never mapped), which makes the
// context fail with cudaErrorIllegalAddress once the kernel runs. Every later call in the process
// then returns that sticky error.
void launch_out_of_bounds_write(int* buffer, cudaStream_t stream);

}  // namespace gnnpipe::test
