#include "gnnpipe/models/ops/metrics.hpp"

#include <oneapi/tbb/parallel_reduce.h>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "ops/parallel.hpp"

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

template double accuracy<float>(MatrixView<const float>, std::span<const int32_t>, std::span<const int32_t>);
template double accuracy<double>(MatrixView<const double>, std::span<const int32_t>, std::span<const int32_t>);
template double micro_f1<float>(MatrixView<const float>, MatrixView<const uint8_t>, std::span<const int32_t>);
template double micro_f1<double>(MatrixView<const double>, MatrixView<const uint8_t>, std::span<const int32_t>);

}  // namespace gnnpipe::models::cpu
