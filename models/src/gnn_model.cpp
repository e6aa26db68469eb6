#include "gnnpipe/models/gnn_model.hpp"

#include "gnnpipe/models/layers/gcn_layer.hpp"
#include "gnnpipe/models/layers/sage_layer.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"

namespace gnnpipe::models {

template <class T>
GnnModel<T>::GnnModel(const ModelOptions& options, int64_t in_dim, int64_t out_dim, uint64_t seed)
    : options_(options) {
  GNNPIPE_CHECK_CONFIG(options.layers >= 1, "model.layers: must be >= 1, got {}", options.layers);
  for (int l = 0; l < options.layers; ++l) {
    const int64_t in = l == 0 ? in_dim : options.hidden;
    const int64_t out = l + 1 == options.layers ? out_dim : options.hidden;
    switch (options.type) {
      case ModelType::kGcn: layers_.push_back(std::make_unique<GcnLayer<T>>(params_, in, out, l)); break;
      case ModelType::kSage: layers_.push_back(std::make_unique<SageLayer<T>>(params_, in, out, l)); break;
      default:
        GNNPIPE_THROW(ConfigError, "model.type: '{}' is not available yet (this build trains gcn and sage)",
                      to_string(options.type));
    }
  }
  params_.initialize(seed);
  inputs_.resize(layers_.size());
  outputs_.resize(layers_.size());
  masks_.resize(layers_.size());
  input_views_.resize(layers_.size());
}

template <class T>
MatrixView<const T> GnnModel<T>::forward(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                                         bool training, core::RngKey dropout_key) {
  GNNPIPE_CHECK(blocks.size() == layers_.size(), "{} blocks for a {}-layer model", blocks.size(), layers_.size());
  training_ = training;
  const T p = static_cast<T>(options_.dropout);
  MatrixView<const T> h = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const graph::Block& block = *blocks[l];
    if (training && p > T{0}) {
      inputs_[l].resize(static_cast<std::size_t>(h.rows * h.cols));
      masks_[l].resize(inputs_[l].size());
      const MatrixView<T> a{inputs_[l].data(), h.rows, h.cols};
      cpu::dropout_forward<T>(dropout_key.with(l), p, h, a, masks_[l]);
      input_views_[l] = a;
    } else {
      input_views_[l] = h;
    }
    outputs_[l].resize(static_cast<std::size_t>(block.num_dst * layers_[l]->out_dim()));
    const MatrixView<T> z{outputs_[l].data(), block.num_dst, layers_[l]->out_dim()};
    layers_[l]->forward(block, input_views_[l], z);
    if (l + 1 < layers_.size()) cpu::relu<T>(z, z);  // in place: z now holds relu(z)
    h = z;
  }
  return h;
}

template <class T>
void GnnModel<T>::backward(std::span<const graph::Block* const> blocks, MatrixView<const T> dlogits) {
  const T p = static_cast<T>(options_.dropout);
  std::vector<T> grad(dlogits.data, dlogits.data + dlogits.rows * dlogits.cols);
  std::vector<T> next;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const graph::Block& block = *blocks[l];
    const int64_t out = layers_[l]->out_dim();
    const MatrixView<T> dz{grad.data(), block.num_dst, out};
    if (l + 1 < layers_.size()) {
      // relu was applied in place: its output (> 0 where the input was) gates the gradient.
      cpu::relu_backward<T>(MatrixView<const T>{outputs_[l].data(), block.num_dst, out}, dz, dz);
    }
    if (l == 0) {
      layers_[l]->backward(block, dz, MatrixView<T>{nullptr, block.num_src, layers_[l]->in_dim()});
      break;
    }
    next.assign(static_cast<std::size_t>(block.num_src * layers_[l]->in_dim()), T{0});
    const MatrixView<T> da{next.data(), block.num_src, layers_[l]->in_dim()};
    layers_[l]->backward(block, dz, da);
    if (training_ && p > T{0}) cpu::dropout_backward<T>(masks_[l], p, da, da);
    grad.swap(next);
  }
}

template class GnnModel<float>;
template class GnnModel<double>;

}  // namespace gnnpipe::models
