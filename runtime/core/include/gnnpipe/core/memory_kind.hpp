#pragma once
// Raw, untyped allocation of the three kinds of memory a batch lives in. Buffer<T> is the typed
// owner most code should use; these functions are for owners that manage bytes (staging pools,
// caching allocators).
#include <cstddef>

#include "gnnpipe/core/device.hpp"

namespace gnnpipe::core {

enum class MemoryKind {
  kHost,    // pageable host memory, 64-byte aligned
  kPinned,  // page-locked host memory (fast, asynchronous H2D); plain host memory without a GPU
  kDevice,  // memory of `device`: device memory on cuda:N, host memory on the CPU backend
  // Host memory that the streams of `device` copy to and from (staging slots, bounce buffers,
  // results): kPinned when `device` is a GPU; plain host memory for the CPU, which a CPU stream may
  // copy like pinned memory (kPinned there would page-lock it whenever a GPU is present).
  kStaging,
};

const char* to_string(MemoryKind kind);

// One raw allocation and how to free it.
struct Allocation {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::kHost;
  Device device = Device::cpu();
  // True when the bytes live in host memory (kHost, kPinned, or kDevice on the CPU backend).
  bool host_accessible = true;
  // True when the bytes are page-locked (kPinned with a GPU present).
  bool page_locked = false;
};

// Allocates `bytes` (0 gives an empty allocation with ptr == nullptr). `device` matters for
// kDevice and kStaging only (kStaging for a GPU gives a kPinned allocation). Throws Error on host exhaustion, CudaError on a device failure (out of memory
// included).
Allocation allocate_bytes(MemoryKind kind, Device device, std::size_t bytes);
// The same, but a device that is out of memory gives an allocation with ptr == nullptr (and no
// CUDA error left behind), so a caller can free cached memory and try again.
Allocation try_allocate_bytes(MemoryKind kind, Device device, std::size_t bytes);

// Free and total memory of a GPU (cudaMemGetInfo); both 0 for the CPU.
struct DeviceMemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};
DeviceMemoryInfo device_memory_info(Device device);
// Frees what allocate_bytes returned; safe on an empty allocation. Never throws.
void free_bytes(const Allocation& allocation) noexcept;

class Stream;

// Copies `bytes` from `src` to `dst` in the order of `stream` (cudaMemcpyAsync with the direction
// inferred by unified addressing; a plain memcpy on the CPU backend). The caller keeps both
// ranges alive until the stream reaches this point. On a CUDA stream, host memory must be pinned
// (kPinned): pageable memory is refused with an Error, since the driver would stage it while the
// calling thread waits, outside stream order. Use the synchronous copies below for pageable data.
void copy_bytes_async(void* dst, const void* src, std::size_t bytes, const Stream& stream);

// Synchronous copies between pageable host memory and any memory `stream` can reach, staged
// through pinned memory in pieces of at most 64 MiB: for setup and results (parameters, a whole
// graph's arrays, test data), not for a hot path. Ordered after the work queued on `stream`
// before the call; they return once the copy is complete (the stream is synchronised).
void copy_from_host_sync(void* dst, const void* host_src, std::size_t bytes, const Stream& stream);
void copy_to_host_sync(void* host_dst, const void* src, std::size_t bytes, const Stream& stream);

// A cudaMemcpyAsync that accepts pageable host memory (the driver stages it and returns once the
// host side was read). Only for measuring what pageable copies cost (`gnnpipe doctor`).
void copy_bytes_pageable(void* dst, const void* src, std::size_t bytes, const Stream& stream);

// Fills `count` elements of `element_size` bytes (1, 2, 4 or 8) at `dst` with the bit pattern
// `pattern` (its low element_size bytes), in the order of `stream`. On a CUDA stream `dst` must be
// device or pinned memory (pageable host memory is refused with an Error).
void fill_bytes_async(void* dst, std::size_t count, std::size_t element_size, unsigned long long pattern,
                      const Stream& stream);

}  // namespace gnnpipe::core
