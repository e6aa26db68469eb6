// The CPU dropout's backward (dropout.hpp): dx = dy scaled where the forward's mask kept, 0
// elsewhere; the same for feature and edge dropout.
#include "gnnpipe/models/ops/dropout.hpp"
#include "cpu/dropout_simd.hpp"
#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {

template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout_backward: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(dy.rows == dx.rows && dy.cols == dx.cols, "dropout_backward: dy {} and dx {} differ in shape",
                shape_str(dy), shape_str(dx));
  GNNPIPE_CHECK(mask.size() == dropout_mask_bytes(dy.rows, dy.cols),
                "dropout_backward: mask of {} bytes for dy {} (needs {})", mask.size(), shape_str(dy),
                dropout_mask_bytes(dy.rows, dy.cols));
  const T scale = T{1} / (T{1} - p);
  const int64_t cols = dy.cols;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  detail::parallel_rows(dy.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
    if (cols % 8 == 0) {  // no padding bits: the rows' bits are contiguous
      detail::apply(mask.data() + begin * row_bytes, dy.data + begin * cols, dx.data + begin * cols,
                    (end - begin) * cols, scale);
      return;
    }
    for (int64_t r = begin; r < end; ++r) {
      detail::apply(mask.data() + r * row_bytes, dy.data + r * cols, dx.data + r * cols, cols, scale);
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                   \

template void dropout_backward<float>(std::span<const uint8_t>, float, ConstView<float>, MatrixView<float>);
template void dropout_backward<double>(std::span<const uint8_t>, double, ConstView<double>, MatrixView<double>);

}  // namespace gnnpipe::models::cpu
