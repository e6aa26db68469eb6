#include "gnnpipe/core/memory_kind.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "backend.hpp"
#include "reachable_memory.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::core {
namespace {

constexpr std::size_t kHostAlignment = 64;  // a cache line; also enough for any SIMD load

void* host_malloc(std::size_t bytes) {
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* ptr = std::aligned_alloc(kHostAlignment, rounded);
  GNNPIPE_CHECK(ptr != nullptr, "out of host memory allocating {} bytes", bytes);
  return ptr;
}

}  // namespace

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host";
    case MemoryKind::kPinned: return "pinned host";
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kStaging: return "staging host";
  }
  return "unknown";
}

Allocation allocate_bytes(MemoryKind kind, Device device, std::size_t bytes) {
  Allocation a = try_allocate_bytes(kind, device, bytes);
  GNNPIPE_CHECK_AS(CudaError, bytes == 0 || a.ptr != nullptr, "{}: out of device memory allocating {}", device.str(),
                   format_bytes(bytes));
  return a;
}

DeviceMemoryInfo device_memory_info(Device device) {
  DeviceMemoryInfo info;
  if (device.is_cpu()) return info;
  device.require_available();
  backend::device_memory_info(device.index(), info.free_bytes, info.total_bytes);
  return info;
}

Allocation try_allocate_bytes(MemoryKind kind, Device device, std::size_t bytes) {
  if (kind == MemoryKind::kStaging && device.is_cuda()) kind = MemoryKind::kPinned;
  Allocation a;
  a.kind = kind;
  a.bytes = bytes;
  a.device = kind == MemoryKind::kDevice ? device : Device::cpu();
  a.host_accessible = !(kind == MemoryKind::kDevice && device.is_cuda());
  if (kind == MemoryKind::kDevice) device.require_available();
  // Pinned memory needs a driver; without a GPU it degrades to plain host memory, which is all
  // the CPU backend needs (its copies are memcpy).
  a.page_locked = kind == MemoryKind::kPinned && cuda_available();
  if (bytes == 0) return a;
  if (!a.host_accessible) {
    a.ptr = backend::device_malloc(device.index(), bytes);
  } else if (a.page_locked) {
    a.ptr = backend::pinned_malloc(bytes);
  } else {
    a.ptr = host_malloc(bytes);
  }
  // The CPU backend's device memory and pinned memory: what a CPU stream may copy or fill.
  if (a.host_accessible && kind != MemoryKind::kHost) detail::record_reachable(a.ptr, bytes);
  return a;
}

void free_bytes(const Allocation& a) noexcept {
  if (a.ptr == nullptr) return;
  if (a.host_accessible && a.kind != MemoryKind::kHost) detail::forget_reachable(a.ptr);
  if (!a.host_accessible) {
    backend::device_free(a.device.index(), a.ptr);
  } else if (a.page_locked) {
    backend::pinned_free(a.ptr);
  } else {
    std::free(a.ptr);
  }
}

namespace {

// The CUDA backend's rule on a CPU stream: `ptr` must be device or pinned memory (see
// reachable_memory.hpp). `what`: "reads" or "writes".
void check_reachable(const void* ptr, std::size_t bytes, const char* what) {
  GNNPIPE_CHECK(detail::reachable(ptr, bytes),
                "a copy of {} bytes on a cpu stream {} pageable host memory (a CUDA stream refuses it): stage it "
                "through pinned memory (MemoryKind::kPinned, or core::copy_from_host_sync / copy_to_host_sync)",
                bytes, what);
}

void copy_bytes(void* dst, const void* src, std::size_t bytes, const Stream& stream, bool allow_pageable) {
  if (bytes == 0) return;
  GNNPIPE_CHECK(dst != nullptr && src != nullptr, "copy of {} bytes with a null pointer", bytes);
  if (stream.native_handle() == nullptr) {
    if (!allow_pageable) {
      check_reachable(src, bytes, "reads");
      check_reachable(dst, bytes, "writes");
    }
    std::memmove(dst, src, bytes);  // CPU backend: inline, and overlap-safe
    return;
  }
  backend::memcpy_async(stream.device().index(), dst, src, bytes, stream.native_handle(), allow_pageable);
}

// Pinned staging memory for the synchronous copies, freed on scope exit.
struct PinnedStaging {
  explicit PinnedStaging(std::size_t bytes) : allocation(allocate_bytes(MemoryKind::kPinned, Device::cpu(), bytes)) {}
  ~PinnedStaging() { free_bytes(allocation); }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(allocation.ptr); }
  Allocation allocation;
};

constexpr std::size_t kStagingPiece = std::size_t{64} << 20;  // bounds the pinned memory of a sync copy

}  // namespace

void copy_bytes_async(void* dst, const void* src, std::size_t bytes, const Stream& stream) {
  copy_bytes(dst, src, bytes, stream, false);
}

void copy_bytes_pageable(void* dst, const void* src, std::size_t bytes, const Stream& stream) {
  copy_bytes(dst, src, bytes, stream, true);
}

void copy_from_host_sync(void* dst, const void* host_src, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  GNNPIPE_CHECK(dst != nullptr && host_src != nullptr, "copy of {} bytes with a null pointer", bytes);
  if (stream.native_handle() == nullptr) {
    check_reachable(dst, bytes, "writes");  // the source may be pageable: that is this copy's purpose
    std::memmove(dst, host_src, bytes);
    return;
  }
  const PinnedStaging staging(std::min(bytes, kStagingPiece));
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(kStagingPiece, bytes - done);
    if (done > 0) stream.synchronize();  // the previous piece has left the staging memory
    std::memcpy(staging.data(), static_cast<const std::byte*>(host_src) + done, n);
    copy_bytes(static_cast<std::byte*>(dst) + done, staging.data(), n, stream, false);
    done += n;
  }
  stream.synchronize();
}

void copy_to_host_sync(void* host_dst, const void* src, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  GNNPIPE_CHECK(host_dst != nullptr && src != nullptr, "copy of {} bytes with a null pointer", bytes);
  if (stream.native_handle() == nullptr) {
    check_reachable(src, bytes, "reads");  // the destination may be pageable
    std::memmove(host_dst, src, bytes);
    return;
  }
  const PinnedStaging staging(std::min(bytes, kStagingPiece));
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(kStagingPiece, bytes - done);
    copy_bytes(staging.data(), static_cast<const std::byte*>(src) + done, n, stream, false);
    stream.synchronize();
    std::memcpy(static_cast<std::byte*>(host_dst) + done, staging.data(), n);
    done += n;
  }
}

void fill_bytes_async(void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                      const Stream& stream) {
  GNNPIPE_CHECK(element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8,
                "fill supports elements of 1, 2, 4 or 8 bytes, not {}", element_size);
  if (count == 0) return;
  GNNPIPE_CHECK(dst != nullptr, "fill of {} elements into a null pointer", count);
  if (stream.native_handle() != nullptr) {
    backend::fill_async(stream.device().index(), dst, count, element_size, pattern, stream.native_handle());
    return;
  }
  GNNPIPE_CHECK(detail::reachable(dst, count * element_size),
                "a fill of {} elements on a cpu stream into pageable host memory (a CUDA stream refuses it: a kernel "
                "cannot write it): fill device or pinned memory",
                count);
  auto* out = static_cast<unsigned char*>(dst);
  for (std::size_t i = 0; i < count; ++i) std::memcpy(out + i * element_size, &pattern, element_size);
}

}  // namespace gnnpipe::core
