#pragma once
// Losses with their gradients in one pass. Only the rows listed in `rows` count (the training
// nodes of a batch); the gradient of every other row is zero. `rows` must hold distinct indices in
// [0, logits.rows) (checked). Per-row losses are summed in the order of `rows`, so the value is
// the same for any thread count. T is float or double; accumulation is in double.
#include <cstdint>
#include <span>

#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// Multi-class: the mean over `rows` of -log softmax(logits[r])[labels[r]] (log-sum-exp with the
// row maximum subtracted). dlogits (same shape as logits, overwritten) = (softmax - onehot) / |rows|
// on counted rows. labels.size() must be logits.rows and every counted label in [0, classes).
// Returns 0 (and zero gradients) when `rows` is empty.
template <class T>
T log_softmax_nll(ConstView<T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows,
                  MatrixView<T> dlogits);

// Weighted: sum_k weights[k] * -log softmax(logits[rows[k]])[label] with dlogits scaled by weights[k]
// (GraphSAINT's loss normalisation). weights.size() must equal rows.size(); empty weights give the
// mean above.
template <class T>
T log_softmax_nll(ConstView<T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows,
                  std::span<const float> weights, MatrixView<T> dlogits);

// Multi-label: the mean over rows x classes of the binary cross-entropy of sigmoid(logit) against
// targets (0 or 1), computed as max(x, 0) - x * t + log1p(exp(-|x|)) (stable for any x).
// dlogits = (sigmoid(x) - t) / (|rows| * classes) on counted rows. Returns 0 when `rows` is empty.
// Weighted (weights.size() == rows.size()): sum_k weights[k] * (row k's sum over classes) / classes,
// dlogits scaled by weights[k] / classes (GraphSAINT's normalisation, a split batch's parts).
template <class T>
T bce_with_logits(ConstView<T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows,
                  std::span<const float> weights, MatrixView<T> dlogits);

}  // namespace gnnpipe::models::cpu
