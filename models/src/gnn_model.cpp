#include "gnnpipe/models/gnn_model.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "gnnpipe/core/hash.hpp"
#include "gnnpipe/models/layers/gaan_layer.hpp"
#include "gnnpipe/models/layers/gat_layer.hpp"
#include "gnnpipe/models/layers/gcn_layer.hpp"
#include "gnnpipe/models/layers/ggnn_layer.hpp"
#include "gnnpipe/models/layers/sage_layer.hpp"
#include "gnnpipe/models/ops/ops.hpp"

namespace gnnpipe::models {

template <class T>
GnnModel<T>::GnnModel(const ModelOptions& options, int64_t in_dim, int64_t out_dim, uint64_t seed,
                      const OpContext& ctx, int64_t embedding_rows, bool trainable)
    : options_(options), ctx_(ctx), chained_(options.type == ModelType::kGgnn) {
  GNNPIPE_CHECK_CONFIG(options.layers >= 1 && options.layers <= kMaxLayers, "model.layers: must be in [1, {}], got {}",
                       kMaxLayers, options.layers);
  if (ctx.allocator() != nullptr) params_.limit_bytes(ctx.allocator()->budget());
  if (options.embedding > 0) {
    GNNPIPE_CHECK(in_dim == 0 && embedding_rows > 0,
                  "model.embedding: the input has {} feature columns and the table {} rows (expected 0 and > 0)", in_dim,
                  embedding_rows);
    GNNPIPE_CHECK_CONFIG(embedding_rows <= std::numeric_limits<int32_t>::max(),
                         "model.embedding: {} nodes are more than a table can index", embedding_rows);
    embedding_ = params_.add("embedding.weight", embedding_rows, options.embedding, /*layer=*/-1, Init::kNormal);
    in_dim = options.embedding;
  }
  GNNPIPE_CHECK_CONFIG(options.hidden_widths.empty() ||
                           options.hidden_widths.size() == static_cast<std::size_t>(options.layers - 1),
                       "model.hidden: a list of {} widths for {} layers (one per hidden layer: {})",
                       options.hidden_widths.size(), options.layers, options.layers - 1);
  // GAT's hidden layers have `heads` heads of hidden_width(l) channels (concatenated: heads times
  // as wide); its last layer has one head of out_dim channels, as PyG's GAT example.
  const auto width_after = [&](int l) {  // the input width of layer l + 1
    const int64_t w = options.hidden_width(l);
    return options.type == ModelType::kGat && options.concat_heads ? int64_t{options.heads} * w : w;
  };
  GruParams gru;
  if (options.type == ModelType::kGgnn) {
    GNNPIPE_CHECK_CONFIG(std::all_of(options.hidden_widths.begin(), options.hidden_widths.end(),
                                     [&](int w) { return w == options.hidden; }),
                         "model.hidden: GGNN's steps share one state width; give one number, not a list of different "
                         "widths");
    gru = GgnnLayer<T>::add_gru(params_, options.hidden);
  }
  for (int l = 0; l < options.layers; ++l) {
    const bool last = l + 1 == options.layers;
    const int64_t in = l == 0 ? in_dim : width_after(l - 1);
    const int64_t out = last ? out_dim : options.hidden_width(l);
    switch (options.type) {
      case ModelType::kGcn: {
        // Layer 0 aggregates first ((A x) W) when its input is never dropped out and not learned,
        // and the layer does not narrow: no more work or memory than x W first, and A x can be
        // kept for as long as the caller's input is unchanged (input_tag; docs/DECISIONS.md).
        const bool aggregate_first = l == 0 && options.dropout_at(0) == 0 && options.embedding == 0 && in <= out;
        layers_.push_back(std::make_unique<GcnLayer<T>>(params_, in, out, l, ctx_, aggregate_first));
        break;
      }
      case ModelType::kSage: layers_.push_back(std::make_unique<SageLayer<T>>(params_, in, out, l, ctx_)); break;
      case ModelType::kGat: {
        GatShape shape{in, last ? 1 : int64_t{options.heads}, out, last ? false : options.concat_heads,
                       options.attention_dropout, 0.2};
        layers_.push_back(std::make_unique<GatLayer<T>>(params_, shape, l, ctx_));
        break;
      }
      case ModelType::kGgnn: {
        // The seed's GGNN: x W_in before the first step, W_out after the last; every step C wide.
        const GgnnShape shape{in, options.hidden, last ? out_dim : options.hidden, l == 0, last};
        layers_.push_back(std::make_unique<GgnnLayer<T>>(params_, shape, gru, l, ctx_));
        break;
      }
      case ModelType::kGaan: {
        const GaanShape shape{in, out, options.heads, options.key_dim, options.value_dim, options.gate_dim};
        layers_.push_back(std::make_unique<GaanLayer<T>>(params_, shape, l, ctx_));
        break;
      }
    }
  }
  params_.initialize(seed);
  params_.place(ctx_, trainable);
  inputs_.resize(layers_.size());
  outputs_.resize(layers_.size());
  masks_.resize(layers_.size());
}

template <class T>
void GnnModel<T>::activate(MatrixView<T> z) const {
  const T param = options_.activation == Activation::kLeakyRelu ? static_cast<T>(kLeakySlope) : T{1};
  ops::activation<T>(ctx_, options_.activation, param, z, z);
}

template <class T>
bool GnnModel<T>::fuses_activation(std::size_t l) const {
  return l + 1 < layers_.size() && !chained_ && options_.activation == Activation::kRelu && layers_[l]->fuses_relu();
}

template <class T>
void GnnModel<T>::activate_backward(MatrixView<const T> y, MatrixView<T> dz) const {
  const T param = options_.activation == Activation::kLeakyRelu ? static_cast<T>(kLeakySlope) : T{1};
  ops::activation_backward<T>(ctx_, options_.activation, param, y, dz, dz);
}

template <class T>
MatrixView<const T> GnnModel<T>::forward(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                                         std::span<const graph::NodeId> row_ids, bool training,
                                         core::RngKey dropout_key, uint64_t input_tag) {
  GNNPIPE_CHECK(blocks.size() == layers_.size(), "{} blocks for a {}-layer model", blocks.size(), layers_.size());
  GNNPIPE_CHECK(!training || static_cast<int64_t>(row_ids.size()) == x.rows,
                "forward: training needs the global id of every input row: {} ids for {} rows", row_ids.size(), x.rows);
  training_ = training;
  first_input_sparse_ = first_input_known_ = false;
  MatrixView<const T> h = has_embedding() ? embed(x, row_ids) : x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    // This layer's input rows (its block's sources) are the first h.rows nodes of the batch.
    std::span<const graph::NodeId> ids;
    if (training) {
      GNNPIPE_CHECK(h.rows <= x.rows, "forward: layer {} reads {} rows, more than the batch's {} nodes", l, h.rows,
                    x.rows);
      ids = row_ids.first(static_cast<std::size_t>(h.rows));
    }
    h = run_layer(l, *blocks[l], h, ids, training, dropout_key, input_tag, /*chunk=*/false);
  }
  return h;
}

