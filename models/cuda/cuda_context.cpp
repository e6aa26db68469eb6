#include "cuda_context.hpp"

#include "cuda_check.hpp"
#include "current_device.hpp"

namespace gnnpipe::models::cuda {

Context::Context(const core::Stream& stream, const OpOptions& options)
    : stream_(static_cast<cudaStream_t>(stream.native_handle())) {
  GNNPIPE_CUDA_CHECK(core::cuda::make_device_current(stream.device().index()));
  GNNPIPE_CUBLAS_CHECK(cublasCreate(&cublas_));
  try {
    GNNPIPE_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Default math keeps float GEMMs in full FP32 (parity with the CPU); TF32 only when asked.
    GNNPIPE_CUBLAS_CHECK(cublasSetMathMode(cublas_, options.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    GNNPIPE_CUSPARSE_CHECK(cusparseCreate(&cusparse_));
    GNNPIPE_CUSPARSE_CHECK(cusparseSetStream(cusparse_, stream_));
  } catch (...) {
    if (cusparse_ != nullptr) cusparseDestroy(cusparse_);
    cublasDestroy(cublas_);
    throw;
  }
}

void Context::set_cublas_workspace(void* workspace, std::size_t bytes) {
  GNNPIPE_CUBLAS_CHECK(cublasSetWorkspace(cublas_, workspace, bytes));
}

Context::~Context() {
  // The SpMM descriptors (spmm_, destroyed after this body) do not refer to the handles. Destroying
  // a handle does not wait for work already queued with it.
  cusparseDestroy(cusparse_);
  cublasDestroy(cublas_);
}

}  // namespace gnnpipe::models::cuda
