#pragma once
// cuda::Context: the CUDA state behind an OpContext (op_context.hpp): cuBLAS and cuSPARSE handles
// bound to the context's stream (set once here; no call ever relies on a "current" stream) and the
// cuSPARSE SpMM descriptor cache. Internal to models/cuda/. Used by one thread at a time.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include "cusparse_spmm.hpp"
#include "gnnpipe/models/op_context.hpp"

namespace gnnpipe::models::cuda {

class Context {
 public:
  // Creates the handles on the stream's device and binds them to `stream`; applies
  // options.allow_tf32 to cuBLAS's math mode. Throws CudaError on failure.
  Context(const core::Stream& stream, const OpOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  cusparseHandle_t cusparse() const { return cusparse_; }
  CusparseSpmm& spmm() { return spmm_; }
  // Gives cuBLAS `bytes` of device memory at `workspace` (which must outlive the handle's work)
  // instead of the workspace it would allocate itself.
  void set_cublas_workspace(void* workspace, std::size_t bytes);

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  CusparseSpmm spmm_;
};

}  // namespace gnnpipe::models::cuda
