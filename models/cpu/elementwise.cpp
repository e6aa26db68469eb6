#include "gnnpipe/models/ops/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

// Rows per partial sum of bias_add_backward: fixed, so the summation order is independent of the
// thread count.
constexpr int64_t kBiasRowsPerBlock = 256;

// out[i] = f(in[i]) over the flat elements of two equally shaped matrices (which may alias).
template <class T, class F>
void map_unary(ConstView<T> x, MatrixView<T> y, const char* what, F f) {
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "{}: input {} and output {} differ in shape", what,
                shape_str(x), shape_str(y));
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    const T* in = x.data + begin * x.cols;
    T* out = y.data + begin * y.cols;
    for (int64_t i = 0, n = (end - begin) * x.cols; i < n; ++i) out[i] = f(in[i]);
  });
}

// dx[i] = g(y[i], dy[i]) over three equally shaped matrices (dx may alias dy).
template <class T, class G>
void map_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx, const char* what, G g) {
  GNNPIPE_CHECK(y.rows == dy.rows && y.cols == dy.cols && y.rows == dx.rows && y.cols == dx.cols,
                "{}: y {}, dy {} and dx {} differ in shape", what, shape_str(y), shape_str(dy), shape_str(dx));
  detail::parallel_rows(y.rows, detail::grain_for(y.cols), [&](int64_t begin, int64_t end) {
    const int64_t off = begin * y.cols;
    for (int64_t i = 0, n = (end - begin) * y.cols; i < n; ++i) dx.data[off + i] = g(y.data[off + i], dy.data[off + i]);
  });
}

}  // namespace

template <class T>
void bias_add(MatrixView<T> y, std::span<const std::type_identity_t<T>> bias) {
  GNNPIPE_CHECK(static_cast<int64_t>(bias.size()) == y.cols, "bias_add: bias of {} values for y {}", bias.size(),
                shape_str(y));
  detail::parallel_rows(y.rows, detail::grain_for(y.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* out = y.row(r).data();
      for (int64_t c = 0; c < y.cols; ++c) out[c] += bias[static_cast<std::size_t>(c)];
    }
  });
}

template <class T>
void bias_add_backward(ConstView<T> dy, std::span<T> dbias) {
  GNNPIPE_CHECK(static_cast<int64_t>(dbias.size()) == dy.cols, "bias_add_backward: dbias of {} values for dy {}",
                dbias.size(), shape_str(dy));
  const int64_t cols = dy.cols;
  const int64_t blocks = (dy.rows + kBiasRowsPerBlock - 1) / kBiasRowsPerBlock;
  std::vector<T> partial(static_cast<std::size_t>(blocks * cols));
  detail::parallel_rows(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* sum = partial.data() + b * cols;
      for (int64_t r = b * kBiasRowsPerBlock, last = std::min(dy.rows, r + kBiasRowsPerBlock); r < last; ++r) {
        const T* g = dy.row(r).data();
        for (int64_t c = 0; c < cols; ++c) sum[c] += g[c];
      }
    }
  });
  std::fill(dbias.begin(), dbias.end(), T{0});
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t c = 0; c < cols; ++c) dbias[static_cast<std::size_t>(c)] += partial[static_cast<std::size_t>(b * cols + c)];
  }
}

template <class T>
void relu(ConstView<T> x, MatrixView<T> y) {
  map_unary<T>(x, y, "relu", [](T v) { return v > T{0} ? v : T{0}; });
}
template <class T>
void relu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx) {
  map_backward<T>(y, dy, dx, "relu_backward", [](T out, T g) { return out > T{0} ? g : T{0}; });
}

template <class T>
void elu(ConstView<T> x, MatrixView<T> y, std::type_identity_t<T> alpha) {
  GNNPIPE_CHECK(alpha > T{0}, "elu: alpha must be > 0, got {}", alpha);
  map_unary<T>(x, y, "elu", [alpha](T v) { return v > T{0} ? v : alpha * std::expm1(v); });
}
template <class T>
void elu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx, std::type_identity_t<T> alpha) {
  GNNPIPE_CHECK(alpha > T{0}, "elu_backward: alpha must be > 0, got {}", alpha);
  map_backward<T>(y, dy, dx, "elu_backward", [alpha](T out, T g) { return out > T{0} ? g : g * (out + alpha); });
}

template <class T>
void leaky_relu(ConstView<T> x, MatrixView<T> y, std::type_identity_t<T> slope) {
  GNNPIPE_CHECK(slope >= T{0}, "leaky_relu: slope must be >= 0, got {}", slope);
  map_unary<T>(x, y, "leaky_relu", [slope](T v) { return v > T{0} ? v : slope * v; });
}
template <class T>
void leaky_relu_backward(ConstView<T> y, ConstView<T> dy, MatrixView<T> dx, std::type_identity_t<T> slope) {
  GNNPIPE_CHECK(slope >= T{0}, "leaky_relu_backward: slope must be >= 0, got {}", slope);
  map_backward<T>(y, dy, dx, "leaky_relu_backward", [slope](T out, T g) { return out > T{0} ? g : slope * g; });
}

namespace {

// row(y's row r, x's row r, T(factors[r]), cols) for every row, in parallel, once the shapes are
// checked (`what` names the op).
template <class T, class RowOp>
void for_rows_with_factors(ConstView<T> x, std::span<const float> factors, MatrixView<T> y, const char* what,
                           RowOp row) {
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols && static_cast<int64_t>(factors.size()) == x.rows,
                "{}: x {}, y {} and {} factors", what, shape_str(x), shape_str(y), factors.size());
  detail::parallel_rows(x.rows, detail::grain_for(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      row(y.data + r * y.cols, x.data + r * x.cols, static_cast<T>(factors[static_cast<std::size_t>(r)]), x.cols);
    }
  });
}

}  // namespace

template <class T>
void scale_rows(ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  for_rows_with_factors<T>(x, factors, y, "scale_rows", [](T* out, const T* in, T f, int64_t n) {
    detail::scale_row(out, in, f, n);
  });
}

template <class T>
void add_scaled_rows(ConstView<T> x, std::span<const float> factors, MatrixView<T> y) {
  // y + f x, the product rounded first: axpy_row's o + w x (x * f == f * x exactly).
  for_rows_with_factors<T>(x, factors, y, "add_scaled_rows", [](T* out, const T* in, T f, int64_t n) {
    detail::axpy_row(out, in, f, n);
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                        \
  template void bias_add<T>(MatrixView<T>, std::span<const T>);                       \
  template void bias_add_backward<T>(ConstView<T>, std::span<T>);                     \
  template void relu<T>(ConstView<T>, MatrixView<T>);                                 \
  template void relu_backward<T>(ConstView<T>, ConstView<T>, MatrixView<T>);          \
  template void elu<T>(ConstView<T>, MatrixView<T>, T);                               \
  template void elu_backward<T>(ConstView<T>, ConstView<T>, MatrixView<T>, T);        \
  template void leaky_relu<T>(ConstView<T>, MatrixView<T>, T);                        \
  template void leaky_relu_backward<T>(ConstView<T>, ConstView<T>, MatrixView<T>, T); \
  template void scale_rows<T>(ConstView<T>, std::span<const float>, MatrixView<T>);                 \
  template void add_scaled_rows<T>(ConstView<T>, std::span<const float>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
