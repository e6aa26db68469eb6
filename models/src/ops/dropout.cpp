#include "gnnpipe/models/ops/dropout.hpp"

#include "ops/parallel.hpp"

namespace gnnpipe::models::cpu {

template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x, MatrixView<T> y,
                     std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "dropout: input {} and output {} differ in shape",
                shape_str(x), shape_str(y));
  GNNPIPE_CHECK(static_cast<int64_t>(mask.size()) == x.size(), "dropout: mask of {} bytes for x {}", mask.size(),
                shape_str(x));
  const T scale = T{1} / (T{1} - p);
  const bool identity = p == T{0};
  detail::parallel_rows(x.rows, detail::grain_for(4 * x.cols), [&](int64_t begin, int64_t end) {
    // One Philox block gives the uniforms of four consecutive elements: the same values as
    // key.uniform_at(i), computed once per block instead of once per element.
    core::PhiloxCounter bits{};
    uint64_t block_of_bits = ~uint64_t{0};
    for (int64_t i = begin * x.cols, last = end * x.cols; i < last; ++i) {
      const auto u = static_cast<uint64_t>(i);
      if ((u >> 2) != block_of_bits) {
        block_of_bits = u >> 2;
        bits = key.block(block_of_bits);
      }
      const float uniform = static_cast<float>(bits[u & 3u] >> 8) * (1.0f / 16777216.0f);
      const bool keep = identity || static_cast<T>(uniform) >= p;
      mask[static_cast<std::size_t>(i)] = keep ? 1 : 0;
      y.data[i] = identity ? x.data[i] : (keep ? x.data[i] * scale : T{0});
    }
  });
}

template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout_backward: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(dy.rows == dx.rows && dy.cols == dx.cols, "dropout_backward: dy {} and dx {} differ in shape",
                shape_str(dy), shape_str(dx));
  GNNPIPE_CHECK(static_cast<int64_t>(mask.size()) == dy.size(), "dropout_backward: mask of {} bytes for dy {}",
                mask.size(), shape_str(dy));
  const T scale = T{1} / (T{1} - p);
  detail::parallel_rows(dy.rows, detail::grain_for(dy.cols), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * dy.cols, last = end * dy.cols; i < last; ++i) {
      dx.data[i] = mask[static_cast<std::size_t>(i)] ? dy.data[i] * scale : T{0};
    }
  });
}

template void dropout_forward<float>(core::RngKey, float, ConstView<float>, MatrixView<float>, std::span<uint8_t>);
template void dropout_forward<double>(core::RngKey, double, ConstView<double>, MatrixView<double>, std::span<uint8_t>);
template void dropout_backward<float>(std::span<const uint8_t>, float, ConstView<float>, MatrixView<float>);
template void dropout_backward<double>(std::span<const uint8_t>, double, ConstView<double>, MatrixView<double>);

}  // namespace gnnpipe::models::cpu