template <class T>
MatrixView<T> GnnModel<T>::run_layer(std::size_t l, const graph::Block& block, MatrixView<const T> h,
                                     std::span<const graph::NodeId> ids, bool training, core::RngKey dropout_key,
                                     uint64_t input_tag, bool chunk) {
  const T p = static_cast<T>(options_.dropout_at(l));
  const MatrixView<T> z = outputs_[l].matrix(ctx_, block.num_dst, layers_[l]->out_dim());
  const bool dropped = training && p > T{0} && (l == 0 || !chained_);
  // The caller's tag reaches layer 0 only while its input is the caller's x as it is.
  const uint64_t tag = l == 0 && !dropped && !has_embedding() ? input_tag : 0;
  const bool fused = fuses_activation(l);
  const LayerContext context{training, dropout_key.with(l).with(1), ids, tag, chunk, fused};
  if (l == 0 && shared_ != nullptr) {
    run_first_view(block, h, ids, p, dropped, dropout_key, context, z);
  } else if (dropped) {
    const bool in_place = !chunk && drops_in_place(l);
    // In place, h is outputs_[l - 1] (forward() chains them).
    GNNPIPE_CHECK(!in_place || h.data == outputs_[l - 1].data(),
                  "run_layer {}: an in-place dropout of rows that are not the previous layer's outputs", l);
    const MatrixView<T> a = in_place ? outputs_[l - 1].view(h.rows, h.cols) : inputs_[l].matrix(ctx_, h.rows, h.cols);
    // Layer 0's mask is never read (backward forms no input gradient there) unless the input is a
    // learned embedding: otherwise none is kept, and on the CPU sparse features take a sparse
    // path (ops/sparse_input.hpp): the layer gets the kept non-zeros in CSR form, in a's memory
    // (not in a chunk, whose layer forms an input gradient).
    std::optional<SparseRowsView<T>> sparse;
    if (!chunk && !keeps_mask(l) && layers_[l]->takes_linear_input()) {
      sparse = drop_sparse(l, h, ids, dropout_key.with(l), p, a, input_tag);
    } else if (l == 0) {
      known_input_ = {};
    }
    if (sparse) {
      first_input_sparse_ = true;
      layers_[l]->forward_linear(block, LayerInput<T>::of(*sparse), z, context);
    } else {
      ops::dropout_forward<T>(ctx_, dropout_key.with(l), p, h, ids, a,
                              keeps_mask(l) ? masks_[l].ensure(ctx_, dropout_mask_bytes(h.rows, h.cols)) : nullptr);
      layers_[l]->forward(block, a, z, context);
    }
  } else {
    layers_[l]->forward(block, h, z, context);
  }
  if (l + 1 < layers_.size() && !chained_ && !fused) activate(z);  // in place: z now holds act(z)
  return z;
}

