#include "cusparse_spmm.hpp"

#include <limits>
#include <type_traits>

#include "cuda_check.hpp"
#include "cusparse_support.hpp"
#include "gnnpipe/core/check.hpp"

namespace gnnpipe::models::cuda {
namespace {

// Bitwise reproducible (cuSPARSE documents CSR_ALG3, not CSR_ALG2, as deterministic); without
// cusparseSpMM_preprocess, so a cached descriptor may be re-pointed freely between calls.
constexpr cusparseSpMMAlg_t kAlgorithm = CUSPARSE_SPMM_CSR_ALG3;

}  // namespace

CusparseSpmm::~CusparseSpmm() {
  for (Entry& e : entries_) destroy(e);
}

void CusparseSpmm::destroy(Entry& e) noexcept {
  if (e.a != nullptr) cusparseDestroySpMat(e.a);
  if (e.x != nullptr) cusparseDestroyDnMat(e.x);
  if (e.y != nullptr) cusparseDestroyDnMat(e.y);
  e.a = nullptr;
  e.x = e.y = nullptr;
}

template <class T>
void CusparseSpmm::run(const OpContext& ctx, cusparseHandle_t handle, const BlockArrays& b, bool transpose, const T* x,
                       int64_t f, T* y) {
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream().native_handle());
  const int64_t rows = transpose ? b.num_src : b.num_dst;
  const int64_t cols = transpose ? b.num_dst : b.num_src;
  const int64_t nnz = b.num_edges;
  if (rows == 0 || f == 0) return;
  if (nnz == 0) {  // cuSPARSE rejects empty matrices on some versions; the product is zero
    GNNPIPE_CUDA_CHECK(cudaMemsetAsync(y, 0, static_cast<std::size_t>(rows * f) * sizeof(T), stream));
    return;
  }
  GNNPIPE_CHECK(nnz < std::numeric_limits<int32_t>::max() && rows < std::numeric_limits<int32_t>::max(),
                "cuSPARSE SpMM: a block of {} edges and {} rows needs 64-bit indices; use run.spmm: kernel", nnz, rows);

  // Both index arrays 32-bit (cuSPARSE does not mix index types), values in the compute type.
  int32_t* offsets = offsets32_.ensure(ctx, static_cast<std::size_t>(rows + 1));
  launch_narrow_offsets(transpose ? b.t_offsets : b.offsets, offsets, rows + 1, stream);
  const int32_t* indices = transpose ? b.t_indices : b.indices;
  void* values = nullptr;
  if (std::is_same_v<T, float> && !transpose && b.weights != nullptr) {
    values = const_cast<float*>(b.weights);  // read only: cuSPARSE never writes matA
  } else {
    T* materialised = reinterpret_cast<T*>(values_.ensure(ctx, static_cast<std::size_t>(nnz) * sizeof(T)));
    launch_edge_values<T>(b.weights, transpose ? b.t_edges : nullptr, materialised, nnz, stream);
    values = materialised;
  }

  constexpr cudaDataType kType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
  auto it = entries_.begin();
  for (; it != entries_.end(); ++it) {
    if (it->rows == rows && it->cols == cols && it->nnz == nnz && it->f == f && it->type == kType &&
        it->transpose == transpose)
      break;
  }
  if (it != entries_.end()) {
    entries_.splice(entries_.begin(), entries_, it);  // most recently used first
    Entry& e = entries_.front();
    GNNPIPE_CUSPARSE_CHECK(cusparseCsrSetPointers(e.a, offsets, const_cast<int32_t*>(indices), values));
    GNNPIPE_CUSPARSE_CHECK(cusparseDnMatSetValues(e.x, const_cast<T*>(x)));
    GNNPIPE_CUSPARSE_CHECK(cusparseDnMatSetValues(e.y, y));
  } else {
    Entry e;
    e.rows = rows;
    e.cols = cols;
    e.nnz = nnz;
    e.f = f;
    e.type = kType;
    e.transpose = transpose;
    try {
      GNNPIPE_CUSPARSE_CHECK(cusparseCreateCsr(&e.a, rows, cols, nnz, offsets, const_cast<int32_t*>(indices), values,
                                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, kType));
      GNNPIPE_CUSPARSE_CHECK(cusparseCreateDnMat(&e.x, cols, f, f, const_cast<T*>(x), kType, CUSPARSE_ORDER_ROW));
      GNNPIPE_CUSPARSE_CHECK(cusparseCreateDnMat(&e.y, rows, f, f, y, kType, CUSPARSE_ORDER_ROW));
      const T alpha{1}, beta{0};
      GNNPIPE_CUSPARSE_CHECK(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, e.a, e.x, &beta, e.y,
                                                     kType, kAlgorithm, &e.workspace_bytes));
    } catch (...) {
      destroy(e);
      throw;
    }
    if (entries_.size() == kMaxEntries) {
      destroy(entries_.back());
      entries_.pop_back();
    }
    entries_.push_front(e);
  }
  const Entry& e = entries_.front();
  void* workspace = workspace_.ensure(ctx, e.workspace_bytes);
  const T alpha{1}, beta{0};
  GNNPIPE_CUSPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                      &alpha, e.a, e.x, &beta, e.y, kType, kAlgorithm, workspace));
}

template void CusparseSpmm::run<float>(const OpContext&, cusparseHandle_t, const BlockArrays&, bool, const float*,
                                       int64_t, float*);
template void CusparseSpmm::run<double>(const OpContext&, cusparseHandle_t, const BlockArrays&, bool, const double*,
                                        int64_t, double*);

}  // namespace gnnpipe::models::cuda
