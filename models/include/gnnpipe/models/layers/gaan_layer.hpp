#pragma once
// GaAN layer with the exact semantics of the seed's GaANConv (AugF/optimize-pygs
// neuroc_pygs/models/gaan_layers.py; checked against its outputs in tests/unit/models), which differ from the paper:
//   q = x W_neigh + b [N, H x d_a];  e(j -> i, k) = <q[i, k], q[j, k]> (one projection for both
//   ends, no scaling, no LeakyReLU); alpha = softmax of e over the in-edges of i (self-loop included);
//   v = LeakyReLU_0.1(x W_data + b) [N, H x d_v];  attn[i, k] = sum_j alpha(j -> i, k) v[j, k];
//   gate_max[i] = elementwise max over in-edges j of (x[j] W_gate_max + b) [d_m];
//   gate_mean[i] = mean over in-edges j of x[j];
//   gate[i] = [x[i] | gate_max[i] | gate_mean[i]] W_gate + b [H]   (no sigmoid: the seed's code);
//   out[i] = [x[i] | gate[i, k] * attn[i, k] over heads k] W_out + b.
// Blocks carry exactly one self-loop per destination and no weights (BlockNorm::kSelfLoops, the
// seed's remove-then-add). No activation or dropout inside the layer (the model adds them).
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/layers/layer.hpp"
#include "gnnpipe/models/param_store.hpp"

namespace gnnpipe::models {

struct GaanShape {
  int64_t in_dim = 0;
  int64_t out_dim = 0;
  int64_t heads = 8;
  int64_t key_dim = 8;     // d_a: attention key width per head
  int64_t value_dim = 8;   // d_v: value width per head
  int64_t gate_dim = 64;   // d_m: width of the max-pooled gate features
};

template <class T>
class GaanLayer final : public Layer<T> {
 public:
  // Registers layer<index>.lin_neigh, .lin_data, .lin_gate_max, .lin_gate, .lin_out (each .weight
  // [in x out] and .bias [1 x out], torch.nn.Linear's U(-1/sqrt(in), 1/sqrt(in))). Ops run on `ctx`.
  GaanLayer(ParamStore<T>& params, const GaanShape& shape, int index, const OpContext& ctx = OpContext::host());
  int64_t in_dim() const override { return s_.in_dim; }
  int64_t out_dim() const override { return s_.out_dim; }
  graph::BlockNorm block_norm() const override { return graph::BlockNorm::kSelfLoops; }
  void forward(const graph::Block& block, MatrixView<const T> x, MatrixView<T> y, const LayerContext& context) override;
  void backward(const graph::Block& block, MatrixView<const T> dy, MatrixView<T> dx) override;
  void training_arrays(const BlockShape& s, bool, bool, std::vector<std::size_t>& bytes) const override {
    arrays(s, true, bytes);
  }
  void inference_arrays(const BlockShape& s, std::vector<std::size_t>& bytes) const override { arrays(s, false, bytes); }
  void release_arrays() override;

 private:
  // A Linear's weight and bias indices.
  struct Linear {
    std::size_t weight = 0, bias = 0;
  };
  Linear add_linear(const char* name, int64_t in, int64_t out, int index);
  void arrays(const BlockShape& s, bool backward, std::vector<std::size_t>& bytes) const;
  // Rows [begin, begin + rows) of a parameter matrix (value or gradient): one input slice of a
  // Linear over concatenated inputs.
  static MatrixView<T> rows_of(MatrixView<T> m, int64_t begin, int64_t rows) {
    return {m.data + begin * m.cols, rows, m.cols};
  }
  static MatrixView<const T> rows_of(MatrixView<const T> m, int64_t begin, int64_t rows) {
    return {m.data + begin * m.cols, rows, m.cols};
  }

  ParamStore<T>& params_;
  const OpContext& ctx_;
  GaanShape s_;
  Linear neigh_, data_, gate_max_, gate_lin_, out_;
  MatrixView<const T> x_{};
  // Forward (kept for backward): q [N_src, H d_a], alpha [E, H], v [N_src, H d_v] (after its
  // LeakyReLU), attn [N_dst, H d_v], x W_gate_max + b [N_src, d_m], gate_max [N_dst, d_m] and its
  // arg-max edges, gate_mean [N_dst, in], gate [N_dst, H], the gated heads [N_dst, H d_v].
  DeviceArray<T> q_, alpha_, v_, attn_, gmx_, gmax_;
  DeviceArray<int64_t> argmax_;
  DeviceArray<T> gmean_, gate_, t_;
  // Backward workspaces.
  DeviceArray<T> dt_, dattn_, dgate_, dgmax_, dgmean_, dgmx_, dv_, dalpha_, dq_, dqd_;
};

}  // namespace gnnpipe::models
