#pragma once
// Evaluation metrics over the rows listed in `rows` (indices in [0, logits.rows), checked).
// Counts are integers, so the results do not depend on the thread count. T is float or double.
#include <cstdint>
#include <span>

#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// Fraction of counted rows whose argmax (ties -> lowest column) equals the label. Rows labelled -1
// are skipped; returns 0 when no row counts. labels.size() must be logits.rows.
template <class T>
double accuracy(MatrixView<const T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows);

// Micro-averaged F1 over rows x classes, predicting 1 where logit > 0:
// 2 TP / (2 TP + FP + FN); returns 0 when that denominator is 0 (as scikit-learn does).
template <class T>
double micro_f1(MatrixView<const T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows);

}  // namespace gnnpipe::models::cpu
