#include "gnnpipe/models/layers/gaan_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {
namespace {
constexpr double kValueSlope = 0.1;  // the seed's LeakyReLU on the values
}

template <class T>
typename GaanLayer<T>::Linear GaanLayer<T>::add_linear(const char* name, int64_t in, int64_t out, int index) {
  Linear l;
  l.weight = params_.add(fmt::format("layer{}.{}.weight", index, name), in, out, index, Init::kFanInUniform, in);
  l.bias = params_.add(fmt::format("layer{}.{}.bias", index, name), 1, out, index, Init::kFanInUniform, in);
  return l;
}

template <class T>
GaanLayer<T>::GaanLayer(ParamStore<T>& params, const GaanShape& shape, int index, const OpContext& ctx)
    : params_(params), ctx_(ctx), s_(shape) {
  GNNPIPE_CHECK_CONFIG(shape.heads >= 1 && shape.key_dim >= 1 && shape.value_dim >= 1 && shape.gate_dim >= 1,
                       "GaAN layer {}: model.heads ({}), model.key_dim ({}), model.value_dim ({}) and model.gate_dim ({}) "
                       "must be >= 1",
                       index, shape.heads, shape.key_dim, shape.value_dim, shape.gate_dim);
  neigh_ = add_linear("lin_neigh", shape.in_dim, shape.heads * shape.key_dim, index);
  data_ = add_linear("lin_data", shape.in_dim, shape.heads * shape.value_dim, index);
  gate_max_ = add_linear("lin_gate_max", shape.in_dim, shape.gate_dim, index);
  gate_lin_ = add_linear("lin_gate", 2 * shape.in_dim + shape.gate_dim, shape.heads, index);
  out_ = add_linear("lin_out", shape.in_dim + shape.heads * shape.value_dim, shape.out_dim, index);
}

template <class T>
void GaanLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext&) {
  const int64_t ns = block.num_src, nd = block.num_dst, e = block.num_edges(), in = s_.in_dim, h = s_.heads;
  const int64_t hk = h * s_.key_dim, hv = h * s_.value_dim, dm = s_.gate_dim;
  GNNPIPE_CHECK(x.rows == ns && x.cols == in && y.rows == nd && y.cols == s_.out_dim,
                "GaAN layer {}->{}: input {}, output {} for a block of {} sources, {} destinations", in, s_.out_dim,
                shape_str(x), shape_str(y), ns, nd);
  x_ = x;
  const MatrixView<const T> x_dst{x.data, nd, in};  // destinations are the first sources
  // Attention: scores <q[i], q[j]> per head (the dot of a destination and a source row, which is
  // spmm_edge_weighted_backward_alpha's product), softmax over each destination's in-edges.
  const MatrixView<T> q = q_.matrix(ctx_, ns, hk);
  ops::gemm<T>(ctx_, false, false, T{1}, x, params_.value(neigh_.weight), T{0}, q);
  ops::bias_add<T>(ctx_, q, params_.value(neigh_.bias));
  const MatrixView<T> alpha = alpha_.matrix(ctx_, e, h);
  ops::spmm_edge_weighted_backward_alpha<T>(ctx_, block, q, MatrixView<const T>{q.data, nd, hk}, alpha);
  ops::edge_softmax<T>(ctx_, block, alpha);
  const MatrixView<T> v = v_.matrix(ctx_, ns, hv);
  ops::gemm<T>(ctx_, false, false, T{1}, x, params_.value(data_.weight), T{0}, v);
  ops::bias_add<T>(ctx_, v, params_.value(data_.bias));
  ops::leaky_relu<T>(ctx_, static_cast<T>(kValueSlope), v, v);
  const MatrixView<T> attn = attn_.matrix(ctx_, nd, hv);
  ops::spmm_edge_weighted<T>(ctx_, block, alpha, v, attn);
  // The gate from the destination, the max-pooled projected neighbours and their plain mean.
  const MatrixView<T> gmx = gmx_.matrix(ctx_, ns, dm);
  ops::gemm<T>(ctx_, false, false, T{1}, x, params_.value(gate_max_.weight), T{0}, gmx);
  ops::bias_add<T>(ctx_, gmx, params_.value(gate_max_.bias));
  const MatrixView<T> gmax = gmax_.matrix(ctx_, nd, dm);
  ops::segment_max<T>(ctx_, block, gmx, gmax, argmax_.matrix(ctx_, nd, dm));
  const MatrixView<T> gmean = gmean_.matrix(ctx_, nd, in);
  ops::spmm_mean<T>(ctx_, block, x, gmean);
  const MatrixView<T> gate = gate_.matrix(ctx_, nd, h);
  const MatrixView<const T> wg = params_.value(gate_lin_.weight);
  ops::gemm<T>(ctx_, false, false, T{1}, x_dst, rows_of(wg, 0, in), T{0}, gate);
  ops::gemm<T>(ctx_, false, false, T{1}, gmax, rows_of(wg, in, dm), T{1}, gate);
  ops::gemm<T>(ctx_, false, false, T{1}, gmean, rows_of(wg, in + dm, in), T{1}, gate);
  ops::bias_add<T>(ctx_, gate, params_.value(gate_lin_.bias));
  // Gated heads, then the output Linear over [x | heads].
  const MatrixView<T> t = t_.matrix(ctx_, nd, hv);
  ops::head_scale<T>(ctx_, gate, attn, t);
  const MatrixView<const T> wo = params_.value(out_.weight);
  ops::gemm<T>(ctx_, false, false, T{1}, x_dst, rows_of(wo, 0, in), T{0}, y);
  ops::gemm<T>(ctx_, false, false, T{1}, t, rows_of(wo, in, hv), T{1}, y);
  ops::bias_add<T>(ctx_, y, params_.value(out_.bias));
}

