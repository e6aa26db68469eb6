#include "gnnpipe/models/layers/gat_layer.hpp"

#include <fmt/format.h>

#include "bias_gradient.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gat.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "gnnpipe/models/ops/spmm.hpp"

namespace gnnpipe::models {
namespace {

// a[n, h] = <m[n, h, :], att[h, :]> for the first `rows` rows of m [*, H*C].
template <class T>
void head_dot(MatrixView<const T> m, int64_t rows, MatrixView<const T> att, MatrixView<T> a) {
  const int64_t heads = att.rows, channels = att.cols;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t h = 0; h < heads; ++h) {
      T sum{0};
      for (int64_t c = 0; c < channels; ++c) sum += m(n, h * channels + c) * att(h, c);
      a(n, h) = sum;
    }
}

// The backward of head_dot: dm[n, h, :] += da[n, h] * att[h, :]; datt[h, :] += sum_n da[n, h] m[n, h, :].
template <class T>
void head_dot_backward(MatrixView<const T> m, int64_t rows, MatrixView<const T> att, MatrixView<const T> da,
                       MatrixView<T> dm, MatrixView<T> datt) {
  const int64_t heads = att.rows, channels = att.cols;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t c = 0; c < channels; ++c) {
        dm(n, h * channels + c) += da(n, h) * att(h, c);
        datt(h, c) += da(n, h) * m(n, h * channels + c);
      }
}

}  // namespace

template <class T>
GatLayer<T>::GatLayer(ParamStore<T>& params, const GatShape& shape, int index)
    : params_(params),
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
  const int64_t hc = s_.heads * s_.channels, e = block.num_edges();
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == s_.in_dim && y.rows == block.num_dst && y.cols == out_dim(),
                "GAT layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", s_.in_dim,
                out_dim(), x.rows, x.cols, y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  h_.assign(static_cast<std::size_t>(x.rows * hc), T{0});
  const MatrixView<T> h{h_.data(), x.rows, hc};
  cpu::gemm<T>(false, false, T{1}, x, params_.value(weight_), T{0}, h);
  std::vector<T> a_src(static_cast<std::size_t>(x.rows * s_.heads)), a_dst(static_cast<std::size_t>(block.num_dst * s_.heads));
  head_dot<T>(h, x.rows, params_.value(att_src_), MatrixView<T>{a_src.data(), x.rows, s_.heads});
  head_dot<T>(h, block.num_dst, params_.value(att_dst_), MatrixView<T>{a_dst.data(), block.num_dst, s_.heads});
  e_.assign(static_cast<std::size_t>(e * s_.heads), T{0});
  const MatrixView<T> scores{e_.data(), e, s_.heads};
  cpu::sddmm_add<T>(block, MatrixView<const T>{a_src.data(), x.rows, s_.heads},
                    MatrixView<const T>{a_dst.data(), block.num_dst, s_.heads}, scores);
  cpu::leaky_relu<T>(scores, scores, static_cast<T>(s_.negative_slope));
  alpha_ = e_;
  const MatrixView<T> alpha{alpha_.data(), e, s_.heads};
  cpu::edge_softmax<T>(block, alpha);
  dropped_ = ctx.training && s_.attention_dropout > 0;
  MatrixView<const T> used = alpha;
  if (dropped_) {
    alpha_dropped_.resize(alpha_.size());
    mask_.resize(alpha_.size());
    const MatrixView<T> dropped{alpha_dropped_.data(), e, s_.heads};
    cpu::dropout_forward<T>(ctx.key.with(0x617474), static_cast<T>(s_.attention_dropout), alpha, dropped, mask_);
    used = dropped;
  }
  std::vector<T> out_heads;
  MatrixView<T> out = y;
  if (!s_.concat) {
    out_heads.assign(static_cast<std::size_t>(block.num_dst * hc), T{0});
    out = MatrixView<T>{out_heads.data(), block.num_dst, hc};
  }
  cpu::spmm_edge_weighted<T>(block, used, h, out);
  if (!s_.concat) {
    const T inv = T{1} / static_cast<T>(s_.heads);
    for (int64_t v = 0; v < block.num_dst; ++v)
      for (int64_t c = 0; c < s_.channels; ++c) {
        T sum{0};
        for (int64_t hh = 0; hh < s_.heads; ++hh) sum += out(v, hh * s_.channels + c);
        y(v, c) = sum * inv;
      }
  }
  cpu::bias_add<T>(y, params_.value(bias_).flat());
}

