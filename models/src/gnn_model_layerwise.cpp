// GnnModel's layer-wise training entry points (memory.policy layerwise): one layer on a chunk of
// its destinations, mirroring forward()/backward() for that layer row for row.
#include "gnnpipe/models/gnn_model.hpp"

#include <algorithm>

#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
MatrixView<const T> GnnModel<T>::forward_layer(std::size_t l, const graph::Block& block, MatrixView<const T> x,
                                               std::span<const graph::NodeId> row_ids, core::RngKey dropout_key) {
  GNNPIPE_CHECK_CONFIG(!has_embedding(),
                       "memory.policy: layer-wise training does not take model.embedding (its table is the input)");
  GNNPIPE_CHECK(l < layers_.size(), "layer {} of a {}-layer model", l, layers_.size());
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == layers_[l]->in_dim() &&
                    static_cast<int64_t>(row_ids.size()) == x.rows,
                "forward_layer {}: x {} with {} ids for a block of {} sources (in {})", l, shape_str(x), row_ids.size(),
                block.num_src, layers_[l]->in_dim());
  training_ = true;
  first_input_sparse_ = first_input_known_ = false;
  return run_layer(l, block, x, row_ids, true, dropout_key, 0, /*chunk=*/true);
}

template <class T>
void GnnModel<T>::backward_layer(std::size_t l, const graph::Block& block, MatrixView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(l < layers_.size() && training_, "backward_layer {}: no forward_layer of a {}-layer model before it", l,
                layers_.size());
  const int64_t out = layers_[l]->out_dim();
  GNNPIPE_CHECK(dy.rows == block.num_dst && dy.cols == out, "backward_layer: gradient {} for layer {} of [{} x {}]",
                shape_str(dy), l, block.num_dst, out);
  GNNPIPE_CHECK(dx.data != nullptr || l == 0, "backward_layer {}: only layer 0 may skip its input gradient", l);
  GNNPIPE_CHECK(dx.data == nullptr || l > 0, "backward_layer 0: the first layer forms no input gradient");
  GNNPIPE_CHECK(dx.data == nullptr || (dx.rows == block.num_src && dx.cols == layers_[l]->in_dim()),
                "backward_layer {}: input gradient {} for a block of {} sources (in {})", l, shape_str(dx),
                block.num_src, layers_[l]->in_dim());
  backprop_layer(l, block, dy, dx.data != nullptr ? dx : MatrixView<T>{nullptr, block.num_src, layers_[l]->in_dim()});
}

template <class T>
bool GnnModel<T>::transforms_rows(std::size_t l) const {
  return l < layers_.size() && !has_embedding() && !chained_ && layers_[l]->row_transform_heads() > 0;
}

namespace {

// Layer l's input rows after its dropout (forward_layer's, keyed by the rows' global ids), in
// `dropped` (with the layer's mask in `mask` where the model keeps one), or x where nothing drops.
template <class T>
MatrixView<const T> drop_rows(const OpContext& ctx, T p, core::RngKey key, MatrixView<const T> x,
                              std::span<const graph::NodeId> ids, DeviceArray<T>& dropped, uint8_t* mask) {
  if (p <= T{0}) return x;
  const MatrixView<T> a = dropped.matrix(ctx, x.rows, x.cols);
  ops::dropout_forward<T>(ctx, key, p, x, ids, a, mask);
  return a;
}

}  // namespace

template <class T>
TransformedRows<T> GnnModel<T>::transform_rows(std::size_t l, MatrixView<const T> x,
                                               std::span<const graph::NodeId> row_ids, core::RngKey dropout_key) {
  GNNPIPE_CHECK(transforms_rows(l), "transform_rows: layer {} has no row transform", l);
  GNNPIPE_CHECK(x.cols == layers_[l]->in_dim() && static_cast<int64_t>(row_ids.size()) == x.rows,
                "transform_rows {}: x {} with {} ids (in {})", l, shape_str(x), row_ids.size(), layers_[l]->in_dim());
  training_ = true;
  first_input_sparse_ = first_input_known_ = false;
  // No mask: transform_rows_backward redraws it.
  const T p = static_cast<T>(options_.dropout_at(l));
  if (l == 0) known_input_ = {};  // drop_rows writes inputs_[0]
  return layers_[l]->transform(drop_rows(ctx_, p, dropout_key.with(l), x, row_ids, inputs_[l], nullptr));
}

template <class T>
MatrixView<const T> GnnModel<T>::forward_transformed(std::size_t l, const graph::Block& block,
                                                     std::span<const graph::NodeId> row_ids, core::RngKey dropout_key) {
  GNNPIPE_CHECK(transforms_rows(l), "forward_transformed: layer {} has no row transform", l);
  GNNPIPE_CHECK(static_cast<int64_t>(row_ids.size()) == block.num_src,
                "forward_transformed {}: {} ids for a block of {} sources", l, row_ids.size(), block.num_src);
  training_ = true;
  first_input_sparse_ = first_input_known_ = false;
  const MatrixView<T> z = outputs_[l].matrix(ctx_, block.num_dst, layers_[l]->out_dim());
  const bool fused = fuses_activation(l);
  layers_[l]->forward_transformed(block, z,
                                  LayerContext{true, dropout_key.with(l).with(1), row_ids, 0, /*chunk=*/true, fused});
  if (l + 1 < layers_.size() && !fused) activate(z);  // (no GAT model is chained)
  return z;
}

