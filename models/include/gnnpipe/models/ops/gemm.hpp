#pragma once
// Dense matrix product on the CPU through OpenBLAS (cblas, row-major); cuBLAS is its CUDA twin.
#include <string>

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

// What to tell a user whose OpenBLAS runs generic kernels on a CPU that has better ones: OpenBLAS
// picks its kernels once, when it loads, from the CPU's model number, and one its table does not
// know (a newer CPU, or a VM's) gets the SSE3 "Prescott" kernels even with AVX2 or AVX-512 there
// (Debian 12's 0.3.21 on a family 6 model 207 Xeon: 1.2-2x slower dense products). A line naming
// OPENBLAS_CORETYPE=SkylakeX or Haswell when that is the case and the variable is not set, else
// empty. The cores named generic are OpenBLAS's x86-64 targets older than Haswell.
std::string gemm_kernel_advice();

}  // namespace gnnpipe::models::cpu
