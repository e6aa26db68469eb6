#include <cstdint>

#include "cuda_check.hpp"
#include "fill.hpp"

namespace gnnpipe::core::cuda {
namespace {

// Grid-stride fill: one element per thread per iteration.
template <class Word>
__global__ void fill_kernel(Word* __restrict__ dst, std::size_t count, Word value) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dst[i] = value;
  }
}

template <class Word>
void launch_typed(void* dst, std::size_t count, unsigned long long pattern, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kMaxBlocks = 65535;
  const std::size_t wanted = (count + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(wanted < kMaxBlocks ? wanted : kMaxBlocks);
  fill_kernel<Word><<<blocks, kThreads, 0, stream>>>(static_cast<Word*>(dst), count, static_cast<Word>(pattern));
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_fill(void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                 cudaStream_t stream) {
  if (count == 0) return;
  switch (element_size) {
    case 1: launch_typed<uint8_t>(dst, count, pattern, stream); break;
    case 2: launch_typed<uint16_t>(dst, count, pattern, stream); break;
    case 4: launch_typed<uint32_t>(dst, count, pattern, stream); break;
    case 8: launch_typed<uint64_t>(dst, count, pattern, stream); break;
    default:
      ::gnnpipe::core::detail::throw_cuda_status("gnnpipe", 0, "bad element size",
                                                 "fill supports elements of 1, 2, 4 or 8 bytes",
                                                 {__FILE__, __LINE__, "element_size"});
  }
}

}  // namespace gnnpipe::core::cuda
