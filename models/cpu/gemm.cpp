#include "gnnpipe/models/ops/gemm.hpp"

#include <cblas.h>

#include <algorithm>

namespace gnnpipe::models::cpu {
namespace {

void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int blas_int(int64_t v, const char* what) {
  GNNPIPE_CHECK(v <= 0x7fffffff, "gemm: {} = {} exceeds the 32-bit BLAS interface", what, v);
  return static_cast<int>(v);
}

}  // namespace

void set_gemm_threads(int n) {
  GNNPIPE_CHECK(n >= 1, "gemm threads must be >= 1, got {}", n);
  openblas_set_num_threads(n);
}

int gemm_threads() { return openblas_get_num_threads(); }

template <class T>
void gemm(bool trans_a, bool trans_b, std::type_identity_t<T> alpha, ConstView<T> a, ConstView<T> b,
          std::type_identity_t<T> beta, MatrixView<T> c) {
  const int64_t m = trans_a ? a.cols : a.rows;
  const int64_t k = trans_a ? a.rows : a.cols;
  const int64_t kb = trans_b ? b.cols : b.rows;
  const int64_t n = trans_b ? b.rows : b.cols;
  GNNPIPE_CHECK(k == kb && c.rows == m && c.cols == n,
                "gemm: op(a) {}{} times op(b) {}{} does not give c {}", shape_str(a), trans_a ? "^T" : "",
                shape_str(b), trans_b ? "^T" : "", shape_str(c));
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a zero leading dimension; the product is empty, c = beta * c.
    for (T& v : c.flat()) v = beta == T{0} ? T{0} : beta * v;
    return;
  }
  call_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(m, "M"),
            blas_int(n, "N"), blas_int(k, "K"), alpha, a.data, blas_int(std::max<int64_t>(a.cols, 1), "lda"), b.data,
            blas_int(std::max<int64_t>(b.cols, 1), "ldb"), beta, c.data, blas_int(c.cols, "ldc"));
}

template void gemm<float>(bool, bool, float, ConstView<float>, ConstView<float>, float, MatrixView<float>);
template void gemm<double>(bool, bool, double, ConstView<double>, ConstView<double>, double, MatrixView<double>);

}  // namespace gnnpipe::models::cpu
