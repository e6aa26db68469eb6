#pragma once
// Launchers of gnnpipe's own CUDA kernels for the model ops (kernels in the .cu files beside this
// header). Internal to gnnpipe::models: only sources under models/cuda/ include it (it pulls in
// cuda_runtime.h). Each launcher queues its work on `stream` and checks the launch
// (GNNPIPE_CUDA_CHECK(cudaGetLastError()) -> CudaError); none synchronises the host. Shapes are
// checked by the callers (cuda_ops.cpp); launchers trust them. Every output element is written
// (overwritten) unless the contract says "accumulates". Launchers with no work (n == 0, no rows)
// queue nothing.
//
// Each is the twin of a CPU op in models/include/gnnpipe/models/ops/ (same arguments, same
// conventions, same edge order); the parity tests in tests/gpu/ compare them. Determinism: no
// atomics on floating-point values; every output element is reduced by one thread (or one warp /
// block in a fixed order), so two runs give bitwise-equal results.
// T is float or double (explicit instantiations in the .cu files).
#include <cuda_runtime.h>

#include <cstdint>

#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::models::cuda {

// The device arrays of a graph::Block (layout of docs/DESIGN.md §2; graph::NodeId is int32_t,
// graph::EdgeOffset int64_t). weights is nullptr for an unweighted block (weight 1).
struct BlockArrays {
  int64_t num_dst = 0;
  int64_t num_src = 0;
  int64_t num_edges = 0;
  const int64_t* offsets = nullptr;    // [num_dst + 1]
  const int32_t* indices = nullptr;    // [E] local source ids
  const float* weights = nullptr;      // [E] or nullptr
  const int64_t* t_offsets = nullptr;  // [num_src + 1]
  const int32_t* t_indices = nullptr;  // [E] local destination ids
  const int64_t* t_edges = nullptr;    // [E] forward edge id of each transposed entry
};

enum class ActivationKind { kRelu, kElu, kLeakyRelu };

// --- sparse-dense products (cpu twins: ops/spmm.hpp) ---------------------------------------------
// y[v, :] = sum over e in [offsets[v], offsets[v+1]) of w_e * x[indices[e], :]. x: num_src x f,
// y: num_dst x f, row-major. Summation in edge order per output element.
template <class T>
void launch_spmm(const BlockArrays& b, const T* x, int64_t f, T* y, cudaStream_t stream);
// launch_spmm with an epilogue in the store: y = sum + bias[c] (bias: f device values), then
// v > 0 ? v : 0 when relu (the bias_add and activation kernels' rounding, bitwise).
template <class T>
void launch_spmm_bias(const BlockArrays& b, const T* x, int64_t f, const T* bias, bool relu, T* y,
                      cudaStream_t stream);
// dx[u, :] = sum over k in [t_offsets[u], t_offsets[u+1]) of w_{t_edges[k]} * dy[t_indices[k], :].
template <class T>
void launch_spmm_transpose(const BlockArrays& b, const T* dy, int64_t f, T* dx, cudaStream_t stream);
// GAT aggregation, H heads, C = f / H channels: y[v, h*C+c] = sum_e alpha[e, h] * x[u, h*C+c].
template <class T>
void launch_spmm_edge_weighted(const BlockArrays& b, const T* alpha, int64_t heads, const T* x, int64_t f, T* y,
                               cudaStream_t stream);
// dx[u, h*C+c] = sum over e = (u -> v) (through the transpose) of alpha[e, h] * dy[v, h*C+c].
template <class T>
void launch_spmm_edge_weighted_backward_x(const BlockArrays& b, const T* alpha, int64_t heads, const T* dy, int64_t f,
                                          T* dx, cudaStream_t stream);
// dalpha[e, h] = sum over c (increasing) of dy[v, h*C+c] * x[u, h*C+c], e = (u -> v).
template <class T>
void launch_spmm_edge_weighted_backward_alpha(const BlockArrays& b, const T* x, const T* dy, int64_t heads, int64_t f,
                                              T* dalpha, cudaStream_t stream);

