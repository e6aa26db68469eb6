#pragma once
// Central finite differences for gradient checks in double precision (docs/DESIGN.md §6.7).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

namespace gnnpipe::test {

// The worst disagreement between a numeric and an analytic gradient.
struct GradientCheck {
  double max_error = 0;    // max over i of |numeric - analytic| / max(1, |numeric|, |analytic|)
  std::size_t worst = 0;   // the index where it occurs
  double numeric = 0;      // both gradients at that index
  double analytic = 0;
};

// For every i, perturbs x[i] by +-eps, evaluates f() (which must read x and return a scalar) and
// compares (f(x + eps) - f(x - eps)) / (2 eps) with analytic[i]. x is restored afterwards.
// The error is relative to max(1, |gradient|), so tiny gradients are compared absolutely.
template <class F>
GradientCheck check_gradient(F&& f, std::span<double> x, std::span<const double> analytic, double eps = 1e-6) {
  GradientCheck result;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double plus = f();
    x[i] = saved - eps;
    const double minus = f();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * eps);
    const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[i])});
    const double error = std::abs(numeric - analytic[i]) / scale;
    if (error > result.max_error || i == 0) result = GradientCheck{error, i, numeric, analytic[i]};
  }
  return result;
}

}  // namespace gnnpipe::test
