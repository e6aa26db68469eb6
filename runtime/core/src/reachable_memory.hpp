#pragma once
// Internal to gnnpipe::core: the CPU backend's record of the host memory a stream may touch, so
// that it enforces the GPU's rule without a GPU. On a CUDA stream a copy or fill refuses pageable
// host memory (the driver would stage it outside stream order; a kernel cannot write it); the CPU
// backend's "device" and "pinned" memory are plain host memory, so it cannot tell them apart by
// address. allocate_bytes records every kDevice and kPinned allocation in host memory here and
// free_bytes forgets it; a copy or fill on a CPU stream checks that its ranges lie inside recorded
// allocations. A pageable std::vector or Buffer<kHost> passed to copy_bytes_async is then an
// Error in the CPU tests too, instead of only on the first GPU that runs that path (issue #19
// found two this way, in the mid-epoch checkpoint's losses).
// Thread-safe: allocations come and go on every thread (a shared lock for the lookups).
#include <cstddef>

namespace gnnpipe::core::detail {

void record_reachable(const void* ptr, std::size_t bytes);
void forget_reachable(const void* ptr) noexcept;
// True when [ptr, ptr + bytes) lies inside one recorded allocation.
bool reachable(const void* ptr, std::size_t bytes);

}  // namespace gnnpipe::core::detail
