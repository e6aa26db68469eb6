#pragma once
// One propagation step of a gated graph network (Li et al.; PyG's GatedGraphConv, aggr 'add'):
//   m[i] = sum over edges (j -> i) of h[j] W_l       (plain sum: BlockNorm::kNone, no self-loop)
//   h'[i] = GRUCell(m[i], h[i])                        (torch's r, z, n gates)
// A GGNN of L steps is L of these layers, one block each (a sampled block gives step l the states
// of its sources, as any message-passing layer), with their own W_l and ONE set of GRU weights
// (GruParams) shared by every step, as in PyG, where the same GRUCell serves all steps.
// An input narrower than the hidden width C is padded with zero columns on the right (PyG); the
// seed's GGNN model instead projects the input (x W_in, any width) before the first step and the
// last state (h W_out) after the last: input_projection / output_projection.
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

// The GRU weights every step shares, in our [in x out] layout (x @ W): weight_ih and weight_hh
// [C x 3C], bias_ih and bias_hh [1 x 3C], column blocks r, z, n (torch's row blocks, transposed).
struct GruParams {
  std::size_t weight_ih = 0, weight_hh = 0, bias_ih = 0, bias_hh = 0;
};

struct GgnnShape {
  int64_t in_dim = 0;   // the input width: <= hidden without input_projection (padded), any with it
  int64_t hidden = 0;   // C, the state width
  int64_t out_dim = 0;  // hidden, or any width with output_projection
  bool input_projection = false;   // h0 = x W_in (layer<index>.weight_in [in x C]) first
  bool output_projection = false;  // y = h' W_out (layer<index>.weight_out [C x out]) last
};

template <class T>
class GgnnLayer final : public Layer<T> {
 public:
  // Registers rnn.weight_ih, rnn.weight_hh, rnn.bias_ih, rnn.bias_hh (layer tag 0), all
  // U(-1/sqrt(C), 1/sqrt(C)) as torch's GRUCell.
  static GruParams add_gru(ParamStore<T>& params, int64_t hidden);

  // Registers layer<index>.weight [C x C] (U(-1/sqrt(C), 1/sqrt(C)), PyG's GatedGraphConv) and
  // the projections the shape asks for (Glorot). Throws ConfigError for an input wider than C
  // without input_projection, or an output width other than C without output_projection.
  GgnnLayer(ParamStore<T>& params, const GgnnShape& shape, const GruParams& gru, int index,
            const OpContext& ctx = OpContext::host());
  int64_t in_dim() const override { return s_.in_dim; }
  int64_t out_dim() const override { return s_.out_dim; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kNone; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool, bool, std::vector<std::size_t>& bytes) const override {
    arrays(s, true, bytes);
  }
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override { arrays(s, false, bytes); }
  void release_arrays() override {
    for (DeviceArray<T>* a : {&proj_, &a_, &m_, &gi_, &gh_, &hnew_, &dhnew_, &dgi_, &dgh_, &dm_, &da_, &dhdst_, &dh_}) {
      a->release(ctx_.stream());
    }
  }

 private:
  void arrays(const BlockShape& s, bool backward, std::vector<std::size_t>& bytes) const;
  int64_t state_in() const { return s_.input_projection ? s_.hidden : s_.in_dim; }  // the width of h
  // The first `rows` rows of a [rows' x cols] parameter (value or gradient).
  static MatrixView<T> top(MatrixView<T> m, int64_t rows) { return {m.data, rows, m.cols}; }

  ParamStore<T>& params_;
  const OpContext& ctx_;
  GgnnShape s_;
  GruParams gru_;
  std::size_t weight_, weight_in_ = 0, weight_out_ = 0;
  MatrixView<const T> x_{}, h_{};
  // Forward (kept for backward): the projected input [num_src x C], h W_l [num_src x C], the
  // aggregated messages [num_dst x C], the GRU pre-activations gi, gh [num_dst x 3C], the new
  // state before the output projection [num_dst x C]. Backward workspaces after them.
  DeviceArray<T> proj_, a_, m_, gi_, gh_, hnew_;
  DeviceArray<T> dhnew_, dgi_, dgh_, dm_, da_, dhdst_, dh_;
};

}  // namespace gnnpipe::models
