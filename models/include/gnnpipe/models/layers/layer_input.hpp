#pragma once
// LayerInput<T>: the input rows of a layer whose input is read only through x W (forward) and
// x^T dh (backward), as GCN's and GAT's are (Layer::takes_linear_input): dense, the CSR form of a
// sparse first-layer input (ops/sparse_input.hpp), or one view of a SharedInput. The layer keeps
// it from forward to backward; the arrays belong to the caller until then.
//
// SharedInput<T>: several forwards of one batch whose first-layer inputs differ only by a factor
// per row, x_v = diag(f_v) x (MH-Aug's views: the same dropped features, rows of masked nodes
// zeroed and the others scaled; pipeline/src/augmented_step.hpp). Since diag(f) x W = diag(f) (x W)
// and sum_v (diag(f_v) x)^T dh_v = x^T (sum_v diag(f_v) dh_v), the views share one product x W
// (formed by the first view's forward) and one x^T G (formed by flush() from the views' gradients
// G, accumulated by their backwards): the first layer's dominant products run once a step, not
// once a view. Equal to the unshared computation up to rounding (the order of the products), and
// bitwise equal when every factor is 1. Contract: from the first view's forward to flush() the
// base input and the layer's weight stay unchanged (no optimizer step between). Not thread-safe.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models {

template <class T>
class SharedInput;

template <class T>
struct LayerInput {
  MatrixView<const T> dense{};
  SparseRowsView<T> sparse{};  // used when it has arrays; dense is then empty
  // A view of a SharedInput (whose base dense/sparse repeat): x = diag(row_factors) base, read
  // through the shared product and gradient. Empty factors: every factor 1.
  SharedInput<T>* shared = nullptr;
  std::span<const float> row_factors{};

  static LayerInput of(MatrixView<const T> x) { return LayerInput{x, {}}; }
  static LayerInput of(SparseRowsView<T> x) { return LayerInput{{}, x}; }

  bool is_sparse() const { return sparse.offsets != nullptr; }
  int64_t rows() const { return is_sparse() ? sparse.rows : dense.rows; }
  int64_t cols() const { return is_sparse() ? sparse.cols : dense.cols; }

  // h = x w.
  void times(const OpContext& ctx, ConstView<T> w, MatrixView<T> h) const;
  // x w, formed in `scratch` (x.rows() x w.cols) or, for a view of a SharedInput without row
  // factors, the shared product itself (valid until the SharedInput's next step; no copy): for a
  // layer that reads x w once and keeps nothing of it (GCN).
  MatrixView<const T> product(const OpContext& ctx, ConstView<T> w, MatrixView<T> scratch) const;
  // dw += x^T dh (for a shared input: once flush() runs).
  void transposed_times_add(const OpContext& ctx, ConstView<T> dh, MatrixView<T> dw) const;

  // The aggregation of x w over `block` with a GCN layer's epilogue: y = A (x w) + bias, then ReLU
  // (ops::spmm_bias over product()). A view with row factors reads the shared product and scales
  // its rows inside the SpMM (ops::spmm_bias_scaled) instead of in a pass of their own. `scratch`
  // (x.rows() x w.cols) as for product().
  void aggregate_product(const OpContext& ctx, const graph::Block& block, ConstView<T> w, MatrixView<T> scratch,
                         ConstView<T> bias, bool relu, MatrixView<T> y) const;
  // Its weight's gradient: dw += x^T (A^T dy), A^T dy formed in `scratch` (x.rows() x dy.cols). A
  // view of a SharedInput adds diag(row_factors) A^T dy into the shared gradient sum in one op
  // (ops::spmm_backward_scaled, which on the CPU never forms A^T dy), so `scratch` may hold
  // anything afterwards.
  void aggregate_transposed_times_add(const OpContext& ctx, const graph::Block& block, ConstView<T> dy,
                                      MatrixView<T> scratch, MatrixView<T> dw) const;
};

