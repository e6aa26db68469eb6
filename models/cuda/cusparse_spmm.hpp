#pragma once
// CusparseSpmm: y = A x through cuSPARSE's generic SpMM (CSR, row-major dense matrices,
// CUSPARSE_SPMM_CSR_ALG3: the CSR algorithm documented as bitwise deterministic for op(A) = A;
// CSR_ALG2, the row-major fast path, may differ between runs) over a block's forward CSR, or its
// transpose for the backward (the sampler-built transpose: cuSPARSE's own transposed CSR SpMM is not
// deterministic). Descriptors are cached per shape (rows, cols, nnz, width, type, direction) and
// re-pointed with cusparseCsrSetPointers / cusparseDnMatSetValues on a hit, so a full-batch run
// creates them once; the workspace grows to the largest shape seen. Offsets are narrowed to 32 bits
// and edge values materialised in the compute type on the stream before each call (cheap: O(rows +
// nnz)), because block memory is reused for every batch.
// Internal to models/cuda/. Used by one thread at a time (its Context's).
#include <cusparse.h>

#include <cstdint>
#include <list>

#include "gnnpipe/models/device_array.hpp"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {

class CusparseSpmm {
 public:
  CusparseSpmm() = default;
  ~CusparseSpmm();
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;

  // y (rows x f) = A x, A = the block's CSR (num_dst x num_src) or, with `transpose`, its transpose
  // (num_src x num_dst, weights in transpose order). x and y are device row-major matrices.
  template <class T>
  void run(const OpContext& ctx, cusparseHandle_t handle, const BlockArrays& b, bool transpose, const T* x, int64_t f,
           T* y);

 private:
  struct Entry {
    int64_t rows = 0, cols = 0, nnz = 0, f = 0;
    cudaDataType type{};
    bool transpose = false;
    cusparseSpMatDescr_t a = nullptr;
    cusparseDnMatDescr_t x = nullptr, y = nullptr;
    std::size_t workspace_bytes = 0;
  };
  static constexpr std::size_t kMaxEntries = 16;
  static void destroy(Entry& e) noexcept;

  std::list<Entry> entries_;  // most recently used first
  DeviceArray<int32_t> offsets32_;
  DeviceArray<std::byte> values_, workspace_;
};

}  // namespace gnnpipe::models::cuda