template <class T>
void GaanLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  const int64_t ns = block.num_src, nd = block.num_dst, e = block.num_edges(), in = s_.in_dim, h = s_.heads;
  const int64_t hk = h * s_.key_dim, hv = h * s_.value_dim, dm = s_.gate_dim;
  const MatrixView<const T> x_dst{x_.data, nd, in};
  // Output Linear.
  ops::bias_grad_accumulate<T>(ctx_, dy, params_.grad(out_.bias));
  ops::gemm<T>(ctx_, true, false, T{1}, x_dst, dy, T{1}, rows_of(params_.grad(out_.weight), 0, in));
  ops::gemm<T>(ctx_, true, false, T{1}, t_.view(nd, hv), dy, T{1}, rows_of(params_.grad(out_.weight), in, hv));
  const MatrixView<T> dt = dt_.matrix(ctx_, nd, hv);
  ops::gemm<T>(ctx_, false, true, T{1}, dy, rows_of(params_.value(out_.weight), in, hv), T{0}, dt);
  // Gated heads.
  const MatrixView<T> dattn = dattn_.matrix(ctx_, nd, hv);
  const MatrixView<T> dgate = dgate_.matrix(ctx_, nd, h);
  ops::head_scale_backward<T>(ctx_, gate_.view(nd, h), attn_.view(nd, hv), dt, dattn, dgate);
  // Gate Linear over [x_dst | gate_max | gate_mean].
  ops::bias_grad_accumulate<T>(ctx_, dgate, params_.grad(gate_lin_.bias));
  const MatrixView<T> gwg = params_.grad(gate_lin_.weight);
  const MatrixView<const T> wg = params_.value(gate_lin_.weight);
  ops::gemm<T>(ctx_, true, false, T{1}, x_dst, dgate, T{1}, rows_of(gwg, 0, in));
  ops::gemm<T>(ctx_, true, false, T{1}, gmax_.view(nd, dm), dgate, T{1}, rows_of(gwg, in, dm));
  ops::gemm<T>(ctx_, true, false, T{1}, gmean_.view(nd, in), dgate, T{1}, rows_of(gwg, in + dm, in));
  const MatrixView<T> dgmax = dgmax_.matrix(ctx_, nd, dm);
  ops::gemm<T>(ctx_, false, true, T{1}, dgate, rows_of(wg, in, dm), T{0}, dgmax);
  const MatrixView<T> dgmean = dgmean_.matrix(ctx_, nd, in);
  ops::gemm<T>(ctx_, false, true, T{1}, dgate, rows_of(wg, in + dm, in), T{0}, dgmean);
  // Max-pooled gate features.
  const MatrixView<T> dgmx = dgmx_.matrix(ctx_, ns, dm);
  ops::segment_max_backward<T>(ctx_, block, argmax_.view(nd, dm), dgmax, dgmx);
  ops::bias_grad_accumulate<T>(ctx_, dgmx, params_.grad(gate_max_.bias));
  ops::gemm<T>(ctx_, true, false, T{1}, x_, dgmx, T{1}, params_.grad(gate_max_.weight));
  // Values and attention.
  const MatrixView<const T> alpha = alpha_.view(e, h);
  const MatrixView<const T> v = v_.view(ns, hv);
  const MatrixView<T> dv = dv_.matrix(ctx_, ns, hv);
  ops::spmm_edge_weighted_backward_x<T>(ctx_, block, alpha, dattn, dv);
  const MatrixView<T> dalpha = dalpha_.matrix(ctx_, e, h);
  ops::spmm_edge_weighted_backward_alpha<T>(ctx_, block, v, dattn, dalpha);
  ops::leaky_relu_backward<T>(ctx_, static_cast<T>(kValueSlope), v, dv, dv);
  ops::bias_grad_accumulate<T>(ctx_, dv, params_.grad(data_.bias));
  ops::gemm<T>(ctx_, true, false, T{1}, x_, dv, T{1}, params_.grad(data_.weight));
  ops::edge_softmax_backward<T>(ctx_, block, alpha, dalpha, dalpha);  // now d(scores)
  // Scores <q[v], q[u]>: q gets a source part (through the transpose) and a destination part.
  const MatrixView<const T> q = q_.view(ns, hk);
  const MatrixView<T> dq = dq_.matrix(ctx_, ns, hk);
  ops::spmm_edge_weighted_backward_x<T>(ctx_, block, dalpha, MatrixView<const T>{q.data, nd, hk}, dq);
  const MatrixView<T> dqd = dqd_.matrix(ctx_, nd, hk);
  ops::spmm_edge_weighted<T>(ctx_, block, dalpha, q, dqd);
  ops::axpy<T>(ctx_, T{1}, dqd, MatrixView<T>{dq.data, nd, hk});
  ops::bias_grad_accumulate<T>(ctx_, dq, params_.grad(neigh_.bias));
  ops::gemm<T>(ctx_, true, false, T{1}, x_, dq, T{1}, params_.grad(neigh_.weight));
  if (dx.data == nullptr) return;
  // dx: the mean's share first (it overwrites), then every Linear that read x or x_dst.
  ops::spmm_mean_backward<T>(ctx_, block, dgmean, dx);
  ops::gemm<T>(ctx_, false, true, T{1}, dq, params_.value(neigh_.weight), T{1}, dx);
  ops::gemm<T>(ctx_, false, true, T{1}, dv, params_.value(data_.weight), T{1}, dx);
  ops::gemm<T>(ctx_, false, true, T{1}, dgmx, params_.value(gate_max_.weight), T{1}, dx);
  const MatrixView<T> dx_dst{dx.data, nd, in};
  ops::gemm<T>(ctx_, false, true, T{1}, dy, rows_of(params_.value(out_.weight), 0, in), T{1}, dx_dst);
  ops::gemm<T>(ctx_, false, true, T{1}, dgate, rows_of(wg, 0, in), T{1}, dx_dst);
}