template <class T>
std::optional<SparseRowsView<T>> GnnModel<T>::drop_sparse(std::size_t l, MatrixView<const T> x,
                                                          std::span<const graph::NodeId> ids, core::RngKey key, T p,
                                                          MatrixView<T> a, uint64_t input_tag) {
  if (l != 0 || input_tag == 0 || has_embedding() || ctx_.is_cuda()) {
    if (l == 0) known_input_ = {};
    return ops::dropout_forward_sparse<T>(ctx_, key, p, x, ids, a);
  }
  // The CSR form takes the upper half of a, the dropped result (no larger) the lower half; the
  // dense dropped copy a holds otherwise is rows x cols values, at least four times the CSR form
  // of at most an eighth of them (sparse_nonzeros), so the governor's arithmetic is unchanged.
  const std::span<std::byte> buffer = std::as_writable_bytes(std::span<T>(a.data, static_cast<std::size_t>(a.size())));
  const std::size_t half = buffer.size() / 2 / alignof(int64_t) * alignof(int64_t);
  const KnownInput now{input_tag, x.rows, x.cols, core::hash64(ids.data(), ids.size_bytes()), a.data,
                       inputs_[0].capacity(), {}};
  const bool kept = known_input_.same(now);
  if (!kept) {
    known_input_ = {};
    const auto structure = ops::sparse_structure<T>(ctx_, x, buffer.subspan(half, half));
    known_input_ = now;
    if (structure) known_input_.structure = *structure;
  }
  if (known_input_.structure.offsets == nullptr) {
    // No CSR form of x (too many non-zeros): what dropout_forward_sparse writes leaves the
    // record as it is, with nothing in the upper half to keep.
    return ops::dropout_forward_sparse<T>(ctx_, key, p, x, ids, a);
  }
  first_input_known_ = kept;
  return ops::dropout_forward_known<T>(ctx_, key, p, x, known_input_.structure, ids, buffer.first(half));
}

template <class T>
void GnnModel<T>::run_first_view(const graph::Block& block, MatrixView<const T> x, std::span<const graph::NodeId> ids,
                                 T p, bool dropped, core::RngKey dropout_key, const LayerContext& context,
                                 MatrixView<T> z) {
  if (!shared_->has_input()) {
    if (!dropped) {
      shared_->set_input(LayerInput<T>::of(x));
    } else {
      // As run_layer drops a first layer's input (no mask: no input gradient is formed).
      const MatrixView<T> a = inputs_[0].matrix(ctx_, x.rows, x.cols);
      const auto sparse = drop_sparse(0, x, ids, dropout_key.with(0), p, a, view_input_tag_);
      if (sparse) {
        shared_->set_input(LayerInput<T>::of(*sparse));
      } else {
        ops::dropout_forward<T>(ctx_, dropout_key.with(0), p, x, ids, a, nullptr);
        shared_->set_input(LayerInput<T>::of(MatrixView<const T>(a)));
      }
    }
  }
  const LayerInput<T> input = shared_->view(view_factors_);
  first_input_sparse_ = input.is_sparse();
  layers_[0]->forward_linear(block, input, z, context);
}

