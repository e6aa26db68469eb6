#include "gnnpipe/memory/caching_allocator.hpp"

#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::memory {

DeviceBlock::DeviceBlock(DeviceBlock&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      stream_(std::exchange(other.stream_, nullptr)) {}

DeviceBlock& DeviceBlock::operator=(DeviceBlock&& other) noexcept {
  if (this != &other) {
    free();
    owner_ = std::exchange(other.owner_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void DeviceBlock::free() noexcept {
  if (owner_ != nullptr && ptr_ != nullptr) owner_->give_back(ptr_, size_, stream_);
  owner_ = nullptr;
  ptr_ = nullptr;
  size_ = 0;
}

CachingAllocator::CachingAllocator(core::Device device, std::size_t budget_bytes) : device_(device), budget_(budget_bytes) {
  GNNPIPE_CHECK_CONFIG(budget_bytes >= 1, "memory.limit: must be >= 1 byte");
  stats_.budget_bytes = budget_bytes;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  if (!live_.empty()) {
    core::logger().error("CachingAllocator: destroyed with {} blocks still in use ({}); they are leaked", live_.size(),
                         core::format_bytes(stats_.in_use_bytes));
  }
  for (auto& [size, cached] : bins_) {
    if (cached.done) cached.done->synchronize();
    core::free_bytes(cached.allocation);
  }
}

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = std::size_t{1} << 20;
  if (bytes <= kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

bool CachingAllocator::reusable(const Cached& c, const core::Stream& stream) const {
  return c.stream == &stream || c.done->query();
}

void CachingAllocator::release_cached_locked(std::size_t wanted) {
  std::size_t freed = 0;
  for (auto it = bins_.begin(); it != bins_.end() && freed < wanted;) {
    if (!it->second.done->query()) {
      ++it;
      continue;
    }
    core::free_bytes(it->second.allocation);
    freed += it->first;
    stats_.cached_bytes -= it->first;
    ++stats_.driver_frees;
    it = bins_.erase(it);
  }
}

DeviceBlock CachingAllocator::allocate(std::size_t bytes, const core::Stream& stream) {
  GNNPIPE_CHECK(bytes > 0, "CachingAllocator: a request of 0 bytes");
  const std::size_t size = size_class(bytes);
  std::lock_guard lock(mutex_);
  ++stats_.requests;
  core::Allocation allocation;
  const auto [first, last] = bins_.equal_range(size);
  auto hit = last;
  for (auto it = first; it != last; ++it) {
    if (reusable(it->second, stream)) {
      hit = it;
      break;
    }
  }
  if (hit != last) {
    allocation = hit->second.allocation;
    bins_.erase(hit);
    stats_.cached_bytes -= size;
    ++stats_.cache_hits;
  } else {
    if (stats_.in_use_bytes + stats_.cached_bytes + size > budget_) {
      release_cached_locked(stats_.in_use_bytes + stats_.cached_bytes + size - budget_);
    }
    if (stats_.in_use_bytes + stats_.cached_bytes + size > budget_) {
      GNNPIPE_THROW(OutOfBudget,
                    "memory.limit: a request of {} does not fit the budget of {} on {} ({} in use, {} cached and still "
                    "in flight)",
                    core::format_bytes(size), core::format_bytes(budget_), device_.str(),
                    core::format_bytes(stats_.in_use_bytes), core::format_bytes(stats_.cached_bytes));
    }
    allocation = core::allocate_bytes(core::MemoryKind::kDevice, device_, size);
    ++stats_.driver_allocations;
  }
  live_[allocation.ptr] = allocation;
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  stats_.batch_peak_bytes = std::max(stats_.batch_peak_bytes, stats_.in_use_bytes);
  DeviceBlock block;
  block.owner_ = this;
  block.ptr_ = allocation.ptr;
  block.size_ = size;
  block.stream_ = &stream;
  return block;
}

void CachingAllocator::give_back(void* ptr, std::size_t size, const core::Stream* stream) noexcept {
  try {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      core::logger().error("CachingAllocator: a block of {} freed twice or not ours", core::format_bytes(size));
      return;
    }
    auto done = std::make_unique<core::Event>(device_);
    done->record(*stream);
    bins_.emplace(size, Cached{it->second, stream, std::move(done)});
    live_.erase(it);
    stats_.in_use_bytes -= size;
    stats_.cached_bytes += size;
  } catch (const std::exception& e) {
    core::logger().error("CachingAllocator: freeing a block failed: {}", e.what());
  }
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked(static_cast<std::size_t>(-1));
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_batch_peak() {
  std::lock_guard lock(mutex_);
  stats_.batch_peak_bytes = stats_.in_use_bytes;
}

}  // namespace gnnpipe::memory
