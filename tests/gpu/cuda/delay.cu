#include "cuda_check.hpp"
#include "delay.hpp"

namespace gnnpipe::test {
namespace {

__global__ void delay_then_write_kernel(uint32_t* flag, uint32_t value, uint64_t nanoseconds) {
  const uint64_t start = clock64();
  // clock64 counts SM cycles; at >= 1 GHz one cycle is <= 1 ns, so this waits at least as long.
  while (static_cast<uint64_t>(clock64() - start) < nanoseconds) {
  }
  *flag = value;
}

}  // namespace

void launch_delay_then_write(uint32_t* flag, uint32_t value, uint64_t nanoseconds, cudaStream_t stream) {
  delay_then_write_kernel<<<1, 1, 0, stream>>>(flag, value, nanoseconds);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gnnpipe::test
