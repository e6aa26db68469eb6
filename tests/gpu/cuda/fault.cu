#include "cuda_check.hpp"
#include "fault.hpp"

namespace gnnpipe::test {
namespace {

__global__ void out_of_bounds_write_kernel(int* buffer) {
  buffer[std::size_t{1} << 38] = 1;  // 2^38 ints = 2^40 bytes past the start
}

}  // namespace

void launch_out_of_bounds_write(int* buffer, cudaStream_t stream) {
  out_of_bounds_write_kernel<<<1, 1, 0, stream>>>(buffer);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gnnpipe::test
