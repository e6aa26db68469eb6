#pragma once
// GAT layer (Velickovic et al.; PyG's GATConv), H heads of C channels:
//   h = x W viewed as [N, H, C];  e(j -> i) = LeakyReLU_0.2(<h[j], att_src> + <h[i], att_dst>) per head;
//   alpha = softmax of e over the in-edges of i (then attention dropout when training, keyed by
//   (global id of i, global id of j, head) from LayerContext::row_ids: ops::edge_dropout_forward);
//   out[i] = sum_j alpha(j -> i) h[j], heads concatenated ([N, H*C]) or averaged ([N, C]); + bias.
// Blocks carry self-loops and no weights (BlockNorm::kSelfLoops).
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/layers/layer_input.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

struct GatShape {
  int64_t in_dim = 0;
  int64_t heads = 1;
  int64_t channels = 1;         // per head
  bool concat = true;           // out_dim = heads * channels, else channels (mean over heads)
  double attention_dropout = 0;
  double negative_slope = 0.2;
};

template <class T>
class GatLayer final : public Layer<T> {
 public:
  // Registers layer<index>.weight [in x H*C], .att_src and .att_dst [H x C] (Glorot), .bias (zeros).
  // Ops run on `ctx` (which must outlive the layer).
  GatLayer(ParamStore<T>& params, const GatShape& shape, int index, const OpContext& ctx = OpContext::host());
  int64_t in_dim() const override { return s_.in_dim; }
  int64_t out_dim() const override { return s_.concat ? s_.heads * s_.channels : s_.channels; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kSelfLoops; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  bool takes_linear_input() const override { return true; }
  void forward_linear(const graph::Block& block, LayerInput<T> x, MatrixView<T> y,
                      const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  // The row transform (Layer::row_transform_heads): h = x W and a_src = <h, att_src> per head.
  int64_t row_transform_heads() const override { return s_.heads; }
  int64_t row_transform_width() const override { return s_.heads * s_.channels; }
  TransformedRows<T> transformed_rows(int64_t rows) override;
  TransformedRows<T> transform(MatrixView<const T> x) override;
  void forward_transformed(const graph::Block& block, MatrixView<T> y, const LayerContext& context) override;
  MatrixView<T> backward_transformed(const graph::Block& block, MatrixView<const T> dy) override;
  MatrixView<T> transformed_gradient(int64_t rows) override;
  void transform_backward(MatrixView<const T> x, MatrixView<const T> dh, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool training, bool has_dx, std::vector<std::size_t>& bytes) const override;
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override;
  void release_arrays() override {
    for (DeviceArray<T>* a : {&h_, &e_, &alpha_, &alpha_dropped_, &a_src_, &a_dst_, &heads_out_, &dheads_, &dh_, &dalpha_,
                              &da_src_, &da_dst_}) {
      a->release(ctx_.stream());
    }
    mask_.release(ctx_.stream());
  }

 private:
  ParamStore<T>& params_;
  const OpContext& ctx_;
  GatShape s_;
  std::size_t weight_, att_src_, att_dst_, bias_;
  void forward_input(const graph::Block& block, LayerInput<T> x, MatrixView<T> y, const LayerContext& context);
  TransformedRows<T> transform_input(LayerInput<T> x);
  void attend(const graph::Block& block, MatrixView<T> y, const LayerContext& context);
  MatrixView<T> attend_backward(const graph::Block& block, MatrixView<const T> dy);

  int64_t transformed_ = 0;  // rows of h_ and a_src_ the last transform or transformed_rows() made

  LayerInput<T> x_{};
  bool dropped_ = false;
  // Saved by forward: h [N_src, H*C], edge scores after LeakyReLU [E, H], softmax alpha [E, H],
  // alpha after dropout [E, H] and its mask; workspaces of forward and backward (reused).
  DeviceArray<T> h_, e_, alpha_, alpha_dropped_;
  DeviceArray<uint8_t> mask_;
  DeviceArray<T> a_src_, a_dst_, heads_out_, dheads_, dh_, dalpha_, da_src_, da_dst_;
};

}  // namespace gnnpipe::models
