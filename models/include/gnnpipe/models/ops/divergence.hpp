#pragma once
// MH-Aug's consistency terms (issue #41): KL divergence and entropy between row softmaxes, with
// their gradients in one pass, and the normalised per-node entropy the sampler reads. Every row
// counts (the caller passes views of the counted rows). Softmax is log-sum-exp with the row maximum
// subtracted (stable for any finite logits); per-row values and the sums over columns are in
// double, in column order, and the per-row values are summed in row order, so every result is the
// same for any thread count. T is float or double.
#include <cstdint>
#include <span>
#include <type_traits>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// Returns scale * sum_i weights[i] * KL(p_i || q_i), p_i = softmax(p_logits[i]), q_i =
// softmax(q_logits[i]), KL_i = sum_c p_c (log p_c - log q_c) (from the log-softmax values).
// Gradients, with s_i = scale * weights[i]:
//   dp[i, c] += T(s_i * p_c (log p_c - log q_c - KL_i))   (ACCUMULATES: dp already holds another
//                                                          loss's gradient, e.g. cross-entropy's);
//   dq[i, c]  = T(s_i * (q_c - p_c))                       (overwritten).
// p_logits, q_logits, dp and dq share one shape; weights.size() == rows (required). A row of no
// columns counts 0.
template <class T>
double softmax_kl(ConstView<T> p_logits, ConstView<T> q_logits, std::span<const float> weights,
                  std::type_identity_t<T> scale, MatrixView<T> dp, MatrixView<T> dq);

// Returns scale * sum_i weights[i] * H_i, H_i = -sum_c p_c log p_c, p = softmax(logits[i]);
// dlogits[i, c] = T(-scale * weights[i] * p_c (log p_c + H_i)) (overwritten; same shape as
// logits). weights.size() == rows (required).
template <class T>
double softmax_entropy(ConstView<T> logits, std::span<const float> weights, std::type_identity_t<T> scale,
                       MatrixView<T> dlogits);

// out[ids[r]] = float(H_r / log(cols)) for every row r of logits: the normalised entropy in [0, 1]
// (0 when cols <= 1). ids.size() == logits.rows; ids must be distinct (not checked) and >= 0
// (DataError naming the first bad one); out must hold more than the largest id (the caller's
// guarantee). Only the listed elements of out are written.
template <class T>
void softmax_entropy_scatter(ConstView<T> logits, std::span<const graph::NodeId> ids, float* out);

}  // namespace gnnpipe::models::cpu
