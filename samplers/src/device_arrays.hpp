#pragma once
// Device arrays of the GPU samplers' workspaces. Private to gnnpipe::samplers.
#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"
#include "neighbor_kernels.hpp"

namespace gnnpipe::samplers::detail {

// A device array that grows (doubling) and keeps its first `keep` elements when it does.
template <class T>
class GrowingArray {
 public:
  T* reserve(std::size_t n, std::size_t keep, core::Device device, const core::Stream& stream) {
    if (buffer_.size() < n) {
      core::Buffer<T> bigger = core::Buffer<T>::on(device, std::max(n, 2 * buffer_.size()));
      if (keep > 0) core::copy_async(bigger, 0, buffer_, 0, keep, stream);
      stream.synchronize();  // the old array is read until here
      buffer_ = std::move(bigger);
    }
    return buffer_.data();
  }
  T* data() { return buffer_.data(); }

 private:
  core::Buffer<T> buffer_;
};

// A stream, scan scratch and small reads: what every GPU sampler's workspace has.
struct DeviceScratch {
  explicit DeviceScratch(core::Device on) : device(on), stream(on) {}
  core::Device device;
  core::Stream stream;
  GrowingArray<std::byte> temp;

  // Scratch for a scan of n elements.
  std::pair<void*, std::size_t> scan_temp(int64_t n) {
    const std::size_t bytes = std::max<std::size_t>(1, kernels::scan_temp_bytes(std::max<int64_t>(1, n)));
    return {temp.reserve(bytes, 0, device, stream), bytes};
  }
  // out[0..n] = the exclusive scan of in[0..n) from `init`.
  template <class T>
  void scan(const T* in, T* out, int64_t n, T init) {
    auto [scratch, bytes] = scan_temp(n);
    kernels::exclusive_scan(in, out, n, init, scratch, bytes, stream.native_handle());
  }
  // One value from the device, once the stream reaches it.
  template <class T>
  T read(const T* device_value) {
    T value{};
    core::copy_to_host_sync(&value, device_value, sizeof(T), stream);
    return value;
  }
  // `n` values from the device.
  template <class T>
  std::vector<T> read(const T* device_values, std::size_t n) {
    std::vector<T> out(n);
    if (n > 0) core::copy_to_host_sync(out.data(), device_values, n * sizeof(T), stream);
    return out;
  }
  // A host array on the device (setup: tables, seeds).
  template <class T>
  core::Buffer<T> upload(std::span<const T> host) {
    core::Buffer<T> out = core::Buffer<T>::on(device, std::max<std::size_t>(1, host.size()));
    if (!host.empty()) core::copy_from_host_sync(out.data(), host.data(), host.size_bytes(), stream);
    return out;
  }
};

}  // namespace gnnpipe::samplers::detail
