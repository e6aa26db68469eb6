#include "gnnpipe/models/layers/gat_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GatLayer<T>::GatLayer(ParamStore<T>& params, const GatShape& shape, int index, const OpContext& ctx)
    : params_(params),
      ctx_(ctx),
      s_(shape),
      weight_(params.add(fmt::format("layer{}.weight", index), shape.in_dim, shape.heads * shape.channels, index)),
      att_src_(params.add(fmt::format("layer{}.att_src", index), shape.heads, shape.channels, index)),
      att_dst_(params.add(fmt::format("layer{}.att_dst", index), shape.heads, shape.channels, index)),
      bias_(params.add(fmt::format("layer{}.bias", index), 1, shape.concat ? shape.heads * shape.channels : shape.channels,
                       index, Init::kZeros)) {
  GNNPIPE_CHECK_CONFIG(shape.heads >= 1 && shape.channels >= 1, "model.heads and model.hidden must be >= 1");
  GNNPIPE_CHECK_CONFIG(shape.attention_dropout >= 0 && shape.attention_dropout < 1,
                       "model.attention_dropout: must be in [0, 1), got {}", shape.attention_dropout);
}

template <class T>
void GatLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& ctx) {
  forward_input(block, LayerInput<T>::of(x), y, ctx);
}

template <class T>
void GatLayer<T>::forward_linear(const graph::Block& block, LayerInput<T> x, MatrixView<T> y,
                                 const LayerContext& ctx) {
  forward_input(block, x, y, ctx);
}

template <class T>
void GatLayer<T>::forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y, const LayerContext& ctx) {
  GNNPIPE_CHECK(x.rows() == block.num_src && x.cols() == s_.in_dim && y.rows == block.num_dst && y.cols == out_dim(),
                "GAT layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", s_.in_dim,
                out_dim(), x.rows(), x.cols(), y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  transform_input(x);
  attend(block, y, ctx);
}

template <class T>
TransformedRows<T> GatLayer<T>::transformed_rows(int64_t rows) {
  transformed_ = rows;
  return {h_.matrix(ctx_, rows, s_.heads * s_.channels), a_src_.matrix(ctx_, rows, s_.heads)};
}

template <class T>
TransformedRows<T> GatLayer<T>::transform_input(LayerInput<T> x) {
  const TransformedRows<T> z = transformed_rows(x.rows());
  x.times(ctx_, params_.value(weight_), z.h);
  ops::head_dot<T>(ctx_, z.h, params_.value(att_src_), z.a);
  return z;
}

template <class T>
TransformedRows<T> GatLayer<T>::transform(MatrixView<const T> x) {
  GNNPIPE_CHECK(x.cols == s_.in_dim, "GAT layer {}->{}: transform of {} rows of {} columns", s_.in_dim, out_dim(),
                x.rows, x.cols);
  x_ = {};
  return transform_input(LayerInput<T>::of(x));
}

template <class T>
void GatLayer<T>::forward_transformed(const graph::Block& block, MatrixView<T> y, const LayerContext& ctx) {
  GNNPIPE_CHECK(transformed_ == block.num_src && y.rows == block.num_dst && y.cols == out_dim(),
                "GAT layer {}->{}: {} transformed rows, output {}x{} for a block of {} sources, {} destinations",
                s_.in_dim, out_dim(), transformed_, y.rows, y.cols, block.num_src, block.num_dst);
  x_ = {};
  attend(block, y, ctx);
}

// Everything of the forward after the row transform: h and a_src (transformed_rows) of the block's sources.
template <class T>
void GatLayer<T>::attend(const graph::Block& block, MatrixView<T> y, const LayerContext& ctx) {
  const int64_t hc = s_.heads * s_.channels, e = block.num_edges();
  const MatrixView<const T> h = h_.view(block.num_src, hc);
  const MatrixView<const T> a_src = a_src_.view(block.num_src, s_.heads);
  const MatrixView<T> a_dst = a_dst_.matrix(ctx_, block.num_dst, s_.heads);
  ops::head_dot<T>(ctx_, h, params_.value(att_dst_), a_dst);  // destinations are the first rows of h
  const MatrixView<T> scores = e_.matrix(ctx_, e, s_.heads);
  ops::sddmm_add<T>(ctx_, block, a_src, a_dst, scores);
  ops::leaky_relu<T>(ctx_, static_cast<T>(s_.negative_slope), scores, scores);
  const MatrixView<T> alpha = alpha_.matrix(ctx_, e, s_.heads);
  ops::copy<T>(ctx_, scores, alpha);
  ops::edge_softmax<T>(ctx_, block, alpha);
  dropped_ = ctx.training && s_.attention_dropout > 0;
  MatrixView<const T> used = alpha;
  if (dropped_) {
    const MatrixView<T> dropped = alpha_dropped_.matrix(ctx_, e, s_.heads);
    // Keyed by (global destination, global source, head): the same edge draws the same bit in any
    // batch or micro-batch that holds it (ops/dropout.hpp).
    ops::edge_dropout_forward<T>(ctx_, ctx.key.with(0x617474), static_cast<T>(s_.attention_dropout), block, ctx.row_ids,
                                 alpha, dropped, mask_.ensure(ctx_, dropout_mask_bytes(e, s_.heads)));
    used = dropped;
  }
  if (s_.concat) {
    ops::spmm_edge_weighted<T>(ctx_, block, used, h, y);
  } else {
    const MatrixView<T> heads = heads_out_.matrix(ctx_, block.num_dst, hc);
    ops::spmm_edge_weighted<T>(ctx_, block, used, h, heads);
    ops::head_mean<T>(ctx_, heads, y);
  }
  ops::bias_add<T>(ctx_, y, params_.value(bias_));
}

template <class T>
void GatLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(!x_.is_sparse() || dx.data == nullptr, "GAT layer: no input gradient of a sparse input");
  const MatrixView<const T> dh = attend_backward(block, dy);
  x_.transposed_times_add(ctx_, dh, params_.grad(weight_));  // dW += x^T dh
  if (dx.data != nullptr) ops::gemm<T>(ctx_, false, true, T{1}, dh, params_.value(weight_), T{0}, dx);
}

