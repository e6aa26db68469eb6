#pragma once
// LayerInput<T>: the input rows of a layer whose input is read only through x W (forward) and
// x^T dh (backward), as GCN's and GAT's are: dense, or the CSR form of a sparse first-layer input
// (Layer::forward_sparse, ops/sparse_input.hpp). The layer keeps it from forward to backward; the
// arrays belong to the caller until then.
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models {

template <class T>
struct LayerInput {
  MatrixView<const T> dense{};
  SparseRowsView<T> sparse{};  // used when it has arrays; dense is then empty

  static LayerInput of(MatrixView<const T> x) { return LayerInput{x, {}}; }
  static LayerInput of(SparseRowsView<T> x) { return LayerInput{{}, x}; }

  bool is_sparse() const { return sparse.offsets != nullptr; }
  int64_t rows() const { return is_sparse() ? sparse.rows : dense.rows; }
  int64_t cols() const { return is_sparse() ? sparse.cols : dense.cols; }

  // h = x w.
  void times(const OpContext& ctx, ConstView<T> w, MatrixView<T> h) const {
    if (is_sparse()) {
      ops::csr_gemm<T>(ctx, sparse, w, h);
    } else {
      ops::gemm<T>(ctx, false, false, T{1}, dense, w, T{0}, h);
    }
  }
  // dw += x^T dh.
  void transposed_times_add(const OpContext& ctx, ConstView<T> dh, MatrixView<T> dw) const {
    if (is_sparse()) {
      ops::csr_gemm_tn<T>(ctx, sparse, dh, dw);
    } else {
      ops::gemm<T>(ctx, true, false, T{1}, dense, dh, T{1}, dw);
    }
  }
};

}  // namespace gnnpipe::models
