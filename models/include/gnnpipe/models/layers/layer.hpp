#pragma once
// Layer<T>: one graph layer with an explicit backward (no general autograd). A layer registers its
// parameters in a ParamStore at construction, keeps what its backward needs from the last
// forward, and adds (never overwrites) its parameter gradients. GGNN and GaAN fit the same
// interface: a layer sees the block, its input rows (num_src) and writes its output rows (num_dst).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/models/layers/layer_input.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models {

// The sizes of one block, as the memory governor sees them (memory::BatchShape per layer).
struct BlockShape {
  int64_t num_dst = 0, num_src = 0, edges = 0;
};

// Per-call state of a forward: whether this is training (dropout inside the layer, e.g. GAT's
// attention dropout), the Philox key that layer-internal randomness must derive from, and the
// global node ids of the block's sources (`row_ids`, num_src entries in the memory of the layer's
// op context; destinations are the first num_dst). Randomness is keyed by those ids, never by local
// positions, so a node draws the same bits in any batch or micro-batch (ops/dropout.hpp). Empty
// ids mean local ids are global (the identity numbering); layers must not read them when not
// training.
struct LayerContext {
  bool training = false;
  core::RngKey key{};
  std::span<const graph::NodeId> row_ids{};
  // Nonzero: the input and block hold what they held in the last forward with this tag (the
  // layer may reuse what it derived from them; GnnModel::forward's input_tag).
  uint64_t input_tag = 0;
  // A chunk of a layer-wise step (GnnModel::forward_layer) or of layer-wise inference
  // (GnnModel::infer_layer with `chunk`): the block's sources are most of the rows it reads,
  // several times its destinations, so a layer that can aggregate before it transforms does
  // (GcnLayer: always in training, where in <= out in inference), rather than transform every source.
  bool chunk = false;
  // The model's ReLU on this layer's output, for the layer to apply in its output's store (set only
  // where fuses_relu(); the model then does not run it: GnnModel::run_layer).
  bool relu = false;
};

// A row transform's outputs (Layer::row_transform_heads): per source row its transformed features
// h [rows x H*C] and its per-head attention term as a source a [rows x H].
template <class T>
struct TransformedRows {
  MatrixView<T> h;
  MatrixView<T> a;
};

