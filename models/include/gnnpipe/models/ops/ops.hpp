#pragma once
// The model ops on either backend: each function runs its CPU twin (models::cpu, the other headers
// of this folder) on a CPU context and its CUDA twin (models/cuda/) on a CUDA context, queued on
// the context's stream. Layers, the model and the optimizers call only these, so one model code
// path trains on both backends.
// Contracts are those of the CPU twins (see their headers), with these differences on CUDA:
//  - every view and array lives in the context's memory (device memory on CUDA);
//  - nothing synchronises the host: a loss is written to `loss` in the context's memory, never
//    returned; row lists are not validated on the device (the sampler built them; the CPU twin
//    checks them on the host);
//  - results match the CPU twin up to floating-point reassociation (per-op bounds in
//    tests/gpu/test_ops_gpu.cpp), and two runs are bitwise equal (no floating-point atomics).
// T is float or double.
#include <cstdint>
#include <optional>
#include <span>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/model_options.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/dropout_mask.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::models::ops {

// c = alpha op(a) op(b) + beta c (cpu::gemm; cuBLAS on CUDA, TF32 only when the context allows it).
template <class T>
void gemm(const OpContext& ctx, bool trans_a, bool trans_b, std::type_identity_t<T> alpha, ConstView<T> a,
          ConstView<T> b, std::type_identity_t<T> beta, MatrixView<T> c);

// Aggregation over a block (cpu::spmm and friends); on CUDA the block's arrays are device pointers.
template <class T>
void spmm(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y);
template <class T>
void spmm_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void spmm_edge_weighted(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> x,
                        MatrixView<T> y);
template <class T>
void spmm_edge_weighted_backward_x(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx);
template <class T>
void spmm_edge_weighted_backward_alpha(const OpContext& ctx, const graph::Block& block, ConstView<T> x,
                                       ConstView<T> dy, MatrixView<T> dalpha);

// GAT edge scores (cpu twins in gat.hpp).
template <class T>
void sddmm_add(const OpContext& ctx, const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst,
               MatrixView<T> scores);
template <class T>
void sddmm_add_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src,
                        MatrixView<T> da_dst);
template <class T>
void edge_softmax(const OpContext& ctx, const graph::Block& block, MatrixView<T> scores_to_alpha);
template <class T>
void edge_softmax_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha,
                           MatrixView<T> dscores);
// Per-head attention logits: a[n, h] = <m[n, h*C .. h*C+C), att[h, :]> for the first a.rows rows
// of m [>= a.rows x H*C]; att: H x C; a: rows x H (overwritten).
template <class T>
void head_dot(const OpContext& ctx, ConstView<T> m, ConstView<T> att, MatrixView<T> a);
// Its backward, accumulating: dm[n, h*C+c] += da[n, h] att[h, c] and datt[h, c] += sum_n da[n, h] m[n, h*C+c]
// over the first da.rows rows of m and dm.
template <class T>
void head_dot_backward(const OpContext& ctx, ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm,
                       MatrixView<T> datt);
// Mean over heads: y[v, c] = mean over h of x[v, h*C+c]; x: rows x H*C, y: rows x C. Backward:
// dx[v, h*C+c] = dy[v, c] / H (overwritten).
template <class T>
void head_mean(const OpContext& ctx, ConstView<T> x, MatrixView<T> y);
template <class T>
void head_mean_backward(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dx);

// GGNN and GaAN pieces (cpu twins in gated.hpp): a GRU cell from its pre-activations and its
// backward; max (with arg-max edges) and mean over each destination's in-edges, ignoring the
// block's weights; per-head scaling; y += a x.
template <class T>
void gru_cell(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new);
template <class T>
void gru_cell_backward(const OpContext& ctx, ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new,
                       MatrixView<T> dgi, MatrixView<T> dgh, MatrixView<T> dh);
template <class T>
void segment_max(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y,
                 MatrixView<int64_t> argmax);
template <class T>
void segment_max_backward(const OpContext& ctx, const graph::Block& block, MatrixView<const int64_t> argmax,
                          ConstView<T> dy, MatrixView<T> dx);
template <class T>
void spmm_mean(const OpContext& ctx, const graph::Block& block, ConstView<T> x, MatrixView<T> y);
template <class T>
void spmm_mean_backward(const OpContext& ctx, const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);
template <class T>
void head_scale(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, MatrixView<T> y);
template <class T>
void head_scale_backward(const OpContext& ctx, ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx,
                         MatrixView<T> dgate);
template <class T>
void axpy(const OpContext& ctx, std::type_identity_t<T> a, ConstView<T> x, MatrixView<T> y);

// Elementwise (cpu twins in elementwise.hpp and dropout.hpp).
template <class T>
void bias_add(const OpContext& ctx, MatrixView<T> y, ConstView<T> bias);
// dbias += column sums of dy (accumulates: a split batch runs several backwards per step).
template <class T>
void bias_grad_accumulate(const OpContext& ctx, ConstView<T> dy, MatrixView<T> dbias);
// In place (y may be x): the activation and its backward from the forward output.
template <class T>
void activation(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> x, MatrixView<T> y);
template <class T>
void activation_backward(const OpContext& ctx, Activation kind, std::type_identity_t<T> param, ConstView<T> y,
                         ConstView<T> dy, MatrixView<T> dx);
// LeakyReLU with an explicit slope (GAT's scores).
template <class T>
void leaky_relu(const OpContext& ctx, std::type_identity_t<T> slope, ConstView<T> x, MatrixView<T> y);
template <class T>
void leaky_relu_backward(const OpContext& ctx, std::type_identity_t<T> slope, ConstView<T> y, ConstView<T> dy,
                         MatrixView<T> dx);