// --- GAT edge scores (cpu twins: ops/gat.hpp) ---------------------------------------------------
// scores[e, h] = a_src[u, h] + a_dst[v, h].
template <class T>
void launch_sddmm_add(const BlockArrays& b, const T* a_src, const T* a_dst, int64_t heads, T* scores,
                      cudaStream_t stream);
// da_src[u, h] = sum over e out of u (transpose order) of dscores[e, h]; da_dst[v, h] = sum over e into v.
template <class T>
void launch_sddmm_add_backward(const BlockArrays& b, const T* dscores, int64_t heads, T* da_src, T* da_dst,
                               cudaStream_t stream);
// In place: per destination v and head h, softmax over the edges into v (max subtracted).
template <class T>
void launch_edge_softmax(const BlockArrays& b, int64_t heads, T* scores, cudaStream_t stream);
// dscores[e, h] = alpha[e, h] * (dalpha[e, h] - sum over e' into v of alpha[e', h] * dalpha[e', h]).
// dscores may equal dalpha.
template <class T>
void launch_edge_softmax_backward(const BlockArrays& b, int64_t heads, const T* alpha, const T* dalpha, T* dscores,
                                  cudaStream_t stream);
// Attention dropout with the CPU twin's bits (ops/dropout.hpp, cpu::edge_dropout_forward): edge
// e = (u -> v), head h is kept iff p == 0 or the draw at position id(u) * heads + h of the stream
// key.with(id(v)) keeps it (dropout_bits_at, ops/dropout_mask.hpp), id(n) = row_ids ?
// row_ids[n] : n (the global ids of the block's sources, in device memory); the mask is that of an
// [E x heads] matrix (dropout_mask_bytes(E, heads) bytes, bit layout of dropout_mask.hpp);
// y = kept ? alpha * (1 / (1 - p)) : 0. y may equal alpha.
template <class T>
void launch_edge_dropout_forward(const BlockArrays& b, const int32_t* row_ids, core::RngKey key, T p, const T* alpha,
                                 int64_t heads, T* y, uint8_t* mask, cudaStream_t stream);
// a[n, h] = sum over c (increasing) of m[n, h*C+c] * att[h, c] for n < rows; m has heads*channels columns.
template <class T>
void launch_head_dot(const T* m, int64_t rows, const T* att, int64_t heads, int64_t channels, T* a,
                     cudaStream_t stream);
// Accumulates: dm[n, h*C+c] += da[n, h] * att[h, c] for n < rows.
template <class T>
void launch_head_dot_backward_m(const T* da, int64_t rows, const T* att, int64_t heads, int64_t channels, T* dm,
                                cudaStream_t stream);
// Accumulates: datt[h, c] += sum over n < rows of da[n, h] * m[n, h*C+c], summed in fixed blocks of
// 256 rows whose partials are added in block order (deterministic; equal to the CPU's sequential
// sum up to rounding).
template <class T>
void launch_head_dot_backward_att(const T* m, const T* da, int64_t rows, int64_t heads, int64_t channels, T* datt,
                                  cudaStream_t stream);
// y[v, c] = (sum over h (increasing) of x[v, h*C+c]) * (1 / heads), as the CPU twin;
// x: rows x heads*channels, y: rows x channels.
template <class T>
void launch_head_mean(const T* x, int64_t rows, int64_t heads, int64_t channels, T* y, cudaStream_t stream);
// dx[v, h*C+c] = dy[v, c] * (1 / heads).
template <class T>
void launch_head_mean_backward(const T* dy, int64_t rows, int64_t heads, int64_t channels, T* dx, cudaStream_t stream);

