#include "gnnpipe/models/ops/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// The softmax of a row of cols >= 1 values, in double: e[c] = exp(x[c] - max) (the maximum in T)
// and their sum in column order; log_z = max + log(sum), and each p_c = e[c] / sum. One exp per
// element (formerly two: p_c was exp(x_c - log_z) again); the CUDA twins (divergence_kernels.cu)
// keep the second exp, within their parity bound of the CPU's (tests/gpu).
template <class T>
double row_softmax(const T* x, int64_t cols, double* e, double& sum) {
  const double max = *std::max_element(x, x + cols);
  sum = 0;
  for (int64_t c = 0; c < cols; ++c) {
    e[c] = std::exp(static_cast<double>(x[c]) - max);
    sum += e[c];
  }
  return max + std::log(sum);
}

// H = -sum_c p_c log p_c of softmax(x) over a row, from row_softmax's e, sum and log_z; each p_c
// is left in e[c].
template <class T>
double row_entropy(const T* x, int64_t cols, double log_z, double* e, double sum) {
  double plogp = 0;
  for (int64_t c = 0; c < cols; ++c) {
    const double lp = static_cast<double>(x[c]) - log_z;
    e[c] /= sum;
    plogp += e[c] * lp;
  }
  return -plogp;
}

}  // namespace

template <class T>
double softmax_kl(ConstView<T> p_logits, ConstView<T> q_logits, std::span<const float> weights,
                  std::type_identity_t<T> scale, MatrixView<T> dp, MatrixView<T> dq) {
  GNNPIPE_CHECK(q_logits.rows == p_logits.rows && q_logits.cols == p_logits.cols && dp.rows == p_logits.rows &&
                    dp.cols == p_logits.cols && dq.rows == p_logits.rows && dq.cols == p_logits.cols,
                "softmax_kl: p_logits {}, q_logits {}, dp {} and dq {} differ in shape", shape_str(p_logits),
                shape_str(q_logits), shape_str(dp), shape_str(dq));
  GNNPIPE_CHECK(static_cast<int64_t>(weights.size()) == p_logits.rows, "softmax_kl: {} weights for {} rows",
                weights.size(), p_logits.rows);
  const int64_t rows = p_logits.rows, cols = p_logits.cols;
  if (rows == 0 || cols == 0) return 0.0;
  std::vector<double> row_kl(static_cast<std::size_t>(rows));
  detail::parallel_rows(rows, detail::grain_for(4 * cols), [&](int64_t begin, int64_t end) {
    // Each row's softmaxes, formed once (one exp per element of either row).
    std::vector<double> p_row(static_cast<std::size_t>(cols)), q_row(static_cast<std::size_t>(cols));
    for (int64_t i = begin; i < end; ++i) {
      const T* xp = p_logits.row(i).data();
      const T* xq = q_logits.row(i).data();
      double sum_p = 0, sum_q = 0;
      const double lzp = row_softmax(xp, cols, p_row.data(), sum_p);
      const double lzq = row_softmax(xq, cols, q_row.data(), sum_q);
      double kl = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double lp = static_cast<double>(xp[c]) - lzp, lq = static_cast<double>(xq[c]) - lzq;
        p_row[static_cast<std::size_t>(c)] /= sum_p;
        kl += p_row[static_cast<std::size_t>(c)] * (lp - lq);
      }
      const double w = weights[static_cast<std::size_t>(i)];
      const double s = static_cast<double>(scale) * w;
      T* gp = dp.row(i).data();
      T* gq = dq.row(i).data();
      for (int64_t c = 0; c < cols; ++c) {
        const double lp = static_cast<double>(xp[c]) - lzp, lq = static_cast<double>(xq[c]) - lzq;
        const double p = p_row[static_cast<std::size_t>(c)];
        gp[c] += static_cast<T>(s * p * ((lp - lq) - kl));
        gq[c] = static_cast<T>(s * (q_row[static_cast<std::size_t>(c)] / sum_q - p));
      }
      row_kl[static_cast<std::size_t>(i)] = w * kl;
    }
  });
  return std::accumulate(row_kl.begin(), row_kl.end(), 0.0) * static_cast<double>(scale);
}

