#include "gnnpipe/models/layers/ggnn_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GruParams GgnnLayer<T>::add_gru(ParamStore<T>& params, int64_t hidden) {
  GNNPIPE_CHECK_CONFIG(hidden >= 1, "model.hidden: GGNN's state width must be >= 1, got {}", hidden);
  GruParams g;
  g.weight_ih = params.add("rnn.weight_ih", hidden, 3 * hidden, 0, Init::kFanInUniform, hidden);
  g.weight_hh = params.add("rnn.weight_hh", hidden, 3 * hidden, 0, Init::kFanInUniform, hidden);
  g.bias_ih = params.add("rnn.bias_ih", 1, 3 * hidden, 0, Init::kFanInUniform, hidden);
  g.bias_hh = params.add("rnn.bias_hh", 1, 3 * hidden, 0, Init::kFanInUniform, hidden);
  return g;
}

template <class T>
GgnnLayer<T>::GgnnLayer(ParamStore<T>& params, const GgnnShape& shape, const GruParams& gru, int index,
                        const OpContext& ctx)
    : params_(params), ctx_(ctx), s_(shape), gru_(gru) {
  GNNPIPE_CHECK_CONFIG(shape.input_projection || shape.in_dim <= shape.hidden,
                       "GGNN step {}: input width {} exceeds the state width {} (narrower inputs are padded; wider "
                       "ones need the input projection)",
                       index, shape.in_dim, shape.hidden);
  GNNPIPE_CHECK_CONFIG(shape.output_projection || shape.out_dim == shape.hidden,
                       "GGNN step {}: output width {} differs from the state width {} without an output projection",
                       index, shape.out_dim, shape.hidden);
  if (shape.input_projection) {
    weight_in_ = params.add(fmt::format("layer{}.weight_in", index), shape.in_dim, shape.hidden, index);
  }
  weight_ = params.add(fmt::format("layer{}.weight", index), shape.hidden, shape.hidden, index, Init::kFanInUniform,
                       shape.hidden);
  if (shape.output_projection) {
    weight_out_ = params.add(fmt::format("layer{}.weight_out", index), shape.hidden, shape.out_dim, index);
  }
}

template <class T>
void GgnnLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext&) {
  const int64_t c = s_.hidden, hin = state_in(), ns = block.num_src, nd = block.num_dst;
  GNNPIPE_CHECK(x.rows == ns && x.cols == s_.in_dim && y.rows == nd && y.cols == s_.out_dim,
                "GGNN step {}->{}: input {}, output {} for a block of {} sources, {} destinations", s_.in_dim, s_.out_dim,
                shape_str(x), shape_str(y), ns, nd);
  x_ = x;
  if (s_.input_projection) {
    const MatrixView<T> p = proj_.matrix(ctx_, ns, c);
    ops::gemm<T>(ctx_, false, false, T{1}, x, params_.value(weight_in_), T{0}, p);
    h_ = p;
  } else {
    h_ = x;
  }
  const MatrixView<T> a = a_.matrix(ctx_, ns, c);
  ops::gemm<T>(ctx_, false, false, T{1}, h_, top(params_.value(weight_), hin), T{0}, a);
  const MatrixView<T> m = m_.matrix(ctx_, nd, c);
  ops::spmm<T>(ctx_, block, a, m);
  const MatrixView<T> gi = gi_.matrix(ctx_, nd, 3 * c);
  ops::gemm<T>(ctx_, false, false, T{1}, m, params_.value(gru_.weight_ih), T{0}, gi);
  ops::bias_add<T>(ctx_, gi, params_.value(gru_.bias_ih));
  const MatrixView<const T> h_dst{h_.data, nd, hin};  // destinations are the first sources
  const MatrixView<T> gh = gh_.matrix(ctx_, nd, 3 * c);
  ops::gemm<T>(ctx_, false, false, T{1}, h_dst, top(params_.value(gru_.weight_hh), hin), T{0}, gh);
  ops::bias_add<T>(ctx_, gh, params_.value(gru_.bias_hh));
  if (s_.output_projection) {
    const MatrixView<T> h_new = hnew_.matrix(ctx_, nd, c);
    ops::gru_cell<T>(ctx_, gi, gh, h_dst, h_new);
    ops::gemm<T>(ctx_, false, false, T{1}, h_new, params_.value(weight_out_), T{0}, y);
  } else {
    ops::gru_cell<T>(ctx_, gi, gh, h_dst, y);
  }
}

