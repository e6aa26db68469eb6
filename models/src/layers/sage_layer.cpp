#include "gnnpipe/models/layers/sage_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "bias_gradient.hpp"

namespace gnnpipe::models {

template <class T>
SageLayer<T>::SageLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index)
    : params_(params),
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
  agg_.assign(static_cast<std::size_t>(block.num_dst * in_), T{0});
  const MatrixView<T> agg{agg_.data(), block.num_dst, in_};
  cpu::spmm<T>(block, x, agg);
  const MatrixView<const T> x_dst{x.data, block.num_dst, in_};  // destinations are the first rows
  cpu::gemm<T>(false, false, T{1}, agg, params_.value(weight_l_), T{0}, y);
  cpu::gemm<T>(false, false, T{1}, x_dst, params_.value(weight_r_), T{1}, y);
  cpu::bias_add<T>(y, params_.value(bias_).flat());
}

template <class T>
void SageLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  add_bias_gradient(dy, params_.grad(bias_));
  const MatrixView<const T> agg{agg_.data(), block.num_dst, in_};
  const MatrixView<const T> x_dst{x_.data, block.num_dst, in_};
  cpu::gemm<T>(true, false, T{1}, agg, dy, T{1}, params_.grad(weight_l_));    // dW_l += agg^T dy
  cpu::gemm<T>(true, false, T{1}, x_dst, dy, T{1}, params_.grad(weight_r_));  // dW_r += x_dst^T dy
  if (dx.data == nullptr) return;
  dagg_.assign(static_cast<std::size_t>(block.num_dst * in_), T{0});
  const MatrixView<T> dagg{dagg_.data(), block.num_dst, in_};
  cpu::gemm<T>(false, true, T{1}, dy, params_.value(weight_l_), T{0}, dagg);  // dagg = dy W_l^T
  cpu::spmm_backward<T>(block, dagg, dx);                                     // dx = A^T dagg
  const MatrixView<T> dx_dst{dx.data, block.num_dst, in_};
  cpu::gemm<T>(false, true, T{1}, dy, params_.value(weight_r_), T{1}, dx_dst);  // dx[:dst] += dy W_r^T
}

template class SageLayer<float>;
template class SageLayer<double>;

}  // namespace gnnpipe::models
