#include "gnnpipe/models/op_context.hpp"

#include "gnnpipe/core/check.hpp"

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
  if (text == "kernel") return SpmmImpl::kKernel;
  if (text == "cusparse") return SpmmImpl::kCusparse;
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not an SpMM implementation (allowed: kernel, cusparse)", key, text);
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
#else
    GNNPIPE_THROW(CudaError, "a CUDA op context needs a build with the CUDA backend");
#endif
  }
}

OpContext::OpContext(OpContext&&) noexcept = default;
OpContext& OpContext::operator=(OpContext&&) noexcept = default;
OpContext::~OpContext() = default;

}  // namespace gnnpipe::models
