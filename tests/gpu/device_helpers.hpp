#pragma once
// Helpers of the CPU-vs-CUDA parity tests: device copies of matrices, arrays and blocks on cuda:0,
// poisoned outputs (NaN, or 0xFF bytes) so that unwritten elements are caught, host copies of
// results, and comparisons in which NaN never passes. Uploads and downloads synchronise the
// stream (tests favour simplicity over overlap), so host sources may be dropped right after.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/device_block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::test {

inline core::Device gpu() { return core::Device::cuda(0); }

// NaN for floating-point elements, all bits set (0xFF bytes) for integers.
template <class T>
T poison_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return static_cast<T>(~T{0});
  }
}

// rows x cols elements in device memory; views for the ops.
template <class T>
class DeviceMatrix {
 public:
  // Uninitialised.
  DeviceMatrix(int64_t rows, int64_t cols)
      : DeviceMatrix(core::Buffer<T>::on(gpu(), static_cast<std::size_t>(rows * cols)), rows, cols) {}
  // Takes `buffer`, which holds rows * cols elements.
  DeviceMatrix(core::Buffer<T> buffer, int64_t rows, int64_t cols)
      : buffer_(std::move(buffer)), rows_(rows), cols_(cols) {
    GNNPIPE_CHECK(buffer_.size() == static_cast<std::size_t>(rows * cols), "{} elements for a [{} x {}] matrix",
                  buffer_.size(), rows, cols);
  }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  core::Buffer<T>& buffer() { return buffer_; }
  const core::Buffer<T>& buffer() const { return buffer_; }
  models::MatrixView<T> view() { return {buffer_.data(), rows_, cols_}; }
  models::MatrixView<const T> cview() const { return {buffer_.data(), rows_, cols_}; }

 private:
  core::Buffer<T> buffer_;
  int64_t rows_;
  int64_t cols_;
};

// A device copy of `values`.
template <class T>
core::Buffer<T> to_device(std::span<const T> values, const core::Stream& stream) {
  auto staging = core::Buffer<T>::pinned(values.size());
  if (!values.empty()) std::memcpy(staging.data(), values.data(), values.size_bytes());
  auto device = core::Buffer<T>::on(gpu(), values.size());
  core::copy_async(device, staging, stream);
  stream.synchronize();  // before `staging` is freed
  return device;
}

template <class T>
DeviceMatrix<T> to_device(const models::Matrix<T>& m, const core::Stream& stream) {
  return DeviceMatrix<T>(to_device(m.flat(), stream), m.rows(), m.cols());
}

// An output whose every element is poison_value<T>().
template <class T>
DeviceMatrix<T> poisoned(int64_t rows, int64_t cols, const core::Stream& stream) {
  DeviceMatrix<T> d(rows, cols);
  core::fill_async(d.buffer(), poison_value<T>(), stream);
  return d;
}

// `n` poisoned elements (scratch and scalar outputs).
template <class T>
core::Buffer<T> poisoned_buffer(std::size_t n, const core::Stream& stream) {
  auto b = core::Buffer<T>::on(gpu(), n);
  core::fill_async(b, poison_value<T>(), stream);
  return b;
}

// A device pointer as a span for the ops' list arguments; never dereferenced on the host.
template <class T>
std::span<const T> device_span(const core::Buffer<T>& b) {
  return {b.data(), b.size()};
}

template <class T>
std::vector<T> to_host(const core::Buffer<T>& device, const core::Stream& stream) {
  auto staging = core::Buffer<T>::pinned(device.size());
  core::copy_async(staging, device, stream);
  stream.synchronize();
  const std::span<const T> values = std::as_const(staging).span();
  return {values.begin(), values.end()};
}

template <class T>
models::Matrix<T> to_host(const DeviceMatrix<T>& d, const core::Stream& stream) {
  return models::Matrix<T>(d.rows(), d.cols(), to_host(d.buffer(), stream));
}

// A copy of `host` whose arrays live in device memory (graph::DeviceBlockCopy's view: copies of
// the block keep the device memory alive). An unweighted block stays unweighted.
inline graph::Block to_device(const graph::Block& host, const core::Stream& stream) {
  return graph::DeviceBlockCopy(host, stream).block();
}

// `n` elements at device pointer `device` (e.g. a model's output view), copied to the host through
// pinned memory (an asynchronous copy into pageable memory is not what the runtime does).
template <class T>
std::vector<T> to_host(const T* device, std::size_t n, const core::Stream& stream) {
  auto staging = core::Buffer<T>::pinned(n);
  if (n > 0) core::copy_bytes_async(staging.data(), device, n * sizeof(T), stream);
  stream.synchronize();
  const std::span<const T> values = std::as_const(staging).span();
  return {values.begin(), values.end()};
}

// --- comparisons -----------------------------------------------------------------------------------

// Element i passes when |gpu[i] - cpu[i]| <= rel * (|cpu[i]| + scale (+ |scale_each[i]|)): relative
// for large values, absolute (rel * scale) near zero, where scale is the typical magnitude of the
// output. NaN or infinity in the GPU result never passes.
struct Tolerance {
  double rel = 0;
  double scale = 1;
};

// Per-element ops (one rounding or one libm call per element): a few ulps, with room to spare.
template <class T>
Tolerance elementwise_tolerance(double scale = 1) {
  return {std::is_same_v<T, float> ? 1e-5 : 1e-12, scale};
}

