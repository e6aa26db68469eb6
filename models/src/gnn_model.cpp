#include "gnnpipe/models/gnn_model.hpp"

#include "gnnpipe/models/layers/gat_layer.hpp"
#include "gnnpipe/models/layers/gcn_layer.hpp"
#include "gnnpipe/models/layers/sage_layer.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GnnModel<T>::GnnModel(const ModelOptions& options, int64_t in_dim, int64_t out_dim, uint64_t seed,
                      const OpContext& ctx)
    : options_(options), ctx_(ctx) {
  GNNPIPE_CHECK_CONFIG(options.layers >= 1, "model.layers: must be >= 1, got {}", options.layers);
  // GAT's hidden layers have `heads` heads of `hidden` channels (concatenated: heads * hidden wide);
  // its last layer has one head of out_dim channels, as PyG's GAT example.
  const int64_t gat_width = options.concat_heads ? int64_t{options.heads} * options.hidden : options.hidden;
  for (int l = 0; l < options.layers; ++l) {
    const bool last = l + 1 == options.layers;
    const int64_t in = l == 0 ? in_dim : (options.type == ModelType::kGat ? gat_width : options.hidden);
    const int64_t out = last ? out_dim : options.hidden;
    switch (options.type) {
      case ModelType::kGcn: layers_.push_back(std::make_unique<GcnLayer<T>>(params_, in, out, l, ctx_)); break;
      case ModelType::kSage: layers_.push_back(std::make_unique<SageLayer<T>>(params_, in, out, l, ctx_)); break;
      case ModelType::kGat: {
        GatShape shape{in, last ? 1 : int64_t{options.heads}, out, last ? false : options.concat_heads,
                       options.attention_dropout, 0.2};
        layers_.push_back(std::make_unique<GatLayer<T>>(params_, shape, l, ctx_));
        break;
      }
      default:
        GNNPIPE_THROW(ConfigError, "model.type: '{}' is not available yet (this build trains gcn, sage and gat)",
                      to_string(options.type));
    }
  }
  params_.initialize(seed);
  params_.place(ctx_);
  inputs_.resize(layers_.size());
  outputs_.resize(layers_.size());
  masks_.resize(layers_.size());
  input_views_.resize(layers_.size());
}

template <class T>
void GnnModel<T>::activate(MatrixView<T> z) const {
  const T param = options_.activation == Activation::kLeakyRelu ? static_cast<T>(kLeakySlope) : T{1};
  ops::activation<T>(ctx_, options_.activation, param, z, z);
}

template <class T>
void GnnModel<T>::activate_backward(MatrixView<const T> y, MatrixView<T> dz) const {
  const T param = options_.activation == Activation::kLeakyRelu ? static_cast<T>(kLeakySlope) : T{1};
  ops::activation_backward<T>(ctx_, options_.activation, param, y, dz, dz);
}

template <class T>
MatrixView<const T> GnnModel<T>::forward(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                                         std::span<const graph::NodeId> row_ids, bool training,
                                         core::RngKey dropout_key) {
  GNNPIPE_CHECK(blocks.size() == layers_.size(), "{} blocks for a {}-layer model", blocks.size(), layers_.size());
  GNNPIPE_CHECK(!training || static_cast<int64_t>(row_ids.size()) == x.rows,
                "forward: training needs the global id of every input row: {} ids for {} rows", row_ids.size(), x.rows);
  training_ = training;
  const T p = static_cast<T>(options_.dropout);
  MatrixView<const T> h = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const graph::Block& block = *blocks[l];
    // This layer's input rows (its block's sources) are the first h.rows nodes of the batch.
    std::span<const graph::NodeId> ids;
    if (training) {
      GNNPIPE_CHECK(h.rows <= x.rows, "forward: layer {} reads {} rows, more than the batch's {} nodes", l, h.rows,
                    x.rows);
      ids = row_ids.first(static_cast<std::size_t>(h.rows));
    }
    if (training && p > T{0}) {
      const MatrixView<T> a = inputs_[l].matrix(ctx_, h.rows, h.cols);
      ops::dropout_forward<T>(ctx_, dropout_key.with(l), p, h, ids, a,
                              masks_[l].ensure(ctx_, static_cast<std::size_t>(h.rows * h.cols)));
      input_views_[l] = a;
    } else {
      input_views_[l] = h;
    }
    const MatrixView<T> z = outputs_[l].matrix(ctx_, block.num_dst, layers_[l]->out_dim());
    layers_[l]->forward(block, input_views_[l], z, LayerContext{training, dropout_key.with(l).with(1), ids});
    if (l + 1 < layers_.size()) activate(z);  // in place: z now holds act(z)
    h = z;
  }
  return h;
}

template <class T>
void GnnModel<T>::infer_layer(std::size_t l, const graph::Block& block, MatrixView<const T> x, MatrixView<T> y) {
  GNNPIPE_CHECK(l < layers_.size(), "layer {} of a {}-layer model", l, layers_.size());
  GNNPIPE_CHECK(x.rows == block.num_src && y.rows == block.num_dst && y.cols == layers_[l]->out_dim(),
                "infer_layer {}: x {} and y {} do not fit a block of {} sources, {} destinations (out {})", l,
                shape_str(x), shape_str(y), block.num_src, block.num_dst, layers_[l]->out_dim());
  training_ = false;
  layers_[l]->forward(block, x, y, LayerContext{false, core::RngKey{}});
  if (l + 1 < layers_.size()) activate(y);
}

template <class T>
void GnnModel<T>::backward(std::span<const graph::Block* const> blocks, MatrixView<const T> dlogits) {
  const T p = static_cast<T>(options_.dropout);
  // grad_/next_ are members so their memory is reused by every backward (no allocation per step).
  MatrixView<T> dz = grad_.matrix(ctx_, dlogits.rows, dlogits.cols);
  ops::copy<T>(ctx_, dlogits, dz);
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const graph::Block& block = *blocks[l];
    const int64_t out = layers_[l]->out_dim();
    GNNPIPE_CHECK(dz.rows == block.num_dst && dz.cols == out, "backward: gradient {} for layer {} of [{} x {}]",
                  shape_str(dz), l, block.num_dst, out);
    if (l + 1 < layers_.size()) {
      // The activation ran in place, so its backward works from the output.
      activate_backward(outputs_[l].view(block.num_dst, out), dz);
    }
    if (l == 0) {
      layers_[l]->backward(block, dz, MatrixView<T>{nullptr, block.num_src, layers_[l]->in_dim()});
      break;
    }
    const MatrixView<T> da = next_.matrix(ctx_, block.num_src, layers_[l]->in_dim());  // overwritten by backward
    layers_[l]->backward(block, dz, da);
    if (training_ && p > T{0}) ops::dropout_backward<T>(ctx_, masks_[l].data(), p, da, da);
    std::swap(grad_, next_);
    dz = grad_.view(block.num_src, layers_[l]->in_dim());
  }
}

template class GnnModel<float>;
template class GnnModel<double>;

}  // namespace gnnpipe::models