template <class T>
void GatLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  const int64_t hc = s_.heads * s_.channels, e = block.num_edges(), ns = block.num_src;
  add_bias_gradient(dy, params_.grad(bias_));
  // Gradient of the per-head outputs.
  std::vector<T> dout_mean;
  MatrixView<const T> dout = dy;
  if (!s_.concat) {
    dout_mean.assign(static_cast<std::size_t>(block.num_dst * hc), T{0});
    const T inv = T{1} / static_cast<T>(s_.heads);
    for (int64_t v = 0; v < block.num_dst; ++v)
      for (int64_t hh = 0; hh < s_.heads; ++hh)
        for (int64_t c = 0; c < s_.channels; ++c) dout_mean[static_cast<std::size_t>(v * hc + hh * s_.channels + c)] = dy(v, c) * inv;
    dout = MatrixView<const T>{dout_mean.data(), block.num_dst, hc};
  }
  const MatrixView<const T> h{h_.data(), ns, hc};
  const MatrixView<const T> alpha{alpha_.data(), e, s_.heads};
  const MatrixView<const T> used = dropped_ ? MatrixView<const T>{alpha_dropped_.data(), e, s_.heads} : alpha;
  std::vector<T> dh(static_cast<std::size_t>(ns * hc)), dalpha(static_cast<std::size_t>(e * s_.heads));
  const MatrixView<T> dh_view{dh.data(), ns, hc};
  const MatrixView<T> dalpha_view{dalpha.data(), e, s_.heads};
  cpu::spmm_edge_weighted_backward_x<T>(block, used, dout, dh_view);
  cpu::spmm_edge_weighted_backward_alpha<T>(block, h, dout, dalpha_view);
  if (dropped_) cpu::dropout_backward<T>(mask_, static_cast<T>(s_.attention_dropout), dalpha_view, dalpha_view);
  cpu::edge_softmax_backward<T>(block, alpha, dalpha_view, dalpha_view);  // now d(scores after LeakyReLU)
  cpu::leaky_relu_backward<T>(MatrixView<const T>{e_.data(), e, s_.heads}, dalpha_view, dalpha_view,
                              static_cast<T>(s_.negative_slope));
  std::vector<T> da_src(static_cast<std::size_t>(ns * s_.heads)), da_dst(static_cast<std::size_t>(block.num_dst * s_.heads));
  cpu::sddmm_add_backward<T>(block, dalpha_view, MatrixView<T>{da_src.data(), ns, s_.heads},
                             MatrixView<T>{da_dst.data(), block.num_dst, s_.heads});
  head_dot_backward<T>(h, ns, params_.value(att_src_), MatrixView<const T>{da_src.data(), ns, s_.heads}, dh_view,
                       params_.grad(att_src_));
  head_dot_backward<T>(h, block.num_dst, params_.value(att_dst_),
                       MatrixView<const T>{da_dst.data(), block.num_dst, s_.heads}, dh_view, params_.grad(att_dst_));
  cpu::gemm<T>(true, false, T{1}, x_, dh_view, T{1}, params_.grad(weight_));  // dW += x^T dh
  if (dx.data != nullptr) cpu::gemm<T>(false, true, T{1}, dh_view, params_.value(weight_), T{0}, dx);
}

template class GatLayer<float>;
template class GatLayer<double>;

}  // namespace gnnpipe::models