template <class T>
MatrixView<T> GnnModel<T>::backward_transformed(std::size_t l, const graph::Block& block, MatrixView<T> dy) {
  GNNPIPE_CHECK(transforms_rows(l) && training_, "backward_transformed {}: no forward_transformed before it", l);
  GNNPIPE_CHECK(dy.rows == block.num_dst && dy.cols == layers_[l]->out_dim(),
                "backward_transformed: gradient {} for layer {} of [{} x {}]", shape_str(dy), l, block.num_dst,
                layers_[l]->out_dim());
  if (l + 1 < layers_.size()) activate_backward(outputs_[l].view(block.num_dst, layers_[l]->out_dim()), dy);
  return layers_[l]->backward_transformed(block, dy);
}

template <class T>
void GnnModel<T>::transform_rows_backward(std::size_t l, MatrixView<const T> x, std::span<const graph::NodeId> row_ids,
                                          core::RngKey dropout_key, MatrixView<const T> dh, MatrixView<T> dx) {
  GNNPIPE_CHECK(transforms_rows(l) && training_, "transform_rows_backward: layer {} has no row transform", l);
  GNNPIPE_CHECK(x.cols == layers_[l]->in_dim() && static_cast<int64_t>(row_ids.size()) == x.rows,
                "transform_rows_backward {}: x {} with {} ids (in {})", l, shape_str(x), row_ids.size(),
                layers_[l]->in_dim());
  GNNPIPE_CHECK((dx.data == nullptr) == (l == 0), "transform_rows_backward {}: layer 0, and only layer 0, forms no dx", l);
  // The rows' dropout again (the same bits), with its mask where dx needs it.
  const T p = static_cast<T>(options_.dropout_at(l));
  uint8_t* mask = p > T{0} && dx.data != nullptr ? masks_[l].ensure(ctx_, dropout_mask_bytes(x.rows, x.cols)) : nullptr;
  if (l == 0) known_input_ = {};  // drop_rows writes inputs_[0]
  layers_[l]->transform_backward(drop_rows(ctx_, p, dropout_key.with(l), x, row_ids, inputs_[l], mask), dh, dx);
  if (mask != nullptr) ops::dropout_backward<T>(ctx_, mask, p, dx, dx);
}

template <class T>
std::vector<std::size_t> GnnModel<T>::layer_training_arrays(std::size_t l, const BlockShape& shape) const {
  GNNPIPE_CHECK(l < layers_.size(), "layer {} of a {}-layer model", l, layers_.size());
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  std::vector<std::size_t> bytes;
  for (std::size_t j = 0; j < layers_.size(); ++j) {
    const std::size_t begin = bytes.size();
    const int64_t in = layers_[j]->in_dim();
    const bool dropped = options_.dropout_at(j) > 0 && (j == 0 || !chained_);
    bytes.push_back(dropped ? t(shape.num_src * in) : 0);                                  // inputs_[j]
    bytes.push_back(dropped && keeps_mask(j) ? dropout_mask_bytes(shape.num_src, in) : 0);  // masks_[j]
    bytes.push_back(t(shape.num_dst * layers_[j]->out_dim()));                              // outputs_[j]
    layers_[j]->chunk_training_arrays(j == l ? shape : BlockShape{}, j > 0, bytes);
    if (j != l) std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(begin), bytes.end(), 0);
  }
  bytes.insert(bytes.end(), 3, 0);  // grad_, next_, embedded_: not used layer by layer
  return bytes;
}

// Member instantiations only: the class itself is instantiated in gnn_model.cpp.
#define GNNPIPE_LAYERWISE_MEMBERS(T)                                                                             \
  template MatrixView<const T> GnnModel<T>::forward_layer(std::size_t, const graph::Block&, MatrixView<const T>, \
                                                          std::span<const graph::NodeId>, core::RngKey);        \
  template void GnnModel<T>::backward_layer(std::size_t, const graph::Block&, MatrixView<T>, MatrixView<T>);     \
  template std::vector<std::size_t> GnnModel<T>::layer_training_arrays(std::size_t, const BlockShape&) const;     \
  template bool GnnModel<T>::transforms_rows(std::size_t) const;                                               \
  template TransformedRows<T> GnnModel<T>::transform_rows(std::size_t, MatrixView<const T>,                    \
                                                          std::span<const graph::NodeId>, core::RngKey);      \
  template MatrixView<const T> GnnModel<T>::forward_transformed(std::size_t, const graph::Block&,              \
                                                                std::span<const graph::NodeId>, core::RngKey); \
  template MatrixView<T> GnnModel<T>::backward_transformed(std::size_t, const graph::Block&, MatrixView<T>);    \
  template void GnnModel<T>::transform_rows_backward(std::size_t, MatrixView<const T>,                         \
                                                     std::span<const graph::NodeId>, core::RngKey,            \
                                                     MatrixView<const T>, MatrixView<T>);
GNNPIPE_LAYERWISE_MEMBERS(float)
GNNPIPE_LAYERWISE_MEMBERS(double)
#undef GNNPIPE_LAYERWISE_MEMBERS

}  // namespace gnnpipe::models