// --- GGNN and GaAN (cpu twins: ops/gated.hpp) --------------------------------------------------
// GRU cell of width c over rows: h_new = (1 - z) n + z h from gi, gh (rows x 3c, blocks r, z, n);
// h is rows x h_cols (h_cols <= c, missing columns zero).
template <class T>
void launch_gru_cell(const T* gi, const T* gh, const T* h, int64_t h_cols, int64_t rows, int64_t c, T* h_new,
                     cudaStream_t stream);
// Its backward: dgi, dgh (rows x 3c) and the direct dh = z * dh_new (rows x h_cols), overwritten.
template <class T>
void launch_gru_cell_backward(const T* gi, const T* gh, const T* h, int64_t h_cols, const T* dh_new, int64_t rows,
                              int64_t c, T* dgi, T* dgh, T* dh, cudaStream_t stream);
// y[v, c] = max over in-edges (first on ties, its edge id in argmax; 0 and -1 without edges).
template <class T>
void launch_segment_max(const BlockArrays& b, const T* x, int64_t f, T* y, int64_t* argmax, cudaStream_t stream);
// dx[u, c] = sum over transposed entries k of u with argmax[v, c] == t_edges[k] of dy[v, c].
template <class T>
void launch_segment_max_backward(const BlockArrays& b, const int64_t* argmax, const T* dy, int64_t f, T* dx,
                                 cudaStream_t stream);
// y[v, :] = (sum over in-edges in order of x[u, :]) * (1 / in-degree); weights ignored.
template <class T>
void launch_spmm_mean(const BlockArrays& b, const T* x, int64_t f, T* y, cudaStream_t stream);
// dx[u, :] = sum over transposed entries (in order) of (1 / in-degree(v)) * dy[v, :].
template <class T>
void launch_spmm_mean_backward(const BlockArrays& b, const T* dy, int64_t f, T* dx, cudaStream_t stream);
// y[n, h*C+c] = gate[n, h] * x[n, h*C+c].
template <class T>
void launch_head_scale(const T* gate, const T* x, int64_t rows, int64_t heads, int64_t channels, T* y,
                       cudaStream_t stream);
// dx[n, h*C+c] = gate[n, h] * dy[n, h*C+c]; dgate[n, h] = sum over c (increasing) of dy * x.
template <class T>
void launch_head_scale_backward(const T* gate, const T* x, const T* dy, int64_t rows, int64_t heads, int64_t channels,
                                T* dx, T* dgate, cudaStream_t stream);
// y[i] += a * x[i] over n elements.
template <class T>
void launch_axpy(T a, const T* x, T* y, int64_t n, cudaStream_t stream);

// --- elementwise (cpu twins: ops/elementwise.hpp, ops/dropout.hpp) -------------------------------
// dst[i] = float(src[i]): IEEE half bits, or bfloat16 bits when `bfloat16` (exact).
void launch_widen_16bit(const uint16_t* src, bool bfloat16, int64_t n, float* dst, cudaStream_t stream);
// out[out_rows[i], :] = src[src_rows[i], :] for i < count; a null list is 0, 1, ... (rows of
// `cols`): one warp per row.
template <class T>
void launch_copy_rows(const T* src, int64_t cols, const int32_t* src_rows, T* out, const int32_t* out_rows, int64_t count,
                      cudaStream_t stream);
// out[out_rows[i], :] += src[i, :] for i < rows (distinct out_rows; null: i): one warp per row.
template <class T>
void launch_add_rows(const T* src, int64_t rows, int64_t cols, T* out, const int32_t* out_rows, cudaStream_t stream);
// y[r, c] += bias[c] (in place), y: rows x cols.
template <class T>
void launch_bias_add(T* y, int64_t rows, int64_t cols, const T* bias, cudaStream_t stream);
// Accumulates: dbias[c] += sum over r of dy[r, c]. Sums fixed blocks of 256 rows, then adds the
// block sums in block order (the CPU twin's order), one thread per column per block.
template <class T>
void launch_bias_grad_accumulate(const T* dy, int64_t rows, int64_t cols, T* dbias, T* workspace,
                                 std::size_t workspace_bytes, cudaStream_t stream);
