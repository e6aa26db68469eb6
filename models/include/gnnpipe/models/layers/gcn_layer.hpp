#pragma once
// GCN layer (Kipf & Welling): y = A_hat (x W) + b, with A_hat the block's GCN weights
// (self-loops, deg^-1/2 on both ends: computed once on the graph side). The linear transform
// runs first, so aggregation moves out_dim-wide rows (PyG's GCNConv order).
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
  GcnLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx = OpContext::host());
  int64_t in_dim() const override { return in_; }
  int64_t out_dim() const override { return out_; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kGcn; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  bool takes_sparse_input() const override { return true; }
  void forward_sparse(const graph::Block& block, SparseRowsView<T> x, MatrixView<T> y,
                      const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool training, bool has_dx, std::vector<std::size_t>& bytes) const override;
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override;
  void release_arrays() override {
    h_.release(ctx_.stream()); dh_.release(ctx_.stream());
  }

 private:
  ParamStore<T>& params_;
  const OpContext& ctx_;
  int64_t in_, out_;
  std::size_t weight_, bias_;
  void forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y);

  LayerInput<T> x_{};  // input of the last forward (owned by the caller until backward)
  DeviceArray<T> h_, dh_;    // x W [num_src x out] and its gradient
};

}  // namespace gnnpipe::models
