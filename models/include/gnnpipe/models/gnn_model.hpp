#pragma once
// GnnModel<T>: a stack of graph layers with dropout before every layer and ReLU between layers
// (PyG's GCN/SAGE examples; GGNN's steps are chained states: dropout on the input only, no
// activation between steps). Block l feeds layer l; full-batch training passes the same block for
// every layer. forward() keeps the activations for backward(); one forward, then at most one
// backward. Dropout masks come from the Philox stream (seed, epoch, batch, layer) at positions
// given by the GLOBAL node id of each row (ops/dropout.hpp), so a run is reproducible for any
// thread count, and a node draws the same mask wherever it sits in a batch: a batch split into
// micro-batches (each keeping its targets' computation tree, renumbered) accumulates the unsplit
// step's gradient. With model.embedding the input is a learned table [embedding_rows x
// embedding], parameter "embedding.weight" (initialised N(0, 1) as torch.nn.Embedding; tagged layer
// -1, so weight_decay_first_layer_only leaves it alone): forward gathers the rows of the batch's
// nodes and backward adds their input gradients into the table's. Not thread-safe.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/model_options.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

template <class T>
class GnnModel {
 public:
  // model.layers above this is refused (a config error, not hours of building layers).
  static constexpr int kMaxLayers = 1024;
  // layers = options.layers: in_dim -> hidden -> ... -> out_dim. Throws ConfigError for model
  // types this build cannot run yet. Parameters are initialised on the host and placed in ctx's
  // memory; `ctx` must outlive the model. With options.embedding > 0, in_dim must be 0 (the input
  // has no feature columns) and embedding_rows > 0 is the number of nodes of the table.
  // `trainable` false: the parameters are placed without gradients (inference only: forward and
  // infer_layer; backward throws).
  GnnModel(const ModelOptions& options, int64_t in_dim, int64_t out_dim, uint64_t seed,
           const OpContext& ctx = OpContext::host(), int64_t embedding_rows = 0, bool trainable = true);

  const OpContext& context() const { return ctx_; }

  // The edge weighting every block must carry (all layers of one model agree).
  graph::BlockNorm block_norm() const { return layers_.front()->block_norm(); }
  std::size_t num_layers() const { return layers_.size(); }
  ParamStore<T>& params() { return params_; }
  const ParamStore<T>& params() const { return params_; }

