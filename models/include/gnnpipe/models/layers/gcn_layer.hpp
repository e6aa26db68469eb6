#pragma once
// GCN layer (Kipf & Welling): y = A_hat (x W) + b, with A_hat the block's GCN weights
// (self-loops, deg^-1/2 on both ends: computed once on the graph side). The linear transform
// runs first, so aggregation moves out_dim-wide rows (PyG's GCNConv order).
// aggregate_first (a model's first layer with an input that is never dropped out, in <= out):
// y = (A_hat x) W + b instead. With in <= out that aggregates rows no wider, keeps one
// [num_dst x in] array (A_hat x, in h_'s memory) instead of two [num_src x out] ones, and backward
// needs no SpMM (dW = (A_hat x)^T dy; no input gradient is formed). A forward whose
// LayerContext::input_tag matches the last one's reuses A_hat x: a resident full batch aggregates
// its features once per run, not twice per epoch. A chunk of a layer-wise step (LayerContext::chunk)
// aggregates first too, whatever the layer: its sources are many times its destinations, so
// (A_hat x) W transforms num_dst rows where x W would transform every source; its backward then
// forms dx = A_hat^T (dy W^T) when asked. A chunk of layer-wise inference (LayerContext::chunk
// without training) aggregates first as well, a narrowing layer (in > out) included (2026-12-08):
// edges x in + dst x in x out multiply-adds against src x in x out + edges x out, and a chunk's
// sources are its destinations' in-neighbours, often several times as many (Flickr's 500 -> 256
// first layer in chunks of 8,192: evaluation 4x slower transforming first). Only a chunk whose
// sources are barely more than its destinations pays for it, edges x (in - out) more in the
// SpMM; and the chunk's memory bound, [dst x in], does not depend on the block's sources.
// Inference over the whole graph aggregates first where in <= out as well, but in an array of
// x W's size [src x out]: the layers' arrays then share one size class, and the footprint (the
// evaluation's bound) is PyG's order's.
// The bias, and the model's ReLU where it asks (LayerContext::relu), are added in the SpMM's store
// when the layer transforms first (ops::spmm_bias: one pass over y less, two with the ReLU);
// aggregating first, the GEMM writes y and the bias and ReLU follow as separate ops.
// Every gradient a backward forms takes the memory of the
// forward's array it replaces (h_): x W is not read by backward, and A_hat x is read before
// dy W^T is formed (issue #38: no array held longer than backward needs it).
#include <utility>

#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/layers/layer_input.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

template <class T>
class GcnLayer final : public Layer<T> {
 public:
  // Registers layer<index>.weight [in x out] (Glorot) and layer<index>.bias [1 x out] (zeros), as
  // PyG's GCNConv initialises them. Ops run on `ctx` (which must outlive the layer).
  GcnLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx = OpContext::host(),
           bool aggregate_first = false);
  bool aggregate_first() const { return aggregate_first_; }
  bool reused_input() const override { return reused_; }
  int64_t in_dim() const override { return in_; }
  int64_t out_dim() const override { return out_; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kGcn; }
  bool fuses_relu() const override { return true; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  bool takes_linear_input() const override { return true; }
  // forward()'s whole-graph inference aggregates first where in <= out.
  bool infers_linear_input() const override { return !aggregate_first_ && in_ > out_; }
  bool keeps_input_only() const override { return !aggregate_first_; }
  void swap_kept_input(LayerInput<T>& other) override {
    GNNPIPE_CHECK(!aggregated_last_, "GCN layer: the last forward aggregated first, and keeps A_hat x");
    std::swap(x_, other);
  }
  void forward_linear(const graph::Block& block, LayerInput<T> x, MatrixView<T> y,
                      const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool training, bool has_dx, std::vector<std::size_t>& bytes) const override;
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override;
  void chunk_training_arrays(const BlockShape& s, bool has_dx, std::vector<std::size_t>& bytes) const override;
  void chunk_inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override;
  void release_arrays() override {
    h_.release(ctx_.stream());
    aggregated_ = {};
  }

 private:
  ParamStore<T>& params_;
  const OpContext& ctx_;
  int64_t in_, out_;
  std::size_t weight_, bias_;
  void forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y, bool relu);
  void forward_aggregated(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, uint64_t tag, bool relu);

  bool aggregate_first_;
  bool aggregated_last_ = false;  // the last forward aggregated first (aggregate_first_ or a chunk)
  LayerInput<T> x_{};  // input of the last forward (owned by the caller until backward)
  // x W [num_src x out], then its gradient; aggregated: A_hat x [num_dst x in], then dy W^T.
  DeviceArray<T> h_;
  // What h_ holds in aggregate_first mode: the tag, input and block shape it was computed from
  // (tag 0: nothing reusable).
  struct Aggregated {
    uint64_t tag = 0;
    const T* x = nullptr;
    int64_t num_src = 0, num_dst = 0, edges = 0;
    bool operator==(const Aggregated&) const = default;
  } aggregated_;
  bool reused_ = false;
};

}  // namespace gnnpipe::models
