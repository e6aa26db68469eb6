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

// Micro- and macro-F1 of multi-label predictions over the counted rows. Macro: the mean over
// classes of each class's 2 TP / (2 TP + FP + FN) (0 for a class with no positive and no
// prediction, as scikit-learn). Predictions: logit > 0 (threshold 0.5 on the probability), or with
// `top_k` each row's k largest logits where k is that row's number of true labels (the DeepWalk
// protocol; ties to the lower column).
struct F1Scores {
  double micro = 0;
  double macro = 0;
};
template <class T>
F1Scores multi_label_f1(MatrixView<const T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows,
                        bool top_k);

}  // namespace gnnpipe::models::cpu