// y[i] = act(x[i]) over n elements (y may equal x); param = elu alpha or leaky slope.
template <class T>
void launch_activation(ActivationKind kind, const T* x, T* y, int64_t n, T param, cudaStream_t stream);
// dx[i] = act'(y[i]) * dy[i] from the forward output y (dx may equal dy): relu: y > 0 ? dy : 0;
// elu: y > 0 ? dy : dy * (y + alpha); leaky: y > 0 ? dy : slope * dy.
template <class T>
void launch_activation_backward(ActivationKind kind, const T* y, const T* dy, T* dx, int64_t n, T param,
                                cudaStream_t stream);
// Inverted dropout with the CPU twin's bits over x [rows x cols]: element (r, c) is kept iff
// p == 0 or the draw at position id(r) * cols + c of the key's stream keeps it (dropout_bits_at,
// ops/dropout_mask.hpp), id(r) = row_ids ? row_ids[r] : r (global node ids in
// device memory, or nullptr for the identity numbering); the mask gets one bit per element
// (dropout_mask_bytes(rows, cols) bytes, layout of dropout_mask.hpp; nullptr: not written);
// y = p == 0 ? x : (kept ? x * (1 / (1 - p)) : 0). y may equal x.
template <class T>
void launch_dropout_forward(core::RngKey key, T p, const T* x, const int32_t* row_ids, int64_t rows, int64_t cols, T* y,
                            uint8_t* mask, cudaStream_t stream);
// dx = bit ? dy * (1 / (1 - p)) : 0 over [rows x cols], the bits those of the forward's mask. dx
// may equal dy.
template <class T>
void launch_dropout_backward(const uint8_t* mask, T p, const T* dy, T* dx, int64_t rows, int64_t cols,
                             cudaStream_t stream);
// x[i] *= s over n elements.
template <class T>
void launch_scale(T* x, int64_t n, T s, cudaStream_t stream);

// --- losses (cpu twins: ops/loss.hpp) -------------------------------------------------------------
// Softmax cross-entropy over the listed rows, as the CPU twin: for k < num_rows, r = rows[k],
// w_k = weights ? weights[k] : 1 / num_rows: dlogits[r, :] = w_k * (softmax(logits[r]) -
// onehot(labels[r])), rows not listed 0 (the launcher zeroes dlogits first); the row losses
// logsumexp(logits[r]) - logits[r, labels[r]] (in double) go to the scratch row_loss (num_rows
// doubles) and *loss = their w-weighted sum, reduced by one block in a fixed tree (deterministic;
// equal to the CPU's sequential sum up to rounding). logits/dlogits: n x classes. num_rows == 0
// gives *loss = 0 and zero gradients. A label outside [0, classes) gives a NaN loss (the device
// cannot throw; the sampler's labels are checked on the host).
template <class T>
void launch_log_softmax_nll(const T* logits, int64_t n, int64_t classes, const int32_t* labels, const int32_t* rows,
                            int64_t num_rows, const float* weights, T* dlogits, double* row_loss, double* loss,
                            cudaStream_t stream);
// Binary cross-entropy with logits over the listed rows, mean over num_rows * classes:
// per element max(x, 0) - x t + log1p(exp(-|x|)); dlogits = (sigmoid(x) - t) / (num_rows * classes)
// on listed rows, 0 elsewhere. row_loss: scratch of num_rows doubles (each the sum of its row, in
// column order); *loss = (sum over k in order of row_loss[k]) / (num_rows * classes). With
// weights (num_rows floats), row k's scale is weights[k] / classes instead: dlogits and row_loss[k]
// are scaled by it and *loss is the plain ordered sum (the CPU twin's weighted form).
template <class T>
void launch_bce_with_logits(const T* logits, int64_t n, int64_t classes, const uint8_t* targets, const int32_t* rows,
                            int64_t num_rows, const float* weights, T* dlogits, double* row_loss, double* loss,
                            cudaStream_t stream);