// Reductions over up to ~3000 terms (GEMM with K = 256, SpMM rows of 1500 edges, column sums of
// 3000 rows) summed in another order or with FMA: the rounding error grows with the number of terms
// (~ sqrt(n) u |partial sums| in practice).
template <class T>
Tolerance reduction_tolerance(double scale = 1) {
  return {std::is_same_v<T, float> ? 1e-4 : 1e-11, scale};
}

// The outcome of a comparison; Catch prints it when a CHECK on it fails.
struct Comparison {
  bool shapes_match = true;
  bool bitwise = false;      // from bitwise_equal: any difference fails, the first is shown
  int64_t cols = 1;          // to print the worst element as (row, col)
  std::size_t count = 0;     // elements compared
  std::size_t failures = 0;  // outside the bound, NaN included
  std::size_t worst = 0;     // the element with the largest error / bound
  double worst_ratio = -1;   // its error / bound (infinite for NaN)
  double gpu = 0, cpu = 0, bound = 0;

  explicit operator bool() const { return shapes_match && failures == 0; }
};

inline std::ostream& operator<<(std::ostream& os, const Comparison& c) {
  if (!c.shapes_match) return os << "shapes differ";
  const auto saved_precision = os.precision(17);  // doubles differing in the last digits
  struct Restore {
    std::ostream& os;
    std::streamsize precision;
    ~Restore() { os.precision(precision); }
  } restore{os, saved_precision};
  if (c.bitwise) {
    os << c.failures << " of " << c.count << " elements differ bitwise";
    if (c.failures > 0) {
      os << "; the first at (" << static_cast<int64_t>(c.worst) / c.cols << ", "
         << static_cast<int64_t>(c.worst) % c.cols << "): " << c.gpu << " vs " << c.cpu;
    }
    return os;
  }
  os << c.failures << " of " << c.count << " elements outside the bound";
  if (c.count > 0) {
    os << "; worst at (" << static_cast<int64_t>(c.worst) / c.cols << ", " << static_cast<int64_t>(c.worst) % c.cols
       << "): gpu " << c.gpu << ", cpu " << c.cpu << ", bound " << c.bound;
  }
  return os;
}

template <class T>
Comparison compare(std::span<const T> gpu_values, std::span<const T> cpu_values, Tolerance tol,
                   std::span<const T> scale_each = {}, int64_t cols = 1) {
  Comparison c;
  c.cols = cols > 0 ? cols : 1;
  c.shapes_match =
      gpu_values.size() == cpu_values.size() && (scale_each.empty() || scale_each.size() == cpu_values.size());
  if (!c.shapes_match) return c;
  c.count = cpu_values.size();
  for (std::size_t i = 0; i < c.count; ++i) {
    const double g = static_cast<double>(gpu_values[i]);
    const double r = static_cast<double>(cpu_values[i]);
    const double extra = scale_each.empty() ? 0.0 : std::abs(static_cast<double>(scale_each[i]));
    const double bound = tol.rel * (std::abs(r) + tol.scale + extra);
    const double error = std::abs(g - r);
    const bool ok = std::isfinite(g) && std::isfinite(r) && error <= bound;  // NaN compares false
    const double ratio = ok ? (bound > 0 ? error / bound : 0.0) : std::numeric_limits<double>::infinity();
    if (!ok) ++c.failures;
    if (ratio > c.worst_ratio) {
      c.worst_ratio = ratio;
      c.worst = i;
      c.gpu = g;
      c.cpu = r;
      c.bound = bound;
    }
  }
  return c;
}

template <class T>
Comparison compare(const models::Matrix<T>& gpu_result, const models::Matrix<T>& cpu_result, Tolerance tol) {
  if (gpu_result.rows() != cpu_result.rows() || gpu_result.cols() != cpu_result.cols()) return Comparison{false};
  return compare<T>(gpu_result.flat(), cpu_result.flat(), tol, {}, cpu_result.cols());
}

inline Comparison compare_values(double gpu_value, double cpu_value, Tolerance tol) {
  return compare<double>(std::span<const double>(&gpu_value, 1), std::span<const double>(&cpu_value, 1), tol);
}

// With an extra per-element scale (same shape): for outputs whose magnitude varies by element.
template <class T>
Comparison compare(const models::Matrix<T>& gpu_result, const models::Matrix<T>& cpu_result, Tolerance tol,
                   const models::Matrix<T>& scale_each) {
  if (gpu_result.rows() != cpu_result.rows() || gpu_result.cols() != cpu_result.cols()) return Comparison{false};
  return compare<T>(gpu_result.flat(), cpu_result.flat(), tol, scale_each.flat(), cpu_result.cols());
}

// Same shape and the same bytes in every element: determinism (two GPU runs) and dropout masks
// (GPU vs CPU).
template <class T>
Comparison bitwise_equal(const models::Matrix<T>& a, const models::Matrix<T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return Comparison{false};
  Comparison c;
  c.bitwise = true;
  c.cols = a.cols() > 0 ? a.cols() : 1;
  c.count = static_cast<std::size_t>(a.size());
  for (std::size_t i = 0; i < c.count; ++i) {
    if (std::memcmp(a.data() + i, b.data() + i, sizeof(T)) != 0 && c.failures++ == 0) {
      c.worst = i;
      c.gpu = static_cast<double>(a.data()[i]);
      c.cpu = static_cast<double>(b.data()[i]);
    }
  }
  return c;
}

}  // namespace gnnpipe::test