  // blocks[l] feeds layer l; x has blocks[0]->num_src rows. Returns the logits
  // [blocks.back()->num_dst x out_dim], valid until the next forward. `training` enables dropout
  // with masks keyed by `dropout_key` (extended with the layer index) and the global node ids
  // `row_ids` of x's rows (MiniBatch::input_nodes: x.rows entries in the memory of the model's
  // context). Every layer's input rows are local nodes 0..rows-1 of that one numbering
  // (destinations are a prefix of sources), so layer l uses the first rows of row_ids; the same
  // ids key GAT's attention dropout. Required when training (an empty list would silently key
  // masks by batch position); ignored otherwise (may be empty). With an embedding, x has no
  // columns and the input rows are the table's rows row_ids (empty: rows 0..x.rows-1, also when
  // not training); the ids must then be distinct and stay valid until backward().
  // `input_tag` (0: none): a nonzero tag promises that x and blocks[0] hold exactly what they held
  // in the last forward given the same tag (a batch resident on the device, features included), so
  // layer 0 may reuse what it computed from them then (GcnLayer's aggregated input, the dropout's
  // CSR form of x: drop_sparse).
  MatrixView<const T> forward(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                              std::span<const graph::NodeId> row_ids, bool training, core::RngKey dropout_key,
                              uint64_t input_tag = 0);
  // Whether forward_view shares the first layer's products between views: the first layer reads
  // its input only through x W and x^T dh (GCN, GAT) and the input is the features (no embedding).
  bool shares_first_layer() const { return !has_embedding() && layers_.front()->takes_linear_input(); }
  // forward() in training mode of one view of a batch whose views differ in their blocks and in a
  // factor per input row: the first layer's input is diag(row_factors) dropout(x) (empty factors:
  // dropout(x)), read through `shared` (layers/layer_input.hpp): the first view after
  // shared.reset() drops x out and the first that needs it forms x W; the others reuse both. The
  // backward that follows adds the first layer's weight gradient to `shared`, and shared.flush()
  // adds it to the parameter's. Every view must pass the same x, row_ids and dropout_key.
  // Requires shares_first_layer(). The same loss and gradients as forward() on the scaled rows
  // diag(row_factors) x, up to rounding (dropout keeps its mask, which depends on ids and key only).
  // `input_tag` (0: none) promises x's content only (the views' blocks differ): the same as in the
  // last forward_view given the same tag, wherever x lies (a full batch's rows in another staging
  // slot), so the dropout may reuse x's CSR form (drop_sparse); the layers never see it.
  MatrixView<const T> forward_view(std::span<const graph::Block* const> blocks, MatrixView<const T> x,
                                   std::span<const graph::NodeId> row_ids, core::RngKey dropout_key,
                                   SharedInput<T>& shared, std::span<const float> row_factors,
                                   uint64_t input_tag = 0);
  // Inference through layer l alone, without dropout: y = act(layer_l(block, x)) for l < L - 1 and
  // the logits for the last layer; y is [block.num_dst x layer_out_dim(l)]. The building block of
  // layer-wise full-neighbor inference (all nodes through layer 0 in chunks, then layer 1, ...).
  // Invalidates what the last forward kept: no backward() may follow until the next forward().
  // With an embedding, layer 0's x is rows of embedding() (the caller gathers them, as features).
  // `chunk`: the block is a chunk of the graph's rows (LayerContext::chunk), not the whole graph.
  void infer_layer(std::size_t l, const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, bool chunk = false);
  // infer_layer(0, block, x, y) on x's CSR form (a fixed sparse input: evaluation's features on
  // the CPU, ops/sparse_input.hpp sparse_rows), its x W a sparse product: the same y up to the
  // order of each element's sum. Only where infers_sparse_input(); the same arrays as infer_layer
  // (`chunk` as there).
  bool infers_sparse_input() const { return !has_embedding() && layers_.front()->infers_linear_input(); }
  void infer_first_layer(const graph::Block& block, SparseRowsView<T> x, MatrixView<T> y, bool chunk = false);
  int64_t layer_out_dim(std::size_t l) const { return layers_.at(l)->out_dim(); }
  // model.embedding: the learned input table [embedding_rows x embedding] in the context's
  // memory; an empty view when the input is the features.
  bool has_embedding() const { return embedding_ != kNoEmbedding; }
  MatrixView<const T> embedding() const;

  // Whether the last forward gave the first layer its dropped input in CSR form (training on the
  // CPU with dropout, sparse features, a layer that takes it: ops/sparse_input.hpp).
  bool first_input_sparse() const { return first_input_sparse_; }
  // Whether it dropped that input out from x's CSR form kept since an earlier forward of the same
  // input tag (drop_sparse), rather than by scanning x's dense rows.
  bool first_input_known() const { return first_input_known_; }
  // Whether the last forward's first layer reused what it derived from an input of the same tag.
  bool first_input_reused() const { return layers_.front()->reused_input(); }

  // Accumulates parameter gradients for d(loss)/d(logits) of the last forward.
  void backward(std::span<const graph::Block* const> blocks, MatrixView<const T> dlogits);

 private:
  // What the upper half of an inputs_[0] array holds: the CSR form of the input of `tag` (a tag
  // promises the input's content: GnnModel::forward, forward_view), for that shape and the
  // array's memory as it was (structure.offsets null: the input has no CSR form). It travels with
  // its array (swap_kept) and is reset wherever the array is written otherwise or released; a tag
  // of 0 is never matched.
  struct KnownInput {
    uint64_t tag = 0;
    int64_t rows = 0, cols = 0;
    uint64_t ids_hash = 0;  // of the rows' global ids (a check on the tag's promise, not a key)
    const T* buffer = nullptr;
    std::size_t capacity = 0;
    SparseRowsView<T> structure{};
    bool same(const KnownInput& o) const {
      return tag != 0 && tag == o.tag && rows == o.rows && cols == o.cols && ids_hash == o.ids_hash &&
             buffer == o.buffer && capacity == o.capacity;
    }
  };

