#include "gnnpipe/models/op_context.hpp"

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/choice.hpp"

#if defined(GNNPIPE_MODELS_CUDA)
#include "cuda_context.hpp"
#else
namespace gnnpipe::models::cuda {
class Context {};  // never created: a build without CUDA cannot make a CUDA stream
}  // namespace gnnpipe::models::cuda
#endif

namespace gnnpipe::models {

std::string_view to_string(SpmmImpl impl) {
  switch (impl) {
    case SpmmImpl::kKernel: return "kernel";
    case SpmmImpl::kCusparse: return "cusparse";
  }
  return "?";
}

SpmmImpl parse_spmm_impl(std::string_view text, std::string_view key) {
  return core::parse_choice(text, key, {SpmmImpl::kKernel, SpmmImpl::kCusparse}, "an SpMM implementation");
}

const OpContext& OpContext::host() {
  static const OpContext context;
  return context;
}

OpContext::OpContext() : own_stream_(std::make_unique<core::Stream>(core::Device::cpu())), stream_(own_stream_.get()) {}

OpContext::OpContext(const core::Stream& stream, OpOptions options, memory::CachingAllocator* allocator)
    : stream_(&stream), options_(options), allocator_(allocator) {
  if (stream.device().is_cuda()) {
#if defined(GNNPIPE_MODELS_CUDA)
    cuda_ = std::make_unique<cuda::Context>(stream, options);
    if (allocator_ != nullptr) {
      const auto gpus = core::list_gpus();
      const int index = stream.device().index();
      const bool hopper = index < static_cast<int>(gpus.size()) && gpus[static_cast<std::size_t>(index)].compute_capability_major >= 9;
      // NVIDIA's recommended workspace (32 MiB on Hopper, 4 MiB before), but at most a sixteenth
      // of the budget, so that a small memory.limit is not taken by two contexts' workspaces
      // (cuBLAS then picks algorithms that need less; a smaller workspace is no error).
      const std::size_t recommended = (hopper ? std::size_t{32} : std::size_t{4}) << 20;
      const std::size_t bytes = std::min(recommended, allocator_->budget() / 16 / 256 * 256);
      if (bytes > 0) {
        cublas_workspace_ = allocator_->allocate(bytes, stream);
        cuda_->set_cublas_workspace(cublas_workspace_.data(), cublas_workspace_.size());
      } else {
        cuda_->set_cublas_workspace(nullptr, 0);
      }
      // Partials of the fixed-order column sums (one row of sums per 256 rows): 16 MiB holds a
      // 128-wide float gradient of 8 M rows; a larger one is summed by the one-pass kernel.
      const std::size_t reduction = std::min(std::size_t{16} << 20, allocator_->budget() / 64 / 256 * 256);
      if (reduction > 0) {
        reduction_workspace_ = allocator_->allocate(reduction, stream);
        cuda_->set_reduction_workspace(reduction_workspace_.data(), reduction_workspace_.size());
      }
    }
#else
    GNNPIPE_THROW(CudaError, "a CUDA op context needs a build with the CUDA backend");
#endif
  }
}

OpContext::OpContext(OpContext&&) noexcept = default;
OpContext& OpContext::operator=(OpContext&&) noexcept = default;
OpContext::~OpContext() = default;

}  // namespace gnnpipe::models