template <class T>
MatrixView<T> GatLayer<T>::backward_transformed(const graph::Block& block, MatrixView<const T> dy) {
  return attend_backward(block, dy);
}

template <class T>
MatrixView<T> GatLayer<T>::transformed_gradient(int64_t rows) {
  return dh_.matrix(ctx_, rows, s_.heads * s_.channels);
}

template <class T>
void GatLayer<T>::transform_backward(MatrixView<const T> x, MatrixView<const T> dh, MatrixView<T> dx) {
  GNNPIPE_CHECK(x.cols == s_.in_dim && dh.rows == x.rows && dh.cols == s_.heads * s_.channels &&
                    (dx.data == nullptr || (dx.rows == x.rows && dx.cols == s_.in_dim)),
                "GAT layer {}->{}: transform backward of x {}, dh {}, dx {}", s_.in_dim, out_dim(), shape_str(x),
                shape_str(dh), shape_str(dx));
  LayerInput<T>::of(x).transposed_times_add(ctx_, dh, params_.grad(weight_));  // dW += x^T dh
  if (dx.data != nullptr) ops::gemm<T>(ctx_, false, true, T{1}, dh, params_.value(weight_), T{0}, dx);
}

// The backward of attend(): the bias's and the attention vectors' gradients, and d(loss)/dh of the
// block's sources (in dh_), the attention terms' gradients folded in.
template <class T>
MatrixView<T> GatLayer<T>::attend_backward(const graph::Block& block, MatrixView<const T> dy) {
  const int64_t hc = s_.heads * s_.channels, e = block.num_edges(), ns = block.num_src;
  ops::bias_grad_accumulate<T>(ctx_, dy, params_.grad(bias_));
  // Gradient of the per-head outputs.
  MatrixView<const T> dout = dy;
  if (!s_.concat) {
    const MatrixView<T> dheads = dheads_.matrix(ctx_, block.num_dst, hc);
    ops::head_mean_backward<T>(ctx_, dy, dheads);
    dout = dheads;
  }
  const MatrixView<const T> h = h_.view(ns, hc);
  const MatrixView<const T> alpha = alpha_.view(e, s_.heads);
  const MatrixView<const T> used = dropped_ ? alpha_dropped_.view(e, s_.heads) : alpha;
  const MatrixView<T> dh = dh_.matrix(ctx_, ns, hc);
  const MatrixView<T> dalpha = dalpha_.matrix(ctx_, e, s_.heads);
  ops::spmm_edge_weighted_backward_x<T>(ctx_, block, used, dout, dh);
  ops::spmm_edge_weighted_backward_alpha<T>(ctx_, block, h, dout, dalpha);
  if (dropped_) ops::dropout_backward<T>(ctx_, mask_.data(), static_cast<T>(s_.attention_dropout), dalpha, dalpha);
  ops::edge_softmax_backward<T>(ctx_, block, alpha, dalpha, dalpha);  // now d(scores after LeakyReLU)
  ops::leaky_relu_backward<T>(ctx_, static_cast<T>(s_.negative_slope), e_.view(e, s_.heads), dalpha, dalpha);
  const MatrixView<T> da_src = da_src_.matrix(ctx_, ns, s_.heads);
  const MatrixView<T> da_dst = da_dst_.matrix(ctx_, block.num_dst, s_.heads);
  ops::sddmm_add_backward<T>(ctx_, block, dalpha, da_src, da_dst);
  ops::head_dot_backward<T>(ctx_, h, params_.value(att_src_), da_src, dh, params_.grad(att_src_));
  ops::head_dot_backward<T>(ctx_, h, params_.value(att_dst_), da_dst, dh, params_.grad(att_dst_));
  return dh;
}

// In member order: h_, e_, alpha_, alpha_dropped_, mask_, a_src_, a_dst_, heads_out_, dheads_, dh_,
// dalpha_, da_src_, da_dst_ (see forward and backward for when each is used).
template <class T>
void GatLayer<T>::training_arrays(const BlockShape& s, bool training, bool, std::vector<std::size_t>& bytes) const {
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  const int64_t hc = s_.heads * s_.channels, eh = s.edges * s_.heads;
  const bool dropped = training && s_.attention_dropout > 0;
  bytes.insert(bytes.end(), {t(s.num_src * hc), t(eh), t(eh), dropped ? t(eh) : 0,
                             dropped ? dropout_mask_bytes(s.edges, s_.heads) : 0, t(s.num_src * s_.heads),
                             t(s.num_dst * s_.heads),
                             s_.concat ? 0 : t(s.num_dst * hc), s_.concat ? 0 : t(s.num_dst * hc), t(s.num_src * hc), t(eh),
                             t(s.num_src * s_.heads), t(s.num_dst * s_.heads)});
}

template <class T>
void GatLayer<T>::inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  const int64_t hc = s_.heads * s_.channels, eh = s.edges * s_.heads;
  bytes.insert(bytes.end(), {t(s.num_src * hc), t(eh), t(eh), 0, 0, t(s.num_src * s_.heads), t(s.num_dst * s_.heads),
                             s_.concat ? 0 : t(s.num_dst * hc), 0, 0, 0, 0, 0});
}

template class GatLayer<float>;
template class GatLayer<double>;

}  // namespace gnnpipe::models