 public:
  // What a training forward keeps for its backward, held aside: MH-Aug's step keeps the new view's
  // forward while the previous view runs forward and backward, then backs the new view up without
  // forwarding it again (pipeline/src/augmented_step.hpp). Its arrays are grow-only like the
  // model's, and it belongs to one model.
  struct KeptForward {
    std::vector<DeviceArray<T>> inputs, outputs;
    std::vector<DeviceArray<uint8_t>> masks;
    std::vector<LayerInput<T>> layer_inputs;
    KnownInput known_input;  // of inputs[0]
    void release(const core::Stream& stream);
  };
  // Whether swap_kept can hold a forward aside: every layer keeps only its input for its backward
  // (Layer::keeps_input_only: GCN) and the input is the features (an embedding keeps its rows' ids).
  bool can_keep_aside() const;
  // Exchanges what the last whole-batch training forward kept for its backward (the layers'
  // inputs, dropout masks and outputs) with `kept`: backward() then backs up the forward `kept`
  // held, and the next forward grows `kept`'s former arrays. Swapping twice around a forward and
  // backward of another batch of the same model leaves the first forward ready for its backward,
  // bitwise as if it had just run. Requires can_keep_aside().
  void swap_kept(KeptForward& kept);
  // The bytes a KeptForward's arrays reach holding a training forward on blocks of these shapes
  // (one per layer): per layer its input, mask and output, as training_arrays counts them; with
  // `view`, a forward_view's (its first layer's dropped input is the SharedInput's, not the model's).
  std::vector<std::size_t> kept_arrays(std::span<const BlockShape> shapes, bool view) const;

  // Layer-wise chunked training (memory.policy layerwise: pipeline/src/layerwise_step.hpp): layer
  // l alone, in training mode, on the block of a chunk of its destinations. forward_layer: x
  // [block.num_src x in_dim(l)] holds the layer's input rows before dropout and row_ids their
  // global ids (in the context's memory); it applies layer l's dropout (keyed as forward() keys
  // it, so the same global ids draw the same masks), the layer, and the activation after it (not
  // after the last layer nor between GGNN's steps), and returns the outputs
  // [block.num_dst x out_dim(l)], valid until the next call. backward_layer: the gradient of the
  // last forward_layer (the same l and block): dy [num_dst x out_dim(l)] (overwritten) -> dx
  // [num_src x in_dim(l)] with respect to x before dropout (null data: not formed; required for
  // l == 0, which keeps no mask); parameter gradients accumulate. Each row computes exactly what
  // forward()/backward() compute for it, so chunks covering every destination give the whole
  // step's loss and gradients up to the order of the sums over chunks. A model with
  // model.embedding throws (its table's rows are not an input a chunk can carry). x must stay
  // valid and unchanged until the matching backward_layer (a layer may read it there).
  MatrixView<const T> forward_layer(std::size_t l, const graph::Block& block, MatrixView<const T> x,
                                    std::span<const graph::NodeId> row_ids, core::RngKey dropout_key);
  void backward_layer(std::size_t l, const graph::Block& block, MatrixView<T> dy, MatrixView<T> dx);
  // The arrays forward_layer(l) and backward_layer(l) (with dx when l > 0) grow on a block of
  // `shape`, in training_arrays' positions (0 for every other array).
  std::vector<std::size_t> layer_training_arrays(std::size_t l, const BlockShape& shape) const;
  int64_t layer_in_dim(std::size_t l) const { return layers_.at(l)->in_dim(); }
  // Transform-once layer-wise training (layerwise_step.hpp with host outputs): a layer whose
  // forward transforms each source row on its own before it reads the block (GAT:
  // Layer::row_transform_heads) runs as a layer-wide transform of its input rows, whose outputs the
  // caller keeps, and chunks that read them, instead of every chunk transforming its sources again
  // (at degree 50 a chunk's sources are most of the graph). transform_rows: layer l's dropout
  // (keyed by the rows' global ids, as forward_layer keys it) and its transform, of any rows of its
  // input; the outputs are the layer's, valid until the next call. transformed_rows: room for a
  // chunk's sources' transformed rows, for the caller to fill before forward_transformed, which
  // runs the rest of layer l and its activation on the chunk's block (as forward_layer).
  // backward_transformed: the gradient of the last forward_transformed, dy (overwritten) ->
  // d(loss)/dh of the block's sources (the layer's memory, valid until the next call); the
  // layer's other parameter gradients accumulate. transform_rows_backward: dW from input rows
  // (before dropout) and their d(loss)/dh, and dx (null data: not formed; required for l == 0)
  // with respect to the rows before dropout. transformed_gradient: room for those dh rows.
  bool transforms_rows(std::size_t l) const;
  int64_t transform_heads(std::size_t l) const { return layers_.at(l)->row_transform_heads(); }
  int64_t transform_width(std::size_t l) const { return layers_.at(l)->row_transform_width(); }
  TransformedRows<T> transform_rows(std::size_t l, MatrixView<const T> x, std::span<const graph::NodeId> row_ids,
                                    core::RngKey dropout_key);
  TransformedRows<T> transformed_rows(std::size_t l, int64_t rows) { return layers_.at(l)->transformed_rows(rows); }
  MatrixView<const T> forward_transformed(std::size_t l, const graph::Block& block,
                                          std::span<const graph::NodeId> row_ids, core::RngKey dropout_key);
  MatrixView<T> backward_transformed(std::size_t l, const graph::Block& block, MatrixView<T> dy);
  MatrixView<T> transformed_gradient(std::size_t l, int64_t rows) { return layers_.at(l)->transformed_gradient(rows); }
  void transform_rows_backward(std::size_t l, MatrixView<const T> x, std::span<const graph::NodeId> row_ids,
                               core::RngKey dropout_key, MatrixView<const T> dh, MatrixView<T> dx);
  // The same in inference (layer-wise inference's chunks, pipeline/layerwise_inference.hpp): the
  // transform of any rows of layer l's input, no dropout; and the rest of layer l (with its
  // activation) on a chunk's block whose sources' transformed rows the caller put into
  // transformed_rows(num_src), as infer_layer with `chunk` computes it.
  TransformedRows<T> infer_transform_rows(std::size_t l, MatrixView<const T> x);
  void infer_transformed(std::size_t l, const graph::Block& block, MatrixView<T> y);

