#include "gnnpipe/models/ops/loss.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// Zeroes `d` and checks it against logits' shape.
template <class T>
void zero_gradient(ConstView<T> logits, MatrixView<T> d, const char* what) {
  GNNPIPE_CHECK(d.rows == logits.rows && d.cols == logits.cols, "{}: dlogits {} does not match logits {}", what,
                shape_str(d), shape_str(logits));
  detail::parallel_rows(d.rows, detail::grain_for(d.cols), [&](int64_t begin, int64_t end) {
    std::fill(d.data + begin * d.cols, d.data + end * d.cols, T{0});
  });
}

// The sum of `values` in index order.
double ordered_sum(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum;
}

}  // namespace

template <class T>
T log_softmax_nll(ConstView<T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows,
                  MatrixView<T> dlogits) {
  return log_softmax_nll<T>(logits, labels, rows, {}, dlogits);
}

template <class T>
T log_softmax_nll(ConstView<T> logits, std::span<const int32_t> labels, std::span<const int32_t> rows,
                  std::span<const float> weights, MatrixView<T> dlogits) {
  GNNPIPE_CHECK(weights.empty() || weights.size() == rows.size(), "log_softmax_nll: {} weights for {} rows",
                weights.size(), rows.size());
  GNNPIPE_CHECK(static_cast<int64_t>(labels.size()) == logits.rows, "log_softmax_nll: {} labels for logits {}",
                labels.size(), shape_str(logits));
  zero_gradient<T>(logits, dlogits, "log_softmax_nll");
  detail::check_row_list(rows, logits.rows, "log_softmax_nll");
  const int64_t classes = logits.cols;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int32_t label = labels[static_cast<std::size_t>(rows[i])];
    GNNPIPE_CHECK(label >= 0 && label < classes, "log_softmax_nll: row {} has label {}, outside [0, {})", rows[i],
                  label, classes);
  }
  if (rows.empty()) return T{0};
  const double inv_n = 1.0 / static_cast<double>(rows.size());
  std::vector<double> loss(rows.size());
  detail::parallel_rows(static_cast<int64_t>(rows.size()), detail::grain_for(3 * classes), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int32_t r = rows[static_cast<std::size_t>(i)];
      const T* x = logits.row(r).data();
      T* d = dlogits.row(r).data();
      const double max = *std::max_element(x, x + classes);
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(x[c]) - max);
      const double log_z = max + std::log(sum);
      const int32_t label = labels[static_cast<std::size_t>(r)];
      const double scale = weights.empty() ? inv_n : static_cast<double>(weights[static_cast<std::size_t>(i)]);
      // Unweighted: the sum is scaled once at the end (the mean exactly as before weights existed).
      loss[static_cast<std::size_t>(i)] = (log_z - static_cast<double>(x[label])) * (weights.empty() ? 1.0 : scale);
      for (int64_t c = 0; c < classes; ++c) {
        const double p = std::exp(static_cast<double>(x[c]) - log_z);
        d[c] = static_cast<T>((p - (c == label ? 1.0 : 0.0)) * scale);
      }
    }
  });
  return static_cast<T>(weights.empty() ? ordered_sum(loss) * inv_n : ordered_sum(loss));
}

template <class T>
T bce_with_logits(ConstView<T> logits, MatrixView<const uint8_t> targets, std::span<const int32_t> rows,
                  std::span<const float> weights, MatrixView<T> dlogits) {
  GNNPIPE_CHECK(targets.rows == logits.rows && targets.cols == logits.cols,
                "bce_with_logits: targets {} do not match logits {}", shape_str(targets), shape_str(logits));
  zero_gradient<T>(logits, dlogits, "bce_with_logits");
  detail::check_row_list(rows, logits.rows, "bce_with_logits");
  GNNPIPE_CHECK(weights.empty() || weights.size() == rows.size(), "bce_with_logits: {} weights for {} rows",
                weights.size(), rows.size());
  const int64_t classes = logits.cols;
  if (rows.empty() || classes == 0) return T{0};
  const double inv_n = 1.0 / (static_cast<double>(rows.size()) * static_cast<double>(classes));
  const double inv_c = 1.0 / static_cast<double>(classes);
  std::vector<double> loss(rows.size());
  detail::parallel_rows(static_cast<int64_t>(rows.size()), detail::grain_for(3 * classes), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int32_t r = rows[static_cast<std::size_t>(i)];
      const T* x = logits.row(r).data();
      const uint8_t* t = targets.row(r).data();
      T* d = dlogits.row(r).data();
      const double scale = weights.empty() ? inv_n : static_cast<double>(weights[static_cast<std::size_t>(i)]) * inv_c;
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) {
        const double v = x[c];
        const double target = t[c] ? 1.0 : 0.0;
        sum += std::max(v, 0.0) - v * target + std::log1p(std::exp(-std::abs(v)));
        // sigmoid without overflow: exp of a non-positive number only.
        const double sig = v >= 0 ? 1.0 / (1.0 + std::exp(-v)) : std::exp(v) / (1.0 + std::exp(v));
        d[c] = static_cast<T>((sig - target) * scale);
      }
      loss[static_cast<std::size_t>(i)] = weights.empty() ? sum : sum * scale;
    }
  });
  return static_cast<T>(weights.empty() ? ordered_sum(loss) * inv_n : ordered_sum(loss));
}

template float log_softmax_nll<float>(ConstView<float>, std::span<const int32_t>, std::span<const int32_t>,
                                      std::span<const float>, MatrixView<float>);
template double log_softmax_nll<double>(ConstView<double>, std::span<const int32_t>, std::span<const int32_t>,
                                        std::span<const float>, MatrixView<double>);
template float log_softmax_nll<float>(ConstView<float>, std::span<const int32_t>, std::span<const int32_t>,
                                      MatrixView<float>);
template double log_softmax_nll<double>(ConstView<double>, std::span<const int32_t>, std::span<const int32_t>,
                                        MatrixView<double>);
template float bce_with_logits<float>(ConstView<float>, MatrixView<const uint8_t>, std::span<const int32_t>,
                                      std::span<const float>, MatrixView<float>);
template double bce_with_logits<double>(ConstView<double>, MatrixView<const uint8_t>, std::span<const int32_t>,
                                        std::span<const float>, MatrixView<double>);

}  // namespace gnnpipe::models::cpu
