#include "gnnpipe/models/layers/gcn_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GcnLayer<T>::GcnLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx,
                      bool aggregate_first)
    : params_(params),
      ctx_(ctx),
      in_(in_dim),
      out_(out_dim),
      weight_(params.add(fmt::format("layer{}.weight", index), in_dim, out_dim, index)),
      bias_(params.add(fmt::format("layer{}.bias", index), 1, out_dim, index, Init::kZeros)),
      aggregate_first_(aggregate_first) {}

template <class T>
void GcnLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y,
                          const LayerContext& context) {
  // Inference over the whole graph aggregates first too where in <= out (fewer multiply-adds), in
  // an array the size x W would take, so that its size class is the hidden layers' (the plan's
  // evaluation bound, and the allocator's cache, as with PyG's order). A chunk (layer-wise
  // training or inference) always aggregates first: its sources are its destinations' in-neighbours,
  // often several times as many rows (most of the graph at a high degree), and transforming first
  // would multiply each of them by W for a few destinations, chunk after chunk; aggregating first
  // multiplies only the destinations, at the price of an SpMM at the input's width.
  const bool whole_inference = !context.training && !context.chunk && !aggregate_first_ && in_ <= out_;
  aggregated_last_ = aggregate_first_ || context.chunk || whole_inference;
  if (whole_inference) h_.ensure(ctx_, static_cast<std::size_t>(block.num_src * out_));
  if (aggregated_last_) {
    forward_aggregated(block, x, y, context.chunk ? 0 : context.input_tag, context.relu);
  } else {
    forward_input(block, LayerInput<T>::of(x), y, context.relu);
  }
}

template <class T>
void GcnLayer<T>::forward_aggregated(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, uint64_t tag,
                                     bool relu) {
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == in_ && y.rows == block.num_dst && y.cols == out_,
                "GCN layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", in_, out_,
                x.rows, x.cols, y.rows, y.cols, block.num_src, block.num_dst);
  x_ = LayerInput<T>::of(x);
  const Aggregated now{tag, x.data, block.num_src, block.num_dst, block.num_edges()};
  const bool reuse = tag != 0 && aggregated_ == now;
  reused_ = reuse;
  const MatrixView<T> ax = h_.matrix(ctx_, block.num_dst, in_);  // the same shape keeps the memory and its contents
  if (!reuse) {
    aggregated_ = {};
    ops::spmm<T>(ctx_, block, x, ax);
    aggregated_ = now;  // a tag of 0 is never matched
  }
  ops::gemm<T>(ctx_, false, false, T{1}, ax, params_.value(weight_), T{0}, y);
  ops::bias_add<T>(ctx_, y, params_.value(bias_));
  if (relu) ops::activation<T>(ctx_, Activation::kRelu, T{0}, y, y);
}

template <class T>
void GcnLayer<T>::forward_linear(const graph::Block& block, LayerInput<T> x, MatrixView<T> y,
                                 const LayerContext& context) {
  aggregated_last_ = false;
  forward_input(block, x, y, context.relu);
}

template <class T>
void GcnLayer<T>::forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y, bool relu) {
  reused_ = false;
  GNNPIPE_CHECK(x.rows() == block.num_src && x.cols() == in_ && y.rows == block.num_dst && y.cols == out_,
                "GCN layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", in_, out_,
                x.rows(), x.cols(), y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  // h_ is backward's dh; x W itself may be a shared view's product, read in place (its rows scaled
  // inside the SpMM for a view with row factors).
  x.aggregate_product(ctx_, block, params_.value(weight_), h_.matrix(ctx_, x.rows(), out_), params_.value(bias_), relu,
                      y);
}

template <class T>
void GcnLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(!x_.is_sparse() || dx.data == nullptr, "GCN layer: no input gradient of a sparse input");
  ops::bias_grad_accumulate<T>(ctx_, dy, params_.grad(bias_));
  if (aggregated_last_) {
    // dW += (A_hat x)^T dy, from the aggregated input the forward kept; dx = A_hat^T (dy W^T).
    ops::gemm<T>(ctx_, true, false, T{1}, h_.view(block.num_dst, in_), dy, T{1}, params_.grad(weight_));
    if (dx.data != nullptr) {
      // A_hat x is read for the last time above: dy W^T takes its memory (and what h_ held is gone).
      aggregated_ = {};
      const MatrixView<T> dax = h_.view(block.num_dst, in_);
      ops::gemm<T>(ctx_, false, true, T{1}, dy, params_.value(weight_), T{0}, dax);
      ops::spmm_backward<T>(ctx_, block, dax, dx);
    }
    return;
  }
  // x W is not read by backward: its gradient takes its memory.
  const MatrixView<T> dh = h_.view(block.num_src, out_);
  if (dx.data == nullptr) {  // dW += x^T (A^T dy), in one op for a view of a shared input
    x_.aggregate_transposed_times_add(ctx_, block, dy, dh, params_.grad(weight_));
    return;
  }
  ops::spmm_backward<T>(ctx_, block, dy, dh);
  x_.transposed_times_add(ctx_, dh, params_.grad(weight_));  // dW += x^T dh
  ops::gemm<T>(ctx_, false, true, T{1}, dh, params_.value(weight_), T{0}, dx);  // dx = dh W^T
}

// h_ [num_src x out] (x W, then its gradient); aggregate_first: A_hat x [num_dst x in] (then
// dy W^T when an input gradient is formed). The second position is the retired dh_'s: kept at 0
// so the arrays' positions stay those of the other layers' pairs.
template <class T>
void GcnLayer<T>::training_arrays(const BlockShape& s, bool, bool, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(aggregate_first_ ? s.num_dst * in_ : s.num_src * out_) * sizeof(T));
  bytes.push_back(0);
}

template <class T>
void GcnLayer<T>::chunk_training_arrays(const BlockShape& s, bool, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_dst * in_) * sizeof(T));
  bytes.push_back(0);
}

template <class T>
void GcnLayer<T>::inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(aggregate_first_ ? s.num_dst * in_ : s.num_src * out_) * sizeof(T));
  bytes.push_back(0);
}

template <class T>
void GcnLayer<T>::chunk_inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_dst * in_) * sizeof(T));  // (forward: a chunk aggregates first)
  bytes.push_back(0);
}

template class GcnLayer<float>;
template class GcnLayer<double>;

}  // namespace gnnpipe::models
