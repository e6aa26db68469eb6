#pragma once
// Status checks for CUDA runtime, cuBLAS and cuSPARSE calls, in the family of check.hpp: each
// failure throws CudaError with file, line, the call's text and the library's own error name.
// Only sources under */cuda/ include this header (it pulls in CUDA headers); link
// gnnpipe::core_cuda to get it.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include "gnnpipe/core/error.hpp"

namespace gnnpipe::core::detail {

// Out of line in cuda_check.cpp so that .cu files need no fmt.
[[noreturn]] void throw_cuda_status(const char* library, int code, const char* name, const char* text,
                                    SourceLocation where);
const char* cublas_status_name(cublasStatus_t status);

}  // namespace gnnpipe::core::detail

#define GNNPIPE_CUDA_CHECK(call)                                                                    \
  do {                                                                                              \
    const cudaError_t gnnpipe_status_ = (call);                                                     \
    if (gnnpipe_status_ != cudaSuccess) [[unlikely]] {                                              \
      ::gnnpipe::core::detail::throw_cuda_status("CUDA", static_cast<int>(gnnpipe_status_),        \
                                                 cudaGetErrorName(gnnpipe_status_),                 \
                                                 cudaGetErrorString(gnnpipe_status_),               \
                                                 {__FILE__, __LINE__, #call});                      \
    }                                                                                               \
  } while (0)

#define GNNPIPE_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                              \
    const cublasStatus_t gnnpipe_status_ = (call);                                                  \
    if (gnnpipe_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]] {                                    \
      ::gnnpipe::core::detail::throw_cuda_status(                                                   \
          "cuBLAS", static_cast<int>(gnnpipe_status_),                                              \
          ::gnnpipe::core::detail::cublas_status_name(gnnpipe_status_), "cuBLAS call failed",       \
          {__FILE__, __LINE__, #call});                                                             \
    }                                                                                               \
  } while (0)

#define GNNPIPE_CUSPARSE_CHECK(call)                                                                \
  do {                                                                                              \
    const cusparseStatus_t gnnpipe_status_ = (call);                                                \
    if (gnnpipe_status_ != CUSPARSE_STATUS_SUCCESS) [[unlikely]] {                                  \
      ::gnnpipe::core::detail::throw_cuda_status("cuSPARSE", static_cast<int>(gnnpipe_status_),    \
                                                 cusparseGetErrorName(gnnpipe_status_),             \
                                                 cusparseGetErrorString(gnnpipe_status_),           \
                                                 {__FILE__, __LINE__, #call});                      \
    }                                                                                               \
  } while (0)
