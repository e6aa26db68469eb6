#include "gnnpipe/core/device_pool.hpp"

#include "backend.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::core {

DevicePool::DevicePool(Device device, std::size_t max_bytes) : device_(device) {
  if (device.is_cpu()) return;
  device.require_available();
  GNNPIPE_CHECK_CONFIG(backend::pools_supported(device.index()),
                       "memory.allocator: async needs stream-ordered memory pools, which {} does not support "
                       "(some drivers and virtualised GPUs lack them): use memory.allocator: caching",
                       device.str());
  // Whole units, so that what the driver holds stays within the budget (0: the driver's cap).
  handle_ = backend::pool_create(device.index(), max_bytes == 0 ? 0 : pool_cap(device, max_bytes));
}

std::size_t pool_cap(Device device, std::size_t max_bytes) {
  if (device.is_cpu()) return max_bytes;
  GNNPIPE_CHECK_CONFIG(max_bytes >= kPoolPageBytes,
                       "memory.allocator: async on {} needs a budget of at least {} (its pool reserves device memory "
                       "in units of that size), not {}: raise memory.limit or use memory.allocator: caching",
                       device.str(), format_bytes(kPoolPageBytes), format_bytes(max_bytes));
  return max_bytes / kPoolPageBytes * kPoolPageBytes;
}

DevicePool::~DevicePool() {
  if (handle_ != nullptr) backend::pool_destroy(device_.index(), handle_);
}

Allocation DevicePool::try_allocate(std::size_t bytes, const Stream& stream) {
  GNNPIPE_CHECK(bytes > 0, "DevicePool: a request of 0 bytes");
  GNNPIPE_CHECK(stream.device() == device_, "DevicePool of {}: a request for a stream of {}", device_.str(),
                stream.device().str());
  if (handle_ == nullptr) {
    Allocation a = try_allocate_bytes(MemoryKind::kDevice, device_, bytes);
    host_bytes_ += bytes;
    return a;
  }
  Allocation a;
  a.kind = MemoryKind::kDevice;
  a.device = device_;
  a.host_accessible = false;
  a.ptr = backend::pool_malloc_async(device_.index(), handle_, bytes, stream.native_handle());
  a.bytes = a.ptr == nullptr ? 0 : bytes;
  return a;
}

void DevicePool::free(const Allocation& allocation, const Stream& stream) noexcept {
  if (allocation.ptr == nullptr) return;
  if (handle_ == nullptr) {
    free_bytes(allocation);
    host_bytes_ -= allocation.bytes;
    return;
  }
  backend::pool_free_async(device_.index(), allocation.ptr, stream.native_handle());
}

void DevicePool::reclaim() {
  if (handle_ == nullptr) return;
  backend::device_synchronize(device_.index());
  backend::pool_trim(device_.index(), handle_);
}

std::size_t DevicePool::reserved() const {
  return handle_ == nullptr ? host_bytes_.load() : backend::pool_reserved(handle_);
}

}  // namespace gnnpipe::core