template <class T>
double softmax_entropy(ConstView<T> logits, std::span<const float> weights, std::type_identity_t<T> scale,
                       MatrixView<T> dlogits) {
  GNNPIPE_CHECK(dlogits.rows == logits.rows && dlogits.cols == logits.cols,
                "softmax_entropy: dlogits {} does not match logits {}", shape_str(dlogits), shape_str(logits));
  GNNPIPE_CHECK(static_cast<int64_t>(weights.size()) == logits.rows, "softmax_entropy: {} weights for {} rows",
                weights.size(), logits.rows);
  const int64_t rows = logits.rows, cols = logits.cols;
  if (rows == 0 || cols == 0) return 0.0;
  std::vector<double> row_h(static_cast<std::size_t>(rows));
  detail::parallel_rows(rows, detail::grain_for(3 * cols), [&](int64_t begin, int64_t end) {
    std::vector<double> p_row(static_cast<std::size_t>(cols));  // the row's softmax, formed once
    for (int64_t i = begin; i < end; ++i) {
      const T* x = logits.row(i).data();
      double sum = 0;
      const double log_z = row_softmax(x, cols, p_row.data(), sum);
      const double h = row_entropy(x, cols, log_z, p_row.data(), sum);
      const double w = weights[static_cast<std::size_t>(i)];
      const double neg_s = -(static_cast<double>(scale) * w);
      T* d = dlogits.row(i).data();
      for (int64_t c = 0; c < cols; ++c) {
        const double lp = static_cast<double>(x[c]) - log_z;
        d[c] = static_cast<T>(neg_s * p_row[static_cast<std::size_t>(c)] * (lp + h));
      }
      row_h[static_cast<std::size_t>(i)] = w * h;
    }
  });
  return std::accumulate(row_h.begin(), row_h.end(), 0.0) * static_cast<double>(scale);
}

template <class T>
void softmax_entropy_scatter(ConstView<T> logits, std::span<const graph::NodeId> ids, float* out) {
  GNNPIPE_CHECK(static_cast<int64_t>(ids.size()) == logits.rows, "softmax_entropy_scatter: {} ids for logits {}",
                ids.size(), shape_str(logits));
  const auto bad = std::find_if(ids.begin(), ids.end(), [](graph::NodeId v) { return v < 0; });
  GNNPIPE_CHECK_DATA(bad == ids.end(), "softmax_entropy_scatter: id {} (position {}) is negative",
                     bad == ids.end() ? 0 : *bad, bad - ids.begin());
  const int64_t rows = logits.rows, cols = logits.cols;
  GNNPIPE_CHECK(rows == 0 || out != nullptr, "softmax_entropy_scatter: no output for {} rows", rows);
  const double log_cols = cols > 1 ? std::log(static_cast<double>(cols)) : 0.0;
  detail::parallel_rows(rows, detail::grain_for(2 * cols), [&](int64_t begin, int64_t end) {
    std::vector<double> e(static_cast<std::size_t>(cols));
    for (int64_t r = begin; r < end; ++r) {
      const T* x = logits.row(r).data();
      double h = 0.0;
      if (cols > 1) {
        double sum = 0;
        const double log_z = row_softmax(x, cols, e.data(), sum);
        h = row_entropy(x, cols, log_z, e.data(), sum) / log_cols;
      }
      out[ids[static_cast<std::size_t>(r)]] = static_cast<float>(h);
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                        \
  template double softmax_kl<T>(ConstView<T>, ConstView<T>, std::span<const float>, T, MatrixView<T>, MatrixView<T>); \
  template double softmax_entropy<T>(ConstView<T>, std::span<const float>, T, MatrixView<T>);                         \
  template void softmax_entropy_scatter<T>(ConstView<T>, std::span<const graph::NodeId>, float*);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
