#pragma once
// Dense matrix product on the CPU through OpenBLAS (cblas, row-major); cuBLAS is its CUDA twin.
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// c = alpha * op(a) * op(b) + beta * c, where op(m) is m or its transpose (trans_*). op(a) must be
// M x K, op(b) K x N and c M x N; throws core::Error naming the shapes otherwise. With beta == 0, c
// is not read (NaN in c does not propagate). c must not overlap a or b. T is float or double.
// Threads: OpenBLAS's own; deterministic for a fixed OpenBLAS build and thread count.
template <class T>
void gemm(bool trans_a, bool trans_b, std::type_identity_t<T> alpha, ConstView<T> a, ConstView<T> b,
          std::type_identity_t<T> beta, MatrixView<T> c);

// OpenBLAS's thread count for every later gemm (process-wide; n >= 1), and the count in use.
void set_gemm_threads(int n);
int gemm_threads();

}  // namespace gnnpipe::models::cpu
