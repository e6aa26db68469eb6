#include "gnnpipe/models/ops/metrics.hpp"

#include <oneapi/tbb/parallel_reduce.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

struct F1Counts {
  int64_t tp = 0;
  int64_t fp = 0;
  int64_t fn = 0;
};

}  // namespace

template <class T>
double accuracy(MatrixView<const T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows) {
  GNNPIPE_CHECK(static_cast<int64_t>(labels.size()) == logits.rows, "accuracy: {} labels for logits {}",
                labels.size(), shape_str(logits));
  detail::check_row_list(rows, logits.rows, "accuracy");
  int64_t counted = 0;
  int64_t correct = 0;
  for (int32_t r : rows) {  // cheap next to the model; exact integer counts
    const int32_t label = labels[static_cast<std::size_t>(r)];
    if (label < 0) continue;
    const T* x = logits.row(r).data();
    int64_t best = 0;
    for (int64_t c = 1; c < logits.cols; ++c) {
      if (x[c] > x[best]) best = c;
    }
    ++counted;
    if (logits.cols > 0 && best == label) ++correct;
  }
  return counted == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(counted);
}

template <class T>
double micro_f1(MatrixView<const T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows) {
  GNNPIPE_CHECK(targets.rows == logits.rows && targets.cols == logits.cols,
                "micro_f1: targets {} do not match logits {}", shape_str(targets), shape_str(logits));
  detail::check_row_list(rows, logits.rows, "micro_f1");
  const auto counts = oneapi::tbb::parallel_reduce(
      oneapi::tbb::blocked_range<std::size_t>(0, rows.size(), 256), F1Counts{},
      core::tsan::fork_join([&](const oneapi::tbb::blocked_range<std::size_t>& range, F1Counts acc) {
        for (std::size_t i = range.begin(); i < range.end(); ++i) {
          const T* x = logits.row(rows[i]).data();
          const uint8_t* t = targets.row(rows[i]).data();
          for (int64_t c = 0; c < logits.cols; ++c) {
            const bool predicted = x[c] > T{0};
            const bool actual = t[c] != 0;
            acc.tp += predicted && actual;
            acc.fp += predicted && !actual;
            acc.fn += !predicted && actual;
          }
        }
        return acc;
      }),
      [](F1Counts a, F1Counts b) { return F1Counts{a.tp + b.tp, a.fp + b.fp, a.fn + b.fn}; });
  const int64_t denominator = 2 * counts.tp + counts.fp + counts.fn;
  return denominator == 0 ? 0.0 : static_cast<double>(2 * counts.tp) / static_cast<double>(denominator);
}

template <class T>
F1Scores multi_label_f1(MatrixView<const T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows,
                        bool top_k) {
  GNNPIPE_CHECK(targets.rows == logits.rows && targets.cols == logits.cols,
                "multi_label_f1: targets {} do not match logits {}", shape_str(targets), shape_str(logits));
  detail::check_row_list(rows, logits.rows, "multi_label_f1");
  const auto classes = static_cast<std::size_t>(logits.cols);
  std::vector<F1Counts> per_class(classes);
  std::vector<int64_t> order(classes);
  std::vector<char> predicted(classes);
  for (int32_t r : rows) {  // exact integer counts, sequential: cheap next to the model
    const T* x = logits.row(r).data();
    const uint8_t* t = targets.row(r).data();
    std::fill(predicted.begin(), predicted.end(), 0);
    if (top_k) {
      const auto k = static_cast<std::ptrdiff_t>(std::count_if(t, t + classes, [](uint8_t v) { return v != 0; }));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return x[a] > x[b]; });
      for (std::ptrdiff_t i = 0; i < k; ++i) predicted[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;
    } else {
      for (std::size_t c = 0; c < classes; ++c) predicted[c] = x[c] > T{0};
    }
    for (std::size_t c = 0; c < classes; ++c) {
      const bool actual = t[c] != 0;
      per_class[c].tp += predicted[c] && actual;
      per_class[c].fp += predicted[c] && !actual;
      per_class[c].fn += !predicted[c] && actual;
    }
  }
  const auto f1 = [](const F1Counts& n) {
    const int64_t d = 2 * n.tp + n.fp + n.fn;
    return d == 0 ? 0.0 : static_cast<double>(2 * n.tp) / static_cast<double>(d);
  };
  F1Counts all;
  double macro = 0;
  for (const F1Counts& n : per_class) {
    all = F1Counts{all.tp + n.tp, all.fp + n.fp, all.fn + n.fn};
    macro += f1(n);
  }
  return F1Scores{f1(all), classes == 0 ? 0.0 : macro / static_cast<double>(classes)};
}

template double accuracy<float>(MatrixView<const float>, std::span<const int32_t>, std::span<const int32_t>);
template double accuracy<double>(MatrixView<const double>, std::span<const int32_t>, std::span<const int32_t>);
template double micro_f1<float>(MatrixView<const float>, MatrixView<const uint8_t>, std::span<const int32_t>);
template double micro_f1<double>(MatrixView<const double>, MatrixView<const uint8_t>, std::span<const int32_t>);
template F1Scores multi_label_f1<float>(MatrixView<const float>, MatrixView<const uint8_t>, std::span<const int32_t>,
                                        bool);
template F1Scores multi_label_f1<double>(MatrixView<const double>, MatrixView<const uint8_t>, std::span<const int32_t>,
                                         bool);

}  // namespace gnnpipe::models::cpu
