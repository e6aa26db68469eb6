#pragma once
// Buffer<T>: a move-only owner of `size()` elements of T in host, pinned host or device memory.
// Contents are uninitialised after construction (fill_async or a copy sets them). Copies between
// buffers are explicit and stream-ordered (copy_async); there is no implicit copy constructor.
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"

namespace gnnpipe::core {

template <class T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "Buffer<T> holds trivially copyable elements");

 public:
  Buffer() = default;
  // Allocates `size` elements of `kind` memory; `device` matters for MemoryKind::kDevice.
  Buffer(std::size_t size, MemoryKind kind, Device device = Device::cpu())
      : alloc_(allocate_bytes(kind, device, size * sizeof(T))), size_(size) {}
  static Buffer host(std::size_t size) { return Buffer(size, MemoryKind::kHost); }
  static Buffer pinned(std::size_t size) { return Buffer(size, MemoryKind::kPinned); }
  static Buffer on(Device device, std::size_t size) { return Buffer(size, MemoryKind::kDevice, device); }

  Buffer(Buffer&& other) noexcept : alloc_(std::exchange(other.alloc_, Allocation{})), size_(std::exchange(other.size_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      free_bytes(alloc_);
      alloc_ = std::exchange(other.alloc_, Allocation{});
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { free_bytes(alloc_); }

  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  MemoryKind kind() const { return alloc_.kind; }
  Device device() const { return alloc_.device; }
  bool host_accessible() const { return alloc_.host_accessible; }
  bool page_locked() const { return alloc_.page_locked; }

  // Raw pointer for kernels and copies; valid on the buffer's device.
  T* data() { return static_cast<T*>(alloc_.ptr); }
  const T* data() const { return static_cast<const T*>(alloc_.ptr); }

  // Host view. Throws Error for device memory that the host cannot read.
  std::span<T> span() {
    require_host();
    return {data(), size_};
  }
  std::span<const T> span() const {
    require_host();
    return {data(), size_};
  }

 private:
  void require_host() const {
    GNNPIPE_CHECK(alloc_.host_accessible, "buffer of {} elements lives in {} memory on {}: copy it to the host first",
                  size_, to_string(alloc_.kind), alloc_.device.str());
  }

  Allocation alloc_;
  std::size_t size_ = 0;
};

// Copies `count` elements from src[src_offset..] to dst[dst_offset..] in the order of `stream`.
// Throws Error when a range falls outside its buffer.
template <class T>
void copy_async(Buffer<T>& dst, std::size_t dst_offset, const Buffer<T>& src, std::size_t src_offset,
                std::size_t count, const Stream& stream) {
  GNNPIPE_CHECK(dst_offset <= dst.size() && count <= dst.size() - dst_offset,
                "copy of {} elements at offset {} overruns the destination of {}", count, dst_offset, dst.size());
  GNNPIPE_CHECK(src_offset <= src.size() && count <= src.size() - src_offset,
                "copy of {} elements at offset {} overruns the source of {}", count, src_offset, src.size());
  GNNPIPE_CHECK(stream.device().is_cuda() || (dst.host_accessible() && src.host_accessible()),
                "a stream on {} cannot copy {} memory to {} memory of another device", stream.device().str(),
                to_string(src.kind()), to_string(dst.kind()));
  copy_bytes_async(dst.data() + dst_offset, src.data() + src_offset, count * sizeof(T), stream);
}

// Copies the whole of `src` into `dst`; the sizes must match.
template <class T>
void copy_async(Buffer<T>& dst, const Buffer<T>& src, const Stream& stream) {
  GNNPIPE_CHECK(dst.size() == src.size(), "copy between buffers of {} and {} elements", dst.size(), src.size());
  copy_async(dst, 0, src, 0, src.size(), stream);
}

// Sets every element of `dst` to `value`, in the order of `stream`.
template <class T>
void fill_async(Buffer<T>& dst, T value, const Stream& stream) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "fill_async supports elements of 1, 2, 4 or 8 bytes");
  GNNPIPE_CHECK(stream.device().is_cuda() || dst.host_accessible(), "a stream on {} cannot fill {} memory of {}",
                stream.device().str(), to_string(dst.kind()), dst.device().str());
  unsigned long long pattern = 0;  // x86-64 and CUDA are little-endian: the low bytes come first
  std::memcpy(&pattern, &value, sizeof(T));
  fill_bytes_async(dst.data(), dst.size(), sizeof(T), pattern, stream);
}

}  // namespace gnnpipe::core