// Dropout keyed by global node ids (cpu twins in dropout.hpp). row_ids: the global id of each row
// of x (x.rows entries), or empty for the identity numbering (row r is node r); mask: one bit per
// element, dropout_mask_bytes(x.rows, x.cols) bytes (layout in dropout_mask.hpp), or nullptr when
// no backward reads it (y is the same; the CPU then skips the draw for groups of zero inputs). Both
// in the context's memory; the CUDA kernel reads the ids on the device.
template <class T>
void dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, uint8_t* mask);
// GAT attention dropout over alpha [E x H], keyed by (global destination, global source, head).
// row_ids: the global ids of the block's sources (num_src entries) or empty; mask:
// dropout_mask_bytes(E, H) bytes.
template <class T>
void edge_dropout_forward(const OpContext& ctx, core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y, uint8_t* mask);
// The backward of both (elementwise, from the mask of dropout_mask_bytes(dy.rows, dy.cols) bytes).
template <class T>
void dropout_backward(const OpContext& ctx, const uint8_t* mask, std::type_identity_t<T> p, ConstView<T> dy,
                      MatrixView<T> dx);
// A first layer's sparse input (cpu twins in sparse_input.hpp): dropout_forward without a mask,
// written in CSR form into `buffer`, the memory of the dense dropped copy (x's shape). nullopt, and
// the caller runs dropout_forward, when some row of x is more than an eighth non-zero, when the
// context's options turn the form off (OpOptions::sparse_input), and always on CUDA (the device
// keeps the dense path: its GEMMs are not bound by the zeros).
template <class T>
std::optional<SparseRowsView<T>> dropout_forward_sparse(const OpContext& ctx, core::RngKey key,
                                                        std::type_identity_t<T> p, ConstView<T> x,
                                                        std::span<const graph::NodeId> row_ids, MatrixView<T> buffer);
// c = a b and c += a^T b for a sparse a (CPU contexts only: the form exists only there).
template <class T>
void csr_gemm(const OpContext& ctx, SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c);
template <class T>
void csr_gemm_tn(const OpContext& ctx, SparseRowsView<T> a, ConstView<T> b, MatrixView<T> c);

// Losses (cpu twins in loss.hpp). labels has logits.rows entries; rows and weights (optional, empty
// for the mean) list the counted rows. The loss goes to *loss (one double in the context's memory);
// row_scratch must hold rows.size() doubles in the context's memory (CUDA's fixed-order reduction;
// unused on the CPU, may be null there).
template <class T>
void log_softmax_nll(const OpContext& ctx, ConstView<T> logits, std::span<const int32_t> labels,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss);
template <class T>
void bce_with_logits(const OpContext& ctx, ConstView<T> logits, MatrixView<const uint8_t> targets,
                     std::span<const int32_t> rows, std::span<const float> weights, MatrixView<T> dlogits,
                     double* row_scratch, double* loss);

// Optimizer updates over n elements in the context's memory (w, grad, state, per-element decay).
// Adam (torch.optim.Adam): g = grad + decay w; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// w -= step_size m / (sqrt(v) / sqrt_c2 + eps), with the bias corrections folded into step_size
// and sqrt_c2 by the caller.
template <class T>
struct AdamUpdate {
  T b1, b2, step_size, sqrt_c2, eps;
};
template <class T>
void adam_update(const OpContext& ctx, const AdamUpdate<T>& u, T* w, const T* grad, T* m, T* v, const T* decay,
                 int64_t n);
// SGD with momentum (torch.optim.SGD): g = grad + decay w; vel = first ? g : momentum vel + g;
// w -= lr (momentum > 0 ? vel : g).
template <class T>
void sgd_update(const OpContext& ctx, T lr, T momentum, bool first, T* w, const T* grad, T* velocity, const T* decay,
                int64_t n);

// out[out_rows[i], :] = src[src_rows[i], :] for i < count, where an empty row list stands for
// 0, 1, ... (count = the non-empty lists' size, which must agree, or out.rows when both are
// empty); src.cols = out.cols. The device-side feature gather (device-resident features: src_rows
// are a batch's node ids) and the feature cache's assembly (cached rows to their positions, the
// missed rows the batch carried to theirs). Lists in the context's memory; the CPU twin checks
// every row against src.rows / out.rows (DataError naming the first bad one), CUDA does not.
template <class T>
void copy_rows(const OpContext& ctx, ConstView<T> src, std::span<const int32_t> src_rows, MatrixView<T> out,
               std::span<const int32_t> out_rows);

// out[out_rows[i], :] += src[i, :] for i < src.rows (an empty list: 0, 1, ...); src.cols =
// out.cols. The rows of out_rows must be distinct (a batch's node ids: each row is written by one
// thread, no atomics, so the result is deterministic). Learned embeddings' backward: the input
// rows' gradients into the table's. Checks as copy_rows.
template <class T>
void add_rows(const OpContext& ctx, ConstView<T> src, MatrixView<T> out, std::span<const int32_t> out_rows);

// dst[i] = float(src[i]) for i < n, src being IEEE half (bfloat16 false) or bfloat16 bits: exact
// (every 16-bit value is a float). The first layer's input of fp16/bf16 features, which travel and
// live on the device in 16 bits. Both in the context's memory.
void widen_16bit(const OpContext& ctx, const uint16_t* src, bool bfloat16, int64_t n, float* dst);

// Utilities: fill with zeros; copy between equally shaped views (in the context's memory).
template <class T>
void zero(const OpContext& ctx, MatrixView<T> x);
template <class T>
void copy(const OpContext& ctx, ConstView<T> src, MatrixView<T> dst);

}  // namespace gnnpipe::models::ops
