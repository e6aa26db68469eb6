#pragma once
// DevicePool: a stream-ordered memory pool of one device (cudaMallocAsync's memory pools), the
// driver side of `memory.allocator: async` (memory::CachingAllocator keeps the books and the
// budget either way).
//  - Memory freed on a stream is reused at once by later allocations on that stream (stream order
//    protects it) and by other streams once the free has completed; the pool keeps freed memory
//    for reuse instead of returning it at every synchronisation.
//  - The pool never holds more than `max_bytes` from the driver (cudaMemPoolProps::maxSize): an
//    allocation that would grow it past that fails (ptr == nullptr) instead, so the budget holds on
//    the driver's side too, including memory the pool keeps for reuse. The driver grows a pool in
//    32 MiB reservations and lets one pass a smaller cap (the H200 with CUDA 13, 2026-11-27: pools
//    capped at 114,240 B, 4 MiB and 6 MiB each held 32 MiB; one capped at 64 MiB held at most 64),
//    so on a GPU the cap is `max_bytes` rounded down to whole kPoolPageBytes, and a `max_bytes`
//    below one is refused (ConfigError naming memory.allocator).
//  - CPU backend: allocations are plain host memory, freed at once (a CPU stream's order is program
//    order); reserved() is the bytes allocated and not freed. So the allocator's logic around it is
//    the same, and tested, without a GPU.
// Thread-safe.
#include <atomic>
#include <cstddef>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/memory_kind.hpp"

namespace gnnpipe::core {

class Stream;

// The unit in which a GPU's stream-ordered pool reserves device memory (measured, not documented
// by NVIDIA: see above).
inline constexpr std::size_t kPoolPageBytes = std::size_t{32} << 20;

// The most a pool of `device` capped near `max_bytes` may hold: `max_bytes` itself on the CPU
// (no units there), whole kPoolPageBytes of it on a GPU; ConfigError naming memory.allocator when
// a GPU's is below one unit.
std::size_t pool_cap(Device device, std::size_t max_bytes);

class DevicePool {
 public:
  // Throws CudaError when the device is unavailable or the driver refuses the pool, ConfigError
  // (naming memory.allocator) when the device has no memory pools or, on a GPU, `max_bytes` (0:
  // the driver's cap) is below kPoolPageBytes.
  DevicePool(Device device, std::size_t max_bytes);
  ~DevicePool();  // the driver releases the memory once outstanding frees have completed
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  Device device() const { return device_; }
  // `bytes` (> 0) for work on `stream` (a stream of this pool's device). An allocation with
  // ptr == nullptr when the pool cannot grow (its cap, or the device out of memory), with no CUDA
  // error left behind; CudaError on any other failure.
  Allocation try_allocate(std::size_t bytes, const Stream& stream);
  // Frees `allocation` in the order of `stream`: after the work queued on it so far. Never throws.
  void free(const Allocation& allocation, const Stream& stream) noexcept;
  // Waits for every stream of the device (so that every free has completed) and returns the pool's
  // unused memory to the driver: what an allocation that failed tries before failing for good.
  void reclaim();
  // Bytes the pool holds from the driver (in use and kept for reuse).
  std::size_t reserved() const;

 private:
  Device device_;
  void* handle_ = nullptr;  // cudaMemPool_t; nullptr on the CPU backend
  std::atomic<std::size_t> host_bytes_{0};  // CPU backend: allocated and not freed
};

}  // namespace gnnpipe::core
