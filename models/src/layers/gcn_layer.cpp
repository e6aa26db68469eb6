#include "gnnpipe/models/layers/gcn_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "bias_gradient.hpp"

namespace gnnpipe::models {

template <class T>
GcnLayer<T>::GcnLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index)
    : params_(params),
      in_(in_dim),
      out_(out_dim),
      weight_(params.add(fmt::format("layer{}.weight", index), in_dim, out_dim, index)),
      bias_(params.add(fmt::format("layer{}.bias", index), 1, out_dim, index, Init::kZeros)) {}

template <class T>
void GcnLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext&) {
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == in_ && y.rows == block.num_dst && y.cols == out_,
                "GCN layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", in_, out_,
                x.rows, x.cols, y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  h_.assign(static_cast<std::size_t>(x.rows * out_), T{0});
  const MatrixView<T> h{h_.data(), x.rows, out_};
  cpu::gemm<T>(false, false, T{1}, x, params_.value(weight_), T{0}, h);
  cpu::spmm<T>(block, h, y);
  cpu::bias_add<T>(y, params_.value(bias_).flat());
}

template <class T>
void GcnLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  add_bias_gradient(dy, params_.grad(bias_));
  dh_.assign(static_cast<std::size_t>(block.num_src * out_), T{0});
  const MatrixView<T> dh{dh_.data(), block.num_src, out_};
  cpu::spmm_backward<T>(block, dy, dh);
  cpu::gemm<T>(true, false, T{1}, x_, dh, T{1}, params_.grad(weight_));  // dW += x^T dh
  if (dx.data != nullptr) cpu::gemm<T>(false, true, T{1}, dh, params_.value(weight_), T{0}, dx);  // dx = dh W^T
}

template class GcnLayer<float>;
template class GcnLayer<double>;

}  // namespace gnnpipe::models
