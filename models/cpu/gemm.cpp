#include "gnnpipe/models/ops/gemm.hpp"

#include <cblas.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

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

std::string gemm_kernel_advice() {
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  if (chosen != nullptr && chosen[0] != '\0') return {};
  const std::string core = openblas_get_corename();
  static constexpr std::array<std::string_view, 8> kGeneric = {"Prescott", "Core2",   "Penryn",      "Dunnington",
                                                              "Nehalem",  "Atom",    "Sandybridge", "Katmai"};
  if (std::find(kGeneric.begin(), kGeneric.end(), core) == kGeneric.end()) return {};
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2) return {};
  const char* better = avx512 ? "SkylakeX" : "Haswell";
  return fmt::format("OpenBLAS runs its {} kernels on this CPU, which has {} (its model is not in this OpenBLAS's "
                     "table): dense products may run 1.2-2x faster with OPENBLAS_CORETYPE={} in the environment",
                     core, avx512 ? "AVX-512" : "AVX2 and FMA", better);
#else
  return {};
#endif
}

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