template <class T>
void GaanLayer<T>::release_arrays() {
  for (DeviceArray<T>* a : {&q_, &alpha_, &v_, &attn_, &gmx_, &gmax_, &gmean_, &gate_, &t_, &dt_, &dattn_, &dgate_,
                            &dgmax_, &dgmean_, &dgmx_, &dv_, &dalpha_, &dq_, &dqd_}) {
    a->release(ctx_.stream());
  }
  argmax_.release(ctx_.stream());
}

// In member order: q_, alpha_, v_, attn_, gmx_, gmax_, argmax_, gmean_, gate_, t_ (forward), then
// dt_, dattn_, dgate_, dgmax_, dgmean_, dgmx_, dv_, dalpha_, dq_, dqd_ (backward; inference leaves
// them alone).
template <class T>
void GaanLayer<T>::arrays(const BlockShape& s, bool backward, std::vector<std::size_t>& bytes) const {
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  const int64_t h = s_.heads, hk = h * s_.key_dim, hv = h * s_.value_dim, dm = s_.gate_dim, in = s_.in_dim;
  bytes.insert(bytes.end(), {t(s.num_src * hk), t(s.edges * h), t(s.num_src * hv), t(s.num_dst * hv), t(s.num_src * dm),
                             t(s.num_dst * dm), static_cast<std::size_t>(s.num_dst * dm) * sizeof(int64_t),
                             t(s.num_dst * in), t(s.num_dst * h), t(s.num_dst * hv)});
  if (!backward) {
    bytes.insert(bytes.end(), 10, 0);
    return;
  }
  bytes.insert(bytes.end(), {t(s.num_dst * hv), t(s.num_dst * hv), t(s.num_dst * h), t(s.num_dst * dm),
                             t(s.num_dst * in), t(s.num_src * dm), t(s.num_src * hv), t(s.edges * h), t(s.num_src * hk),
                             t(s.num_dst * hk)});
}

template class GaanLayer<float>;
template class GaanLayer<double>;

}  // namespace gnnpipe::models
