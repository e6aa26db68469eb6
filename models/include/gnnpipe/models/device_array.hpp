#pragma once
// DeviceArray<T>: a growable array in the memory of an OpContext (device memory on CUDA, host
// memory on the CPU), for the activations and workspaces the layers keep between forward and
// backward. ensure() grows it (never shrinks), so a steady run stops allocating after its largest
// batch; memory comes from the context's caching allocator when it has one (then the run's
// budget applies: OutOfBudget), else from the driver. Contents are undefined after a growth.
// Move-only; not thread-safe.
#include <cstddef>
#include <type_traits>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/op_context.hpp"

namespace gnnpipe::models {

template <class T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray<T> holds trivially copyable elements");

 public:
  DeviceArray() = default;

  // At least `n` elements in ctx's memory; returns the data pointer (nullptr when n == 0 and
  // nothing was allocated yet). Reallocation frees the old memory in the order of ctx's stream.
  T* ensure(const OpContext& ctx, std::size_t n) { return ensure(ctx.allocator(), ctx.stream(), n); }

  // The same for memory used on `stream` (a copy stream, say) from `allocator` (the driver when
  // null). The old memory's free is ordered after the work queued on `stream` so far: a caller
  // whose other streams read it makes `stream` wait for them first.
  T* ensure(memory::CachingAllocator* allocator, const core::Stream& stream, std::size_t n) {
    if (n <= capacity_) return data();
    capacity_ = 0;
    if (block_) block_.use_on(stream);
    block_ = memory::DeviceBlock{};
    buffer_ = core::Buffer<T>{};
    if (allocator != nullptr) {
      block_ = allocator->allocate(n * sizeof(T), stream);
      block_.use_on(stream);
    } else {
      buffer_ = core::Buffer<T>(n, core::MemoryKind::kDevice, stream.device());
    }
    capacity_ = n;
    return data();
  }

  // Gives the memory back (to the allocator's cache, in the order of `stream`, the last stream
  // that used it): capacity 0, as if newly constructed. The memory governor's trim.
  void release(const core::Stream& stream) {
    if (block_) block_.use_on(stream);
    block_ = memory::DeviceBlock{};
    buffer_ = core::Buffer<T>{};
    capacity_ = 0;
  }

  // ensure() for rows x cols elements, viewed as a row-major matrix.
  MatrixView<T> matrix(const OpContext& ctx, int64_t rows, int64_t cols) {
    return {ensure(ctx, static_cast<std::size_t>(rows * cols)), rows, cols};
  }
  // A view of the first rows x cols elements (no growth: they must fit).
  MatrixView<T> view(int64_t rows, int64_t cols) { return {data(), rows, cols}; }
  MatrixView<const T> view(int64_t rows, int64_t cols) const { return {data(), rows, cols}; }

  T* data() { return block_ ? static_cast<T*>(block_.data()) : buffer_.data(); }
  const T* data() const { return block_ ? static_cast<const T*>(block_.data()) : buffer_.data(); }
  std::size_t capacity() const { return capacity_; }

 private:
  memory::DeviceBlock block_;
  core::Buffer<T> buffer_;
  std::size_t capacity_ = 0;
};

}  // namespace gnnpipe::models