// *out = (sum of values[0, n)) * scale in a fixed order (one block: thread t sums t, t + 256, ...
// in order, then a fixed-shape tree; the result depends only on n): the losses' total over their
// row values (loss_kernels.cu), shared by the divergence terms. n == 0 gives 0.
void launch_ordered_total(const double* values, int64_t n, double scale, double* out, cudaStream_t stream);

// --- MH-Aug's consistency terms (cpu twins: ops/divergence.hpp; divergence_kernels.cu) -----------
// One warp per row, as log_softmax_nll: the row maximum in T, then every sum over the row's columns
// in double, in column order through shuffles (the CPU twin's order); the row values go to the
// scratch row_value (rows doubles) and *loss = scale * (their sum by launch_ordered_total).
// rows == 0 or cols == 0 gives *loss = 0 and writes no gradient.
// KL: row_value[i] = w_i KL_i, w_i = weights[i] (rows floats); with s_i = scale w_i,
// dp[i, c] += T(s_i p_c (log p_c - log q_c - KL_i)) (accumulates), dq[i, c] = T(s_i (q_c - p_c)).
// p_logits, q_logits, dp, dq: rows x cols.
template <class T>
void launch_softmax_kl(const T* p_logits, const T* q_logits, int64_t rows, int64_t cols, const float* weights, T scale,
                       T* dp, T* dq, double* row_value, double* loss, cudaStream_t stream);
// Entropy: row_value[i] = w_i H_i, H_i = -sum_c p_c log p_c; dlogits[i, c] = T(-s_i p_c (log p_c +
// H_i)) (overwritten).
template <class T>
void launch_softmax_entropy(const T* logits, int64_t rows, int64_t cols, const float* weights, T scale, T* dlogits,
                            double* row_value, double* loss, cudaStream_t stream);
// out[ids[r]] = float(H_r / log(cols)) for r < rows (0 when cols <= 1; log(cols) taken on the host,
// as the CPU twin); ids: rows distinct node ids in device memory, a negative one skipped (the CPU
// twin throws). Only the listed elements of out are written.
template <class T>
void launch_softmax_entropy_scatter(const T* logits, int64_t rows, int64_t cols, const int32_t* ids, float* out,
                                    cudaStream_t stream);
// y[r, c] = x[r, c] * T(factors[r]) over rows x cols (cpu twin: ops/elementwise.hpp); y may equal x.
template <class T>
void launch_scale_rows(const T* x, int64_t rows, int64_t cols, const float* factors, T* y, cudaStream_t stream);
// y[r, c] += x[r, c] * T(factors[r]), the product rounded before the sum (cpu twin: ops/elementwise.hpp).
template <class T>
void launch_add_scaled_rows(const T* x, int64_t rows, int64_t cols, const float* factors, T* y, cudaStream_t stream);

// --- optimizers (cpu twins: adam.cpp, optimizer.cpp) ----------------------------------------------
// Adam, element i < n: g = grad[i] + decay[i] * w[i]; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// w -= step_size * m / (sqrt(v) / sqrt_c2 + eps).
template <class T>
void launch_adam(T* w, const T* grad, T* m, T* v, const T* decay, int64_t n, T b1, T b2, T step_size, T sqrt_c2, T eps,
                 cudaStream_t stream);
// SGD with momentum: g = grad[i] + decay[i] * w[i]; vel = first ? g : momentum * vel + g;
// w -= lr * (momentum > 0 ? vel : g).
template <class T>
void launch_sgd(T* w, const T* grad, T* velocity, const T* decay, int64_t n, T lr, T momentum, bool first,
                cudaStream_t stream);

// --- utilities --------------------------------------------------------------------------------------
// dst[i] = T(src[i]) over n elements (float features into a double model).
template <class T>
void launch_convert_from_float(const float* src, T* dst, int64_t n, cudaStream_t stream);

}  // namespace gnnpipe::models::cuda