  // The memory governor's arithmetic: the bytes each grow-only array of the model (its own and its
  // layers', see Layer::training_arrays) needs for a forward (with `training`) and backward on
  // blocks of these shapes (one per layer), in a fixed order. The memory a model holds after a
  // step is the sum over arrays of the size class of the largest need so far (arrays never
  // shrink); tests check this against the allocator. inference_arrays: infer_layer(layer) on a
  // block of `shape`, in the same positions (0 for every other array).
  std::vector<std::size_t> training_arrays(std::span<const BlockShape> shapes, bool training) const;
  std::vector<std::size_t> inference_arrays(std::size_t layer, const BlockShape& shape, bool chunk = false) const;
  // Gives every grow-only array of the model and its layers back (freed in the order of the
  // context's stream): the memory governor's trim, when a batch fits the budget on its own but
  // not on top of arrays grown for other shapes. No backward() may follow until a forward().
  void release_arrays();
  // Gives layer l's own arrays back (those inference_arrays(l, ...) counts): after infer_layer(l)
  // on a whole graph, so the next layer's arrays reuse the memory (same size class) instead of
  // adding to it.
  void release_layer_arrays(std::size_t l);

 private:
  static constexpr double kLeakySlope = 0.01;  // torch's default negative slope
  void activate(MatrixView<T> z) const;
  // Layer l's activation runs in its own output store (LayerContext::relu: a ReLU on a layer
  // that fuses it), not in activate().
  bool fuses_activation(std::size_t l) const;
  // Layer l on `block` over its input rows h (ids: their global ids when training): its dropout
  // (on the CPU a first layer's sparse form, not in a chunk), the layer, the activation; returns
  // its outputs (outputs_[l]). The body of forward() and forward_layer().
  MatrixView<T> run_layer(std::size_t l, const graph::Block& block, MatrixView<const T> h,
                          std::span<const graph::NodeId> ids, bool training, core::RngKey dropout_key,
                          uint64_t input_tag, bool chunk);
  // The gradient through layer l: the activation's backward on dz (in place), the layer's, and
  // dropout's on da (not formed when da.data is null). The body of backward() and backward_layer().
  void backprop_layer(std::size_t l, const graph::Block& block, MatrixView<T> dz, MatrixView<T> da);
  void activate_backward(MatrixView<const T> y, MatrixView<T> dz) const;
  // The bytes of inputs_[l], masks_[l] and outputs_[l] after a forward (with `training`) on a block
  // of shape `s`, appended to `bytes`.
  void kept_layer_arrays(std::size_t l, const BlockShape& s, bool training, std::vector<std::size_t>& bytes) const;

