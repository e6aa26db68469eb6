#pragma once
// The calling thread's current CUDA device, set through one place. cudaSetDevice is called only
// when the device changes: every device switch gnnpipe makes goes through this function, so a
// per-thread record of the last device set is the truth (nothing else in gnnpipe calls
// cudaSetDevice; a caller that does so itself behind our back must call this again).
// For sources under */cuda/ (it includes CUDA headers): link gnnpipe::core_cuda.
#include <cuda_runtime.h>

namespace gnnpipe::core::cuda {

// Makes `device` current on the calling thread; returns the status of cudaSetDevice (cudaSuccess
// without a call when it already is). Never throws, so it serves destructors too.
cudaError_t make_device_current(int device) noexcept;

}  // namespace gnnpipe::core::cuda
