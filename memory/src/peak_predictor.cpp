#include "gnnpipe/memory/peak_predictor.hpp"

#include <algorithm>
#include <cmath>

namespace gnnpipe::memory {
namespace {

constexpr double kScale = 1.0 / 1024;  // nodes and edges in thousands keep the normal equations well scaled

// Solves the 3x3 system a x = b by Gaussian elimination with partial pivoting; false when singular.
bool solve3(double a[3][3], double b[3], double x[3]) {
  double scale = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) scale = std::max(scale, std::abs(a[r][c]));
  for (int col = 0; col < 3; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 3; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    if (std::abs(a[pivot][col]) <= 1e-12 * scale) return false;
    if (pivot != col) {
      for (int c = 0; c < 3; ++c) std::swap(a[col][c], a[pivot][c]);
      std::swap(b[col], b[pivot]);
    }
    for (int r = col + 1; r < 3; ++r) {
      const double f = a[r][col] / a[col][col];
      for (int c = col; c < 3; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (int r = 2; r >= 0; --r) {
    double s = b[r];
    for (int c = r + 1; c < 3; ++c) s -= a[r][c] * x[c];
    x[r] = s / a[r][r];
  }
  return true;
}

}  // namespace

double PeakPredictor::predict(double analytical, int64_t nodes, int64_t edges) const {
  if (count_ == 0) return analytical;
  double correction = residual_sum_ / static_cast<double>(count_);
  if (count_ >= 3 && shapes_vary_) {
    double a[3][3], b[3], x[3] = {};
    for (int i = 0; i < 3; ++i) {
      b[i] = xty_[i];
      for (int j = 0; j < 3; ++j) a[i][j] = xtx_[i][j];
    }
    if (solve3(a, b, x)) {
      correction = x[0] + x[1] * static_cast<double>(nodes) * kScale + x[2] * static_cast<double>(edges) * kScale;
    }
  }
  return std::max(0.0, analytical + correction);
}

bool PeakPredictor::monotone() const {
  if (count_ < 3 || !shapes_vary_) return true;
  double a[3][3], b[3], x[3] = {};
  for (int i = 0; i < 3; ++i) {
    b[i] = xty_[i];
    for (int j = 0; j < 3; ++j) a[i][j] = xtx_[i][j];
  }
  return !solve3(a, b, x) || (x[1] >= 0 && x[2] >= 0);
}

void PeakPredictor::observe(double analytical, int64_t nodes, int64_t edges, double predicted, double measured) {
  const double x[3] = {1.0, static_cast<double>(nodes) * kScale, static_cast<double>(edges) * kScale};
  const double y = measured - analytical;
  for (int i = 0; i < 3; ++i) {
    xty_[i] += x[i] * y;
    for (int j = 0; j < 3; ++j) xtx_[i][j] += x[i] * x[j];
  }
  residual_sum_ += y;
  if (first_nodes_ < 0) {
    first_nodes_ = nodes;
    first_edges_ = edges;
  } else if (nodes != first_nodes_ || edges != first_edges_) {
    shapes_vary_ = true;
  }
  ++count_;
  const double ape = measured > 0 ? std::abs(predicted - measured) / measured : 0.0;
  ape_sum_ += ape;
  max_ape_ = std::max(max_ape_, ape);
}

}  // namespace gnnpipe::memory