template <class T>
MatrixView<const T> GnnModel<T>::forward_view(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                                              std::span<const graph::NodeId> row_ids, core::RngKey dropout_key,
                                              SharedInput<T>& shared, std::span<const float> row_factors,
                                              uint64_t input_tag) {
  GNNPIPE_CHECK(shares_first_layer(), "forward_view: this model's first layer cannot share its input between views");
  shared_ = &shared;
  view_factors_ = row_factors;
  view_input_tag_ = input_tag;
  struct Reset {
    GnnModel* m;
    ~Reset() { m->shared_ = nullptr, m->view_factors_ = {}, m->view_input_tag_ = 0; }
  } reset{this};
  return forward(blocks, x, row_ids, /*training=*/true, dropout_key);
}

template <class T>
void GnnModel<T>::backprop_layer(std::size_t l, const graph::Block& block, MatrixView<T> dz, MatrixView<T> da) {
  // The activation ran in place, so its backward works from the output.
  if (l + 1 < layers_.size() && !chained_) activate_backward(outputs_[l].view(block.num_dst, layers_[l]->out_dim()), dz);
  layers_[l]->backward(block, dz, da);
  const T p = static_cast<T>(options_.dropout_at(l));
  if (da.data != nullptr && training_ && p > T{0} && (l == 0 || !chained_)) {
    ops::dropout_backward<T>(ctx_, masks_[l].data(), p, da, da);
  }
}

template <class T>
MatrixView<const T> GnnModel<T>::embedding() const {
  return has_embedding() ? params_.value(embedding_) : MatrixView<const T>{};
}

template <class T>
MatrixView<const T> GnnModel<T>::embed(MatrixView<const T> x, std::span<const graph::NodeId> row_ids) {
  GNNPIPE_CHECK(x.cols == 0 && (row_ids.empty() || static_cast<int64_t>(row_ids.size()) == x.rows),
                "forward: with model.embedding the input is {} with {} ids (expected no columns and one id per row)",
                shape_str(x), row_ids.size());
  const MatrixView<const T> table = embedding();
  const MatrixView<T> rows = embedded_.matrix(ctx_, x.rows, table.cols);
  if (row_ids.empty()) {
    GNNPIPE_CHECK(x.rows <= table.rows, "forward: {} input rows for an embedding of {} nodes", x.rows, table.rows);
  }
  ops::copy_rows<T>(ctx_, table, row_ids, rows, {});
  embedded_ids_ = row_ids;
  return rows;
}

template <class T>
void GnnModel<T>::infer_layer(std::size_t l, const graph::Block& block, MatrixView<const T> x, MatrixView<T> y,
                              bool chunk) {
  GNNPIPE_CHECK(l < layers_.size(), "layer {} of a {}-layer model", l, layers_.size());
  GNNPIPE_CHECK(x.rows == block.num_src && y.rows == block.num_dst && y.cols == layers_[l]->out_dim(),
                "infer_layer {}: x {} and y {} do not fit a block of {} sources, {} destinations (out {})", l,
                shape_str(x), shape_str(y), block.num_src, block.num_dst, layers_[l]->out_dim());
  infer_through(l, y, chunk, [&](const LayerContext& context) { layers_[l]->forward(block, x, y, context); });
}

template <class T>
TransformedRows<T> GnnModel<T>::infer_transform_rows(std::size_t l, MatrixView<const T> x) {
  GNNPIPE_CHECK(transforms_rows(l), "infer_transform_rows: layer {} has no row transform", l);
  training_ = false;
  return layers_[l]->transform(x);
}

template <class T>
void GnnModel<T>::infer_transformed(std::size_t l, const graph::Block& block, MatrixView<T> y) {
  GNNPIPE_CHECK(transforms_rows(l), "infer_transformed: layer {} has no row transform", l);
  GNNPIPE_CHECK(y.rows == block.num_dst && y.cols == layers_[l]->out_dim(),
                "infer_transformed {}: y {} for a block of {} destinations (out {})", l, shape_str(y), block.num_dst,
                layers_[l]->out_dim());
  infer_through(l, y, /*chunk=*/true,
                [&](const LayerContext& context) { layers_[l]->forward_transformed(block, y, context); });
}

