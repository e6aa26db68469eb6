#pragma once
// Elementwise ops: bias and activations. Parallel over rows; each element is computed on its own,
// so results do not depend on the thread count.
// Activations are out of place with in-place allowed: y may be the same matrix as x (same data
// pointer), and dx may be the same matrix as dy. Backwards take the forward OUTPUT y, so an
// in-place forward needs to keep nothing else. At x == 0 the derivative is the left one
// (relu: 0, leaky_relu: slope, elu: alpha), as in PyTorch. T is float or double.
#include <span>

#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// y[r, c] += bias[c], in place; bias.size() must be y.cols.
template <class T>
void bias_add(MatrixView<T> y, std::span<const std::type_identity_t<T>> bias);

// dbias[c] = sum over r of dy[r, c] (overwritten). The sum runs over fixed blocks of rows whose
// partial sums are added in block order, so the result is the same for any thread count.
template <class T>
void bias_add_backward(ConstView<T> dy, std::span<T> dbias);

// y = max(x, 0); dx = dy where y > 0, else 0.
template <class T>
void relu(ConstView<T> x, MatrixView<T> y);
template <class T>
void relu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx);

// y = x for x > 0, else alpha * (exp(x) - 1); dx = dy for y > 0, else dy * (y + alpha).
// alpha must be > 0 (then y > 0 exactly when x > 0).
template <class T>
void elu(ConstView<T> x, MatrixView<T> y, std::type_identity_t<T> alpha = 1);
template <class T>
void elu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx, std::type_identity_t<T> alpha = 1);

// y = x for x > 0, else slope * x; dx = dy for y > 0, else slope * dy. slope must be >= 0 (then
// y > 0 exactly when x > 0). GAT applies it to its E x H edge scores with slope 0.2.
template <class T>
void leaky_relu(ConstView<T> x, MatrixView<T> y, std::type_identity_t<T> slope);
template <class T>
void leaky_relu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx, std::type_identity_t<T> slope);

// y[r, c] = x[r, c] * T(factors[r]): per-row weights (MH-Aug's acceptance weights on a batch's
// rows). x and y share one shape and may be the same matrix; factors.size() must be x.rows.
template <class T>
void scale_rows(ConstView<T> x, std::span<const float> factors, MatrixView<T> y);
// y[r, c] += x[r, c] * T(factors[r]), the product rounded before the sum (ops::add_scaled_rows).
template <class T>
void add_scaled_rows(ConstView<T> x, std::span<const float> factors, MatrixView<T> y);

}  // namespace gnnpipe::models::cpu
