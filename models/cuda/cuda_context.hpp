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
  // Device memory for the partial sums of fixed-order column sums (owned by the OpContext).
  void set_reduction_workspace(void* workspace, std::size_t bytes) {
    reduction_workspace_ = workspace;
    reduction_bytes_ = bytes;
  }
  void* reduction_workspace() const { return reduction_workspace_; }
  std::size_t reduction_bytes() const { return reduction_bytes_; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
  CusparseSpmm spmm_;
  void* reduction_workspace_ = nullptr;
  std::size_t reduction_bytes_ = 0;
};

}  // namespace gnnpipe::models::cuda