  static constexpr std::size_t kNoEmbedding = ~std::size_t{0};
  // Whether layer l's dropout keeps its mask: backward reads it where it forms the layer's input
  // gradient (every layer but the first, and the first too with a learned embedding).
  bool keeps_mask(std::size_t l) const { return l > 0 || has_embedding(); }
  // Whether a whole-batch forward drops layer l's input in place, in the previous layer's outputs,
  // instead of into inputs_[l]: for l > 0 between activated layers whose activation's backward
  // reads only the sign of its output (ReLU, leaky ReLU). A kept value is scaled by 1 / (1 - p) >
  // 1, which keeps its sign (and cannot underflow); a dropped one becomes 0, but its gradient is 0
  // (dropout's backward runs first), so the activation's backward gives bitwise what it gave on the
  // undropped output. Saves one [rows x width] array per hidden layer (issue #38, item 3). Not in a
  // chunk of a layer-wise step, whose input rows are gathered for it.
  bool drops_in_place(std::size_t l) const {
    return l > 0 && !chained_ &&
           (options_.activation == Activation::kRelu || options_.activation == Activation::kLeakyRelu);
  }
  // The batch's input rows of the table, gathered into embedded_ (ids empty: its first x.rows rows).
  MatrixView<const T> embed(MatrixView<const T> x, std::span<const graph::NodeId> row_ids);

  ModelOptions options_;
  const OpContext& ctx_;
  ParamStore<T> params_;
  std::size_t embedding_ = kNoEmbedding;  // the table's parameter index
  DeviceArray<T> embedded_;               // the batch's rows of the table (forward)
  std::span<const graph::NodeId> embedded_ids_;  // their table rows (empty: 0..n-1), for backward
  std::vector<std::unique_ptr<Layer<T>>> layers_;
  // Per layer l: the dropped-out input a_l (unless dropped in place: drops_in_place), its mask
  // (layers l > 0: layer 0 forms no input gradient, so its mask would never be read), the layer
  // output z_l (activated in place).
  std::vector<DeviceArray<T>> inputs_, outputs_;
  std::vector<DeviceArray<uint8_t>> masks_;
  DeviceArray<T> grad_, next_;  // backward's gradient buffers, reused across calls
  bool training_ = false;
  bool first_input_sparse_ = false;
  bool first_input_known_ = false;
  // forward_view's: the views' shared first-layer input and this view's row factors (null outside).
  SharedInput<T>* shared_ = nullptr;
  std::span<const float> view_factors_{};
  uint64_t view_input_tag_ = 0;
  // The first layer of a view (run_layer's body for it): drops x out into the shared input when it
  // holds none yet.
  // Layer l in inference (infer_layer, infer_first_layer): forward(context) runs it into y, then
  // the activation follows unless the layer fused it or is the last.
  template <class Forward>
  void infer_through(std::size_t l, MatrixView<T> y, bool chunk, const Forward& forward);
  void run_first_view(const graph::Block& block, MatrixView<const T> x, std::span<const graph::NodeId> ids, T p,
                      bool dropped, core::RngKey dropout_key, const LayerContext& context, MatrixView<T> z);
  // Layer l's dropped input in CSR form in a (ops/sparse_input.hpp), or nullopt for the dense
  // path. A first layer whose input stays the same (input_tag != 0: a resident batch, or MH-Aug's
  // full batch through forward_view) keeps x's CSR form in the upper half of a from step to step
  // (known_input_) and drops out from it (dropout_forward_known, bitwise the same) instead of
  // scanning x's dense rows each step.
  std::optional<SparseRowsView<T>> drop_sparse(std::size_t l, MatrixView<const T> x,
                                               std::span<const graph::NodeId> ids, core::RngKey key, T p,
                                               MatrixView<T> a, uint64_t input_tag);
  KnownInput known_input_;  // what the upper half of inputs_[0] holds
  // GGNN: layers are the steps of one recurrent state, so no activation and no dropout between
  // them (dropout on the model's input only).
  bool chained_ = false;
};

}  // namespace gnnpipe::models