template <class T>
class Layer {
 public:
  virtual ~Layer() = default;
  virtual int64_t in_dim() const = 0;
  virtual int64_t out_dim() const = 0;
  // The edge weighting this layer expects its blocks to carry.
  virtual graph::BlockNorm block_norm() const = 0;
  // Applies LayerContext::relu itself (in the pass that writes y: GcnLayer's SpMM store).
  virtual bool fuses_relu() const { return false; }
  // x [block.num_src x in_dim] -> y [block.num_dst x out_dim].
  virtual void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y,
                       const LayerContext& context) = 0;
  // Gradient of the last forward: dy [num_dst x out_dim] -> dx [num_src x in_dim] (not computed
  // when dx.data is null, e.g. for the first layer); parameter gradients are accumulated.
  virtual void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) = 0;

  // Whether forward_linear is implemented: layers whose input is read only through x W and x^T dh
  // (LayerInput). The model then gives a first layer its dropped sparse features in CSR form, and
  // several views of one batch share the first layer's products (SharedInput).
  virtual bool takes_linear_input() const { return false; }
  // Whether a whole-graph inference forward (not a chunk) reads its input only through x W, so
  // forward_linear may take it instead of forward (GnnModel::infer_first_layer): the layers that
  // take a linear input, but for those that aggregate first there.
  virtual bool infers_linear_input() const { return takes_linear_input(); }
  // Whether a whole-batch training forward (not a chunk) keeps nothing for its backward but the
  // input it was given (no array of the layer's own is read by that backward): the model can then
  // hold what one forward kept aside while another runs (GnnModel::swap_kept). GCN transforming
  // first: its backward reads its input and the block, and x W's memory is scratch there.
  virtual bool keeps_input_only() const { return false; }
  // Exchanges the input the last forward kept with `other` (keeps_input_only() layers).
  virtual void swap_kept_input(LayerInput<T>& other) {
    (void)other;
    GNNPIPE_THROW(Error, "this layer keeps more than its input for its backward");
  }
  // Whether the last forward reused what an earlier one with the same LayerContext::input_tag
  // derived from the input (GcnLayer aggregating first), instead of computing it.
  virtual bool reused_input() const { return false; }
  // forward of an input read through LayerInput (x.rows() == block.num_src, x.cols() == in_dim),
  // transforming before it aggregates; a backward that follows a sparse or shared input forms no
  // input gradient (dx.data must be null): only a first layer's input is either.
  virtual void forward_linear(const graph::Block& block, LayerInput<T> x, MatrixView<T> y, const LayerContext& context) {
    (void)block, (void)x, (void)y, (void)context;
    GNNPIPE_THROW(Error, "this layer takes no linear input");
  }

  // Transform-once layer-wise training (GnnModel::transform_rows): a layer whose forward first
  // transforms every source row on its own (h = x W and a per-head term of h) and only then reads
  // the block (GAT) returns its head count here (0: none), and runs in two halves: transform() on
  // any rows of the layer's input, whose outputs the caller keeps for the whole layer, and
  // forward_transformed() on a block whose sources' transformed rows the caller put into
  // transformed_rows(num_src). backward_transformed() returns d(loss)/dh of the sources (the
  // per-head terms' gradients folded in) in the layer's memory, valid until the next call, and
  // transform_backward() forms dW and dx from input rows and those gradients. The halves compute,
  // row for row, what forward()/backward() compute.
  virtual int64_t row_transform_heads() const { return 0; }
  virtual int64_t row_transform_width() const { return 0; }  // h's columns
  virtual TransformedRows<T> transformed_rows(int64_t rows) {
    (void)rows;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  virtual TransformedRows<T> transform(MatrixView<const T> x) {
    (void)x;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  virtual void forward_transformed(const graph::Block& block, MatrixView<T> y, const LayerContext& context) {
    (void)block, (void)y, (void)context;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  virtual MatrixView<T> backward_transformed(const graph::Block& block, MatrixView<const T> dy) {
    (void)block, (void)dy;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  // Room for transform_backward's dh rows (the layer's, valid until the next call).
  virtual MatrixView<T> transformed_gradient(int64_t rows) {
    (void)rows;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  virtual void transform_backward(MatrixView<const T> x, MatrixView<const T> dh, MatrixView<T> dx) {
    (void)x, (void)dh, (void)dx;
    GNNPIPE_THROW(Error, "this layer has no row transform");
  }
  // The memory governor's arithmetic: the bytes each of the layer's grow-only arrays
  // (DeviceArray members) needs for a block of shape `s`, appended to `bytes` in a fixed order
  // with 0 for arrays the call leaves alone, so positions mean the same array in every call.
  // Training: a forward with `training` and a backward (computing dx when `has_dx`). Inference:
  // forward without training (infer_layer). These mirror forward/backward exactly; tests check
  // them against the allocator.
  virtual void training_arrays(const BlockShape& s, bool training, bool has_dx, std::vector<std::size_t>& bytes) const = 0;
  virtual void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const = 0;
  // training_arrays of a forward with LayerContext::chunk set (and training) and its backward.
  virtual void chunk_training_arrays(const BlockShape& s, bool has_dx, std::vector<std::size_t>& bytes) const {
    training_arrays(s, true, has_dx, bytes);
  }
  // inference_arrays of a forward with LayerContext::chunk set, without training (a chunk of
  // layer-wise inference: GnnModel::infer_layer with `chunk`).
  virtual void chunk_inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const {
    inference_arrays(s, bytes);
  }
  // Gives every grow-only array back (capacity 0, freed in the order of the layer's stream): what
  // the layer kept from the last forward is gone, so no backward may follow until a forward.
  virtual void release_arrays() = 0;
};

}  // namespace gnnpipe::models