template <class T>
void GgnnLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  const int64_t c = s_.hidden, hin = state_in(), ns = block.num_src, nd = block.num_dst;
  MatrixView<const T> dh_new = dy;
  if (s_.output_projection) {
    ops::gemm<T>(ctx_, true, false, T{1}, hnew_.view(nd, c), dy, T{1}, params_.grad(weight_out_));
    const MatrixView<T> d = dhnew_.matrix(ctx_, nd, c);
    ops::gemm<T>(ctx_, false, true, T{1}, dy, params_.value(weight_out_), T{0}, d);
    dh_new = d;
  }
  const MatrixView<const T> h_dst{h_.data, nd, hin};
  const MatrixView<T> dgi = dgi_.matrix(ctx_, nd, 3 * c);
  const MatrixView<T> dgh = dgh_.matrix(ctx_, nd, 3 * c);
  const MatrixView<T> dh_dst = dhdst_.matrix(ctx_, nd, hin);
  ops::gru_cell_backward<T>(ctx_, gi_.view(nd, 3 * c), gh_.view(nd, 3 * c), h_dst, dh_new, dgi, dgh, dh_dst);
  ops::gemm<T>(ctx_, true, false, T{1}, m_.view(nd, c), dgi, T{1}, params_.grad(gru_.weight_ih));
  ops::bias_grad_accumulate<T>(ctx_, dgi, params_.grad(gru_.bias_ih));
  ops::gemm<T>(ctx_, true, false, T{1}, h_dst, dgh, T{1}, top(params_.grad(gru_.weight_hh), hin));
  ops::bias_grad_accumulate<T>(ctx_, dgh, params_.grad(gru_.bias_hh));
  ops::gemm<T>(ctx_, false, true, T{1}, dgh, top(params_.value(gru_.weight_hh), hin), T{1}, dh_dst);
  const MatrixView<T> dm = dm_.matrix(ctx_, nd, c);
  ops::gemm<T>(ctx_, false, true, T{1}, dgi, params_.value(gru_.weight_ih), T{0}, dm);
  const MatrixView<T> da = da_.matrix(ctx_, ns, c);
  ops::spmm_backward<T>(ctx_, block, dm, da);
  ops::gemm<T>(ctx_, true, false, T{1}, h_, da, T{1}, top(params_.grad(weight_), hin));
  // The gradient of h: through the messages, plus the destinations' own part (the GRU's h).
  if (!s_.input_projection && dx.data == nullptr) return;
  const MatrixView<T> dh = s_.input_projection ? dh_.matrix(ctx_, ns, c) : dx;
  ops::gemm<T>(ctx_, false, true, T{1}, da, top(params_.value(weight_), hin), T{0}, dh);
  ops::axpy<T>(ctx_, T{1}, dh_dst, MatrixView<T>{dh.data, nd, hin});
  if (!s_.input_projection) return;
  ops::gemm<T>(ctx_, true, false, T{1}, x_, dh, T{1}, params_.grad(weight_in_));
  if (dx.data != nullptr) ops::gemm<T>(ctx_, false, true, T{1}, dh, params_.value(weight_in_), T{0}, dx);
}

// In member order: proj_, a_, m_, gi_, gh_, hnew_ (forward), then dhnew_, dgi_, dgh_, dm_, da_,
// dhdst_, dh_ (backward), as forward and backward use them; inference leaves the backward's alone.
template <class T>
void GgnnLayer<T>::arrays(const BlockShape& s, bool backward, std::vector<std::size_t>& bytes) const {
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  const int64_t c = s_.hidden;
  const std::size_t in_proj = s_.input_projection ? t(s.num_src * c) : 0;
  const std::size_t out_proj = s_.output_projection ? t(s.num_dst * c) : 0;
  bytes.insert(bytes.end(), {in_proj, t(s.num_src * c), t(s.num_dst * c), t(s.num_dst * 3 * c), t(s.num_dst * 3 * c),
                             out_proj});
  if (!backward) {
    bytes.insert(bytes.end(), 7, 0);
    return;
  }
  bytes.insert(bytes.end(), {out_proj, t(s.num_dst * 3 * c), t(s.num_dst * 3 * c), t(s.num_dst * c), t(s.num_src * c),
                             t(s.num_dst * state_in()), in_proj});
}

template class GgnnLayer<float>;
template class GgnnLayer<double>;

}  // namespace gnnpipe::models
