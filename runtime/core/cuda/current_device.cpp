#include "current_device.hpp"

namespace gnnpipe::core::cuda {

cudaError_t make_device_current(int device) noexcept {
  thread_local int current = -1;  // -1: not set by us yet on this thread
  if (current == device) return cudaSuccess;
  const cudaError_t status = cudaSetDevice(device);
  current = status == cudaSuccess ? device : -1;
  return status;
}

}  // namespace gnnpipe::core::cuda