template <class T>
template <class Forward>
void GnnModel<T>::infer_through(std::size_t l, MatrixView<T> y, bool chunk, const Forward& forward) {
  training_ = false;
  const bool fused = fuses_activation(l);
  forward(LayerContext{.training = false, .key = core::RngKey{}, .chunk = chunk, .relu = fused});
  if (l + 1 < layers_.size() && !chained_ && !fused) activate(y);
}

template <class T>
void GnnModel<T>::infer_first_layer(const graph::Block& block, SparseRowsView<T> x, MatrixView<T> y, bool chunk) {
  GNNPIPE_CHECK(infers_sparse_input(), "infer_first_layer: this model's first layer does not infer through x W");
  GNNPIPE_CHECK(x.rows == block.num_src && x.cols == layers_[0]->in_dim() && y.rows == block.num_dst &&
                    y.cols == layers_[0]->out_dim(),
                "infer_first_layer: sparse x [{} x {}] and y {} do not fit a block of {} sources, {} destinations (in {}, "
                "out {})",
                x.rows, x.cols, shape_str(y), block.num_src, block.num_dst, layers_[0]->in_dim(), layers_[0]->out_dim());
  infer_through(0, y, chunk,
                [&](const LayerContext& context) { layers_[0]->forward_linear(block, LayerInput<T>::of(x), y, context); });
}

template <class T>
void GnnModel<T>::release_layer_arrays(std::size_t l) {
  GNNPIPE_CHECK(l < layers_.size(), "layer {} of a {}-layer model", l, layers_.size());
  layers_[l]->release_arrays();
}

template <class T>
void GnnModel<T>::release_arrays() {
  for (auto& layer : layers_) layer->release_arrays();
  for (auto& a : inputs_) a.release(ctx_.stream());
  known_input_ = {};
  for (auto& a : outputs_) a.release(ctx_.stream());
  for (auto& a : masks_) a.release(ctx_.stream());
  embedded_.release(ctx_.stream());
  embedded_ids_ = {};
  grad_.release(ctx_.stream());
  next_.release(ctx_.stream());
  training_ = false;
  first_input_sparse_ = first_input_known_ = false;
}

template <class T>
void GnnModel<T>::backward(std::span<const graph::Block* const> blocks, MatrixView<const T> dlogits) {
  // grad_/next_ are members so their memory is reused by every backward (no allocation per step).
  // They alternate through pointers local to this call, so every call uses them in the same way
  // (grad_ for dlogits and the even steps down, next_ for the odd ones): the memory governor's
  // arithmetic (training_arrays) depends on it.
  DeviceArray<T>* current = &grad_;
  DeviceArray<T>* spare = &next_;
  MatrixView<T> dz = current->matrix(ctx_, dlogits.rows, dlogits.cols);
  ops::copy<T>(ctx_, dlogits, dz);
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const graph::Block& block = *blocks[l];
    const int64_t out = layers_[l]->out_dim();
    GNNPIPE_CHECK(dz.rows == block.num_dst && dz.cols == out, "backward: gradient {} for layer {} of [{} x {}]",
                  shape_str(dz), l, block.num_dst, out);
    if (l == 0 && !has_embedding()) {
      backprop_layer(l, block, dz, MatrixView<T>{nullptr, block.num_src, layers_[l]->in_dim()});
      break;
    }
    const MatrixView<T> da = spare->matrix(ctx_, block.num_src, layers_[l]->in_dim());  // overwritten by backward
    backprop_layer(l, block, dz, da);
    if (l == 0) {
      // The input rows are the table's rows embedded_ids_ (distinct): their gradients add into its gradient.
      ops::add_rows<T>(ctx_, da, params_.grad(embedding_), embedded_ids_);
      break;
    }
    std::swap(current, spare);
    dz = current->view(block.num_src, layers_[l]->in_dim());
  }
}

template <class T>
void GnnModel<T>::kept_layer_arrays(std::size_t l, const BlockShape& s, bool training,
                                    std::vector<std::size_t>& bytes) const {
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  const int64_t in = layers_[l]->in_dim();
  const bool dropped = training && options_.dropout_at(l) > 0 && (l == 0 || !chained_);
  bytes.push_back(dropped && !drops_in_place(l) ? t(s.num_src * in) : 0);     // inputs_[l]
  bytes.push_back(dropped && keeps_mask(l) ? dropout_mask_bytes(s.num_src, in) : 0);  // masks_[l]: bits
  bytes.push_back(t(s.num_dst * layers_[l]->out_dim()));                       // outputs_[l]
}