template <class T>
class SharedInput {
 public:
  // Starts a step: forgets the last one's input, product and any gradient not flushed (a step
  // that failed midway); the arrays are kept.
  void reset() {
    base_.reset();
    product_ready_ = grad_started_ = false;
  }
  bool has_input() const { return base_.has_value(); }
  // The step's base input (dense or sparse, no shared view), owned by the caller until flush().
  void set_input(LayerInput<T> base) {
    GNNPIPE_CHECK(base.shared == nullptr && base.row_factors.empty(), "SharedInput: the base input is itself a view");
    base_ = base;
    product_ready_ = false;
  }
  // The input of one view: diag(row_factors) base (empty: the base itself).
  LayerInput<T> view(std::span<const float> row_factors) {
    GNNPIPE_CHECK(base_.has_value(), "SharedInput: a view before the input was set");
    GNNPIPE_CHECK(row_factors.empty() || static_cast<int64_t>(row_factors.size()) == base_->rows(),
                  "SharedInput: {} row factors for {} input rows", row_factors.size(), base_->rows());
    LayerInput<T> v = *base_;
    v.shared = this;
    v.row_factors = row_factors;
    return v;
  }
  // dw += base^T G for the views' accumulated gradients G; ends the step's backward (a no-op when
  // no backward ran).
  void flush(const OpContext& ctx) {
    if (!grad_started_) return;
    grad_started_ = false;
    base_->transposed_times_add(ctx, grad_.view(base_->rows(), grad_cols_), grad_target_);
  }
  void release(const core::Stream& stream) {
    for (DeviceArray<T>* a : {&product_, &grad_}) a->release(stream);
    reset();
  }
  // The memory governor's arithmetic: the bytes of the product and of the gradient sum a step
  // grows for `rows` input rows and a weight of `cols` columns, with `backwards` backwards (later
  // views add their scaled gradients into the sum in place: ops::add_scaled_rows).
  static std::vector<std::size_t> arrays(int64_t rows, int64_t cols, int backwards) {
    const auto bytes = static_cast<std::size_t>(rows * cols) * sizeof(T);
    return {bytes, backwards > 0 ? bytes : 0};
  }

 private:
  friend struct LayerInput<T>;

  // The shared product x w (formed by the first view that asks; `h`, a view's array of its shape,
  // is only checked).
  MatrixView<const T> product(const OpContext& ctx, ConstView<T> w, MatrixView<const T> h) {
    const int64_t rows = base_->rows();
    if (!product_ready_) {
      base_->times(ctx, w, product_.matrix(ctx, rows, w.cols));
      product_ready_ = true;
      weight_ = w.data;
    }
    GNNPIPE_CHECK(w.data == weight_ && h.rows == rows && h.cols == w.cols,
                  "SharedInput: a view's product with another weight or of another shape ({}x{})", h.rows, h.cols);
    return product_.view(rows, w.cols);
  }

  // x w for the view of `factors`: the shared product, or its rows scaled into h.
  MatrixView<const T> times(const OpContext& ctx, ConstView<T> w, std::span<const float> factors, MatrixView<T> h) {
    const MatrixView<const T> p = product(ctx, w, h);
    if (factors.empty()) return p;
    ops::scale_rows<T>(ctx, p, factors, h);
    return h;
  }

  // The gradient sum for a view's gradient of `cols` columns to `dw`: *first when this is the
  // step's first (the sum is then written, not added to).
  MatrixView<T> gradient_sum(const OpContext& ctx, int64_t cols, MatrixView<T> dw, bool* first) {
    const int64_t rows = base_->rows();
    *first = !grad_started_;
    if (*first) {
      grad_started_ = true;
      grad_cols_ = cols;
      grad_target_ = dw;
      return grad_.matrix(ctx, rows, cols);
    }
    GNNPIPE_CHECK(dw.data == grad_target_.data && cols == grad_cols_,
                  "SharedInput: the views' gradients go to different weights");
    return grad_.view(rows, grad_cols_);
  }

