#include "gnnpipe/models/layers/gcn_layer.hpp"

#include <fmt/format.h>

#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GcnLayer<T>::GcnLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx)
    : params_(params),
      ctx_(ctx),
      in_(in_dim),
      out_(out_dim),
      weight_(params.add(fmt::format("layer{}.weight", index), in_dim, out_dim, index)),
      bias_(params.add(fmt::format("layer{}.bias", index), 1, out_dim, index, Init::kZeros)) {}

template <class T>
void GcnLayer<T>::forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext&) {
  forward_input(block, LayerInput<T>::of(x), y);
}

template <class T>
void GcnLayer<T>::forward_sparse(const graph::Block& block, SparseRowsView<T> x, MatrixView<T> y, const LayerContext&) {
  forward_input(block, LayerInput<T>::of(x), y);
}

template <class T>
void GcnLayer<T>::forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(x.rows() == block.num_src && x.cols() == in_ && y.rows == block.num_dst && y.cols == out_,
                "GCN layer {}->{}: input {}x{}, output {}x{} for a block of {} sources, {} destinations", in_, out_,
                x.rows(), x.cols(), y.rows, y.cols, block.num_src, block.num_dst);
  x_ = x;
  const MatrixView<T> h = h_.matrix(ctx_, x.rows(), out_);
  x.times(ctx_, params_.value(weight_), h);
  ops::spmm<T>(ctx_, block, h, y);
  ops::bias_add<T>(ctx_, y, params_.value(bias_));
}

template <class T>
void GcnLayer<T>::backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(!x_.is_sparse() || dx.data == nullptr, "GCN layer: no input gradient of a sparse input");
  ops::bias_grad_accumulate<T>(ctx_, dy, params_.grad(bias_));
  const MatrixView<T> dh = dh_.matrix(ctx_, block.num_src, out_);
  ops::spmm_backward<T>(ctx_, block, dy, dh);
  x_.transposed_times_add(ctx_, dh, params_.grad(weight_));  // dW += x^T dh
  if (dx.data != nullptr) ops::gemm<T>(ctx_, false, true, T{1}, dh, params_.value(weight_), T{0}, dx);  // dx = dh W^T
}

// h_ [num_src x out] in forward, dh_ [num_src x out] in backward.
template <class T>
void GcnLayer<T>::training_arrays(const BlockShape& s, bool, bool, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_src * out_) * sizeof(T));
  bytes.push_back(static_cast<std::size_t>(s.num_src * out_) * sizeof(T));
}

template <class T>
void GcnLayer<T>::inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
  bytes.push_back(static_cast<std::size_t>(s.num_src * out_) * sizeof(T));
  bytes.push_back(0);
}

template class GcnLayer<float>;
template class GcnLayer<double>;

}  // namespace gnnpipe::models
