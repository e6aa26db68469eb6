#include "gnnpipe/models/layers/sage_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
SageLayer<T>::SageLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx)
    : params_(params),
      ctx_(ctx),
      in_(in_dim),
      out_(out_dim),
      weight_l_(params.add(fmt::format("layer{}.weight_l", index), in_dim, out_dim, index, Init::kFanInUniform, in_dim)),
      bias_(params.add(fmt::format("layer{}.bias", index), 1, out_dim, index, Init::kFanInUniform, in_dim)),
      weight_r_(params.add(fmt::format("layer{}.weight_r", index), in_dim, out_dim, index, Init::kFanInUniform, in_dim)) {}

template <class T>
void SageLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext&) {
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == in_ && y.rows == block.num_dst && y.cols == out_,
                "SAGE layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", in_, out_,
                x.rows, x.cols, y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  const MatrixView<T> agg = agg_.matrix(ctx_, block.num_dst, in_);
  ops::spmm<T>(ctx_, block, x, agg);
  const MatrixView<const T> x_dst{x.data, block.num_dst, in_};  // destinations are the first rows
  ops::gemm<T>(ctx_, false, false, T{1}, agg, params_.value(weight_l_), T{0}, y);
  ops::gemm<T>(ctx_, false, false, T{1}, x_dst, params_.value(weight_r_), T{1}, y);
  ops::bias_add<T>(ctx_, y, params_.value(bias_));
}

template <class T>
void SageLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  ops::bias_grad_accumulate<T>(ctx_, dy, params_.grad(bias_));
  const MatrixView<const T> agg = agg_.view(block.num_dst, in_);
  const MatrixView<const T> x_dst{x_.data, block.num_dst, in_};
  ops::gemm<T>(ctx_, true, false, T{1}, agg, dy, T{1}, params_.grad(weight_l_));    // dW_l += agg^T dy
  ops::gemm<T>(ctx_, true, false, T{1}, x_dst, dy, T{1}, params_.grad(weight_r_));  // dW_r += x_dst^T dy
  if (dx.data == nullptr) return;
  const MatrixView<T> dagg = agg_.view(block.num_dst, in_);  // agg is read for the last time above
  ops::gemm<T>(ctx_, false, true, T{1}, dy, params_.value(weight_l_), T{0}, dagg);  // dagg = dy W_l^T
  ops::spmm_backward<T>(ctx_, block, dagg, dx);                                     // dx = A^T dagg
  const MatrixView<T> dx_dst{dx.data, block.num_dst, in_};
  ops::gemm<T>(ctx_, false, true, T{1}, dy, params_.value(weight_r_), T{1}, dx_dst);  // dx[:dst] += dy W_r^T
}

// agg_ [num_dst x in]: the mean of neighbours in forward, its gradient in a backward that computes
// dx. The second position is the retired dagg_'s, kept at 0 so positions stay paired.
template <class T>
void SageLayer<T>::training_arrays(const BlockShape& s, bool, bool, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_dst * in_) * sizeof(T));
  bytes.push_back(0);
}

template <class T>
void SageLayer<T>::inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_dst * in_) * sizeof(T));
  bytes.push_back(0);
}

template class SageLayer<float>;
template class SageLayer<double>;

}  // namespace gnnpipe::models