template <class T>
std::vector<std::size_t> GnnModel<T>::kept_arrays(std::span<const BlockShape> shapes, bool view) const {
  GNNPIPE_CHECK(shapes.size() == layers_.size(), "{} block shapes for a {}-layer model", shapes.size(), layers_.size());
  std::vector<std::size_t> bytes;
  for (std::size_t l = 0; l < layers_.size(); ++l) kept_layer_arrays(l, shapes[l], /*training=*/true, bytes);
  if (view) bytes.front() = 0;  // inputs_[0]: the views' dropped input is shared (run_first_view)
  return bytes;
}

template <class T>
bool GnnModel<T>::can_keep_aside() const {
  return !has_embedding() && std::all_of(layers_.begin(), layers_.end(), [](const auto& l) { return l->keeps_input_only(); });
}

template <class T>
void GnnModel<T>::swap_kept(KeptForward& kept) {
  GNNPIPE_CHECK(can_keep_aside(), "swap_kept: a layer of this model keeps more than its input for its backward");
  const std::size_t n = layers_.size();
  kept.inputs.resize(n);
  kept.outputs.resize(n);
  kept.masks.resize(n);
  kept.layer_inputs.resize(n);
  std::swap(known_input_, kept.known_input);  // with inputs_[0]'s array
  for (std::size_t l = 0; l < n; ++l) {
    std::swap(inputs_[l], kept.inputs[l]);
    std::swap(outputs_[l], kept.outputs[l]);
    std::swap(masks_[l], kept.masks[l]);
    layers_[l]->swap_kept_input(kept.layer_inputs[l]);
  }
}

template <class T>
void GnnModel<T>::KeptForward::release(const core::Stream& stream) {
  for (auto* arrays : {&inputs, &outputs}) {
    for (DeviceArray<T>& a : *arrays) a.release(stream);
  }
  for (DeviceArray<uint8_t>& a : masks) a.release(stream);
  layer_inputs.assign(layer_inputs.size(), LayerInput<T>{});
  known_input = {};
}

template <class T>
std::vector<std::size_t> GnnModel<T>::training_arrays(std::span<const BlockShape> shapes, bool training) const {
  GNNPIPE_CHECK(shapes.size() == layers_.size(), "{} block shapes for a {}-layer model", shapes.size(), layers_.size());
  const auto t = [](int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(T); };
  std::vector<std::size_t> bytes;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    kept_layer_arrays(l, shapes[l], training, bytes);
    layers_[l]->training_arrays(shapes[l], training, l > 0 || has_embedding(), bytes);
  }
  // grad_ and next_, as backward alternates them (down to layer 0's input with an embedding).
  std::size_t grad = t(shapes.back().num_dst * layers_.back()->out_dim()), next = 0;
  bool spare_is_next = true;
  const std::size_t lowest = has_embedding() ? 0 : 1;
  for (std::size_t l = layers_.size(); l-- > lowest;) {
    std::size_t& spare = spare_is_next ? next : grad;
    spare = std::max(spare, t(shapes[l].num_src * layers_[l]->in_dim()));
    spare_is_next = !spare_is_next;
  }
  bytes.push_back(grad);
  bytes.push_back(next);
  bytes.push_back(has_embedding() ? t(shapes.front().num_src * options_.embedding) : 0);  // embedded_
  return bytes;
}

template <class T>
std::vector<std::size_t> GnnModel<T>::inference_arrays(std::size_t layer, const BlockShape& shape, bool chunk) const {
  GNNPIPE_CHECK(layer < layers_.size(), "layer {} of a {}-layer model", layer, layers_.size());
  std::vector<std::size_t> bytes;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    bytes.insert(bytes.end(), 3, 0);  // inputs_, masks_, outputs_: not used by infer_layer
    const std::size_t begin = bytes.size();
    if (l == layer && chunk) {
      layers_[l]->chunk_inference_arrays(shape, bytes);
    } else {
      layers_[l]->inference_arrays(l == layer ? shape : BlockShape{}, bytes);
    }
    if (l != layer) std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(begin), bytes.end(), 0);
  }
  bytes.insert(bytes.end(), 3, 0);  // grad_, next_, embedded_
  return bytes;
}

template class GnnModel<float>;
template class GnnModel<double>;

}  // namespace gnnpipe::models
