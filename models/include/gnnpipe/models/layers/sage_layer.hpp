#pragma once
// GraphSAGE layer, mean aggregator with root weight (PyG's SAGEConv):
//   y[i] = mean_{j -> i} x[j] W_l + b_l + x[i] W_r
// The mean is the block's 1/in-degree weights (BlockNorm::kMean); destinations are the first
// num_dst sources, which gives x[i] for the root term.
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

template <class T>
class SageLayer final : public Layer<T> {
 public:
  // Registers layer<index>.weight_l [in x out], layer<index>.bias [1 x out], layer<index>.weight_r,
  // all initialised U(-1/sqrt(in), 1/sqrt(in)) as PyG's Linear does. Ops run on `ctx`.
  SageLayer(ParamStore<T>& params, int64_t in_dim, int64_t out_dim, int index, const OpContext& ctx = OpContext::host());
  int64_t in_dim() const override { return in_; }
  int64_t out_dim() const override { return out_; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kMean; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool training, bool has_dx, std::vector<std::size_t>& bytes) const override;
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override;
  void release_arrays() override {
    agg_.release(ctx_.stream());
  }

 private:
  ParamStore<T>& params_;
  const OpContext& ctx_;
  int64_t in_, out_;
  std::size_t weight_l_, bias_, weight_r_;
  MatrixView<const T> x_{};
  DeviceArray<T> agg_;  // mean of neighbors [num_dst x in], then its gradient (backward reads it first)
};

}  // namespace gnnpipe::models