  void add_gradient(const OpContext& ctx, ConstView<T> dh, std::span<const float> factors, MatrixView<T> dw) {
    GNNPIPE_CHECK(dh.rows == base_->rows(), "SharedInput: a gradient of {} rows for {} input rows", dh.rows,
                  base_->rows());
    bool first = false;
    const MatrixView<T> g = gradient_sum(ctx, dh.cols, dw, &first);
    if (first) {
      if (factors.empty()) {
        ops::copy<T>(ctx, dh, g);
      } else {
        ops::scale_rows<T>(ctx, dh, factors, g);
      }
    } else if (factors.empty()) {
      ops::axpy<T>(ctx, T{1}, dh, g);
    } else {
      ops::add_scaled_rows<T>(ctx, dh, factors, g);  // bitwise scaling into a scratch array, then adding it
    }
  }

  // add_gradient of A^T dy, bitwise, in one op (ops::spmm_backward_scaled).
  void add_aggregated_gradient(const OpContext& ctx, const graph::Block& block, ConstView<T> dy,
                               std::span<const float> factors, MatrixView<T> scratch, MatrixView<T> dw) {
    GNNPIPE_CHECK(block.num_src == base_->rows(), "SharedInput: a block of {} sources for {} input rows",
                  block.num_src, base_->rows());
    bool first = false;
    const MatrixView<T> g = gradient_sum(ctx, dy.cols, dw, &first);
    ops::spmm_backward_scaled<T>(ctx, block, dy, factors, !first, scratch, g);
  }

  std::optional<LayerInput<T>> base_;
  DeviceArray<T> product_, grad_;  // x W; sum_v diag(f_v) dh_v
  const T* weight_ = nullptr;               // the weight product_ was formed with
  MatrixView<T> grad_target_{};
  int64_t grad_cols_ = 0;
  bool product_ready_ = false, grad_started_ = false;
};

template <class T>
void LayerInput<T>::times(const OpContext& ctx, ConstView<T> w, MatrixView<T> h) const {
  if (shared != nullptr) {
    const MatrixView<const T> p = shared->times(ctx, w, row_factors, h);
    if (p.data != h.data) ops::copy<T>(ctx, p, h);
  } else if (is_sparse()) {
    ops::csr_gemm<T>(ctx, sparse, w, h);
  } else {
    ops::gemm<T>(ctx, false, false, T{1}, dense, w, T{0}, h);
  }
}

template <class T>
MatrixView<const T> LayerInput<T>::product(const OpContext& ctx, ConstView<T> w, MatrixView<T> scratch) const {
  if (shared != nullptr) return shared->times(ctx, w, row_factors, scratch);
  times(ctx, w, scratch);
  return scratch;
}

template <class T>
void LayerInput<T>::aggregate_product(const OpContext& ctx, const graph::Block& block, ConstView<T> w,
                                      MatrixView<T> scratch, ConstView<T> bias, bool relu, MatrixView<T> y) const {
  if (shared != nullptr && !row_factors.empty()) {
    const MatrixView<const T> p = shared->product(ctx, w, scratch);
    ops::spmm_bias_scaled<T>(ctx, block, p, row_factors, scratch, bias, relu, y);
    return;
  }
  ops::spmm_bias<T>(ctx, block, product(ctx, w, scratch), bias, relu, y);
}

template <class T>
void LayerInput<T>::aggregate_transposed_times_add(const OpContext& ctx, const graph::Block& block, ConstView<T> dy,
                                                   MatrixView<T> scratch, MatrixView<T> dw) const {
  if (shared != nullptr) {
    shared->add_aggregated_gradient(ctx, block, dy, row_factors, scratch, dw);
    return;
  }
  ops::spmm_backward<T>(ctx, block, dy, scratch);
  transposed_times_add(ctx, scratch, dw);
}

template <class T>
void LayerInput<T>::transposed_times_add(const OpContext& ctx, ConstView<T> dh, MatrixView<T> dw) const {
  if (shared != nullptr) {
    shared->add_gradient(ctx, dh, row_factors, dw);
  } else if (is_sparse()) {
    ops::csr_gemm_tn<T>(ctx, sparse, dh, dw);
  } else {
    ops::gemm<T>(ctx, true, false, T{1}, dense, dh, T{1}, dw);
  }
}

}  // namespace gnnpipe::models
