#include "gnnpipe/memory/caching_allocator.hpp"

#include <iterator>
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

BudgetCharge::BudgetCharge(BudgetCharge&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

BudgetCharge& BudgetCharge::operator=(BudgetCharge&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void BudgetCharge::release() noexcept {
  if (owner_ != nullptr) {
    const std::lock_guard lock(owner_->mutex_);
    owner_->stats_.in_use_bytes -= bytes_;
    owner_->charged_bytes_ -= bytes_;
  }
  owner_ = nullptr;
  bytes_ = 0;
}

std::size_t CachingAllocator::class_within(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  return bytes >= kMiB ? bytes / kMiB * kMiB : bytes / 512 * 512;
}

BudgetCharge CachingAllocator::charge(std::size_t bytes) {
  GNNPIPE_CHECK(bytes > 0, "CachingAllocator: a charge of 0 bytes");
  std::lock_guard lock(mutex_);
  if (over_budget_locked(bytes)) release_cached_locked(stats_.in_use_bytes + stats_.cached_bytes + bytes - budget_, false);
  if (over_budget_locked(bytes)) {
    GNNPIPE_THROW(OutOfBudget, "memory.limit: {} does not fit the budget of {} on {} ({} in use, {} cached)",
                  core::format_bytes(bytes), core::format_bytes(budget_), device_.str(),
                  core::format_bytes(stats_.in_use_bytes), core::format_bytes(stats_.cached_bytes));
  }
  stats_.in_use_bytes += bytes;
  charged_bytes_ += bytes;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  stats_.batch_peak_bytes = std::max(stats_.batch_peak_bytes, stats_.in_use_bytes);
  note_held_locked();
  BudgetCharge c;
  c.owner_ = this;
  c.bytes_ = bytes;
  return c;
}

CachingAllocator::CachingAllocator(core::Device device, std::size_t budget_bytes, AllocatorHooks hooks,
                                   AllocatorMode mode)
    : device_(device), budget_(budget_bytes), mode_(mode), make_fence_(std::move(hooks.fences)),
      driver_allocate_(std::move(hooks.driver_allocate)), driver_free_(std::move(hooks.driver_free)),
      driver_reclaim_(std::move(hooks.driver_reclaim)), driver_held_(std::move(hooks.driver_held)) {
  GNNPIPE_CHECK_CONFIG(budget_bytes >= 1, "memory.limit: must be >= 1 byte");
  stats_.budget_bytes = budget_bytes;
  if (!make_fence_) make_fence_ = event_fences(device);
  if (mode == AllocatorMode::kCaching) {
    if (!driver_allocate_) {
      driver_allocate_ = [device](std::size_t bytes, const core::Stream&) {
        return core::try_allocate_bytes(core::MemoryKind::kDevice, device, bytes);
      };
    }
    if (!driver_free_) driver_free_ = [](const core::Allocation& a, const core::Stream*) { core::free_bytes(a); };
    return;
  }
  if (!driver_allocate_ || !driver_free_ || !driver_reclaim_ || !driver_held_) {
    pool_ = std::make_unique<core::DevicePool>(device, budget_bytes);
  }
  core::DevicePool* const pool = pool_.get();
  if (!driver_allocate_) {
    driver_allocate_ = [pool](std::size_t bytes, const core::Stream& stream) { return pool->try_allocate(bytes, stream); };
  }
  if (!driver_free_) {
    driver_free_ = [pool](const core::Allocation& a, const core::Stream* stream) {
      if (stream != nullptr) pool->free(a, *stream);
    };
  }
  if (!driver_reclaim_) driver_reclaim_ = [pool] { pool->reclaim(); };
  if (!driver_held_) driver_held_ = [pool] { return pool->reserved(); };
}

std::size_t CachingAllocator::held_locked() const {
  if (mode_ == AllocatorMode::kCaching) return stats_.in_use_bytes + stats_.cached_bytes;
  try {
    return driver_held_() + charged_bytes_;
  } catch (const std::exception&) {
    // After a device fault the pool cannot be asked; statistics must not throw over the error
    // being reported: the books are the best figure left.
    return stats_.in_use_bytes;
  }
}

void CachingAllocator::note_held_locked() { stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held_locked()); }

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  if (!live_.empty()) {
    core::logger().error("CachingAllocator: destroyed with {} blocks still in use ({}); they are leaked", live_.size(),
                         core::format_bytes(stats_.in_use_bytes));
  }
  // Never throws: after a device fault every wait fails, and the fault was (or will be) reported
  // where it happened. Each block is still handed back (cudaFree itself waits for the device).
  bool reported = false;
  for (auto& [size, cached] : bins_) {
    try {
      cached.done->synchronize();
    } catch (const std::exception& e) {
      if (!reported) core::logger().warn("CachingAllocator: waiting for cached blocks at teardown failed: {}", e.what());
      reported = true;
    }
    driver_free_(cached.allocation, nullptr);
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

std::unique_ptr<FreeFence> CachingAllocator::take_fence_locked() {
  if (!fence_pool_.empty()) {
    auto fence = std::move(fence_pool_.back());
    fence_pool_.pop_back();
    return fence;
  }
  ++fences_created_;
  return make_fence_();
}

CachingAllocator::Bins::iterator CachingAllocator::release_locked(Bins::iterator it) {
  driver_free_(it->second.allocation, nullptr);
  stats_.cached_bytes -= it->first;
  ++stats_.driver_frees;
  fence_pool_.push_back(std::move(it->second.done));
  return bins_.erase(it);
}

std::size_t CachingAllocator::release_cached_locked(std::size_t wanted, bool wait) {
  std::size_t freed = 0;
  if (!wait) {
    for (auto it = bins_.begin(); it != bins_.end() && freed < wanted;) {
      if (!it->second.done->query()) {
        ++it;
        continue;
      }
      freed += it->first;
      it = release_locked(it);
    }
    return freed;
  }
  // Largest first: the fewest waits for the bytes wanted.
  while (!bins_.empty() && freed < wanted) {
    auto it = std::prev(bins_.end());
    it->second.done->synchronize();
    freed += it->first;
    release_locked(it);
  }
  return freed;
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
    fence_pool_.push_back(std::move(hit->second.done));
    bins_.erase(hit);
    stats_.cached_bytes -= size;
    ++stats_.cache_hits;
  } else {
    const auto excess = [&] { return stats_.in_use_bytes + stats_.cached_bytes + size - budget_; };
    if (over_budget_locked(size)) release_cached_locked(excess(), false);
    if (over_budget_locked(size) && stats_.in_use_bytes + size <= budget_) {
      // What is cached would make room once its work on other streams completes: wait for it
      // rather than fail a request whose fit would depend on another stream's timing.
      ++stats_.budget_waits;
      release_cached_locked(excess(), true);
    }
    if (over_budget_locked(size)) {
      GNNPIPE_THROW(OutOfBudget,
                    "memory.limit: a request of {} does not fit the budget of {} on {} ({} in use, {} cached)",
                    core::format_bytes(size), core::format_bytes(budget_), device_.str(),
                    core::format_bytes(stats_.in_use_bytes), core::format_bytes(stats_.cached_bytes));
    }
    allocation = driver_allocate_(size, stream);
    if (allocation.ptr == nullptr) {
      // The driver has less than our books say (another process, a reserve too small; async: the
      // pool's memory is fragmented, or held by frees still pending on other streams): give it
      // every cached block back, waiting for pending ones (async: for every stream, and the pool
      // returns what it keeps), and try once more.
      ++stats_.driver_out_of_memory;
      release_cached_locked(static_cast<std::size_t>(-1), true);
      if (mode_ == AllocatorMode::kAsync) driver_reclaim_();
      allocation = driver_allocate_(size, stream);
    }
    if (allocation.ptr == nullptr && mode_ == AllocatorMode::kAsync) {
      GNNPIPE_THROW(OutOfBudget,
                    "memory.limit: the cudaMallocAsync pool (capped at the budget, {}) cannot place a request of {} "
                    "on {} ({} in use by this run, {} held by the pool): the device is full or the pool fragmented; "
                    "raise memory.reserve or use memory.allocator: caching",
                    core::format_bytes(budget_), core::format_bytes(size), device_.str(),
                    core::format_bytes(stats_.in_use_bytes), core::format_bytes(held_locked() - charged_bytes_));
    }
    if (allocation.ptr == nullptr) {
      GNNPIPE_THROW(OutOfBudget,
                    "memory.limit: the driver is out of device memory for a request of {} on {} ({} in use by this "
                    "run, budget {}): lower memory.limit or raise memory.reserve",
                    core::format_bytes(size), device_.str(), core::format_bytes(stats_.in_use_bytes),
                    core::format_bytes(budget_));
    }
    ++stats_.driver_allocations;
  }
  live_[allocation.ptr] = Live{allocation, &stream};
  in_use_by_stream_[&stream] += size;
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  stats_.batch_peak_bytes = std::max(stats_.batch_peak_bytes, stats_.in_use_bytes);
  note_held_locked();
  DeviceBlock block;
  block.owner_ = this;
  block.ptr_ = allocation.ptr;
  block.size_ = size;
  block.stream_ = &stream;
  return block;
}

void CachingAllocator::give_back(void* ptr, std::size_t size, const core::Stream* stream) noexcept {
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    core::logger().error("CachingAllocator: a block of {} freed twice or not ours", core::format_bytes(size));
    return;
  }
  const core::Allocation allocation = it->second.allocation;
  auto& on_stream = in_use_by_stream_[it->second.stream];
  on_stream -= size;
  if (on_stream == 0) in_use_by_stream_.erase(it->second.stream);
  const core::Stream* const last_used = stream != nullptr ? stream : it->second.stream;
  live_.erase(it);
  stats_.in_use_bytes -= size;
  if (mode_ == AllocatorMode::kAsync) {
    // The pool orders the free after the stream's work and keeps the memory for reuse.
    driver_free_(allocation, last_used);
    ++stats_.driver_frees;
    return;
  }
  try {
    auto done = take_fence_locked();
    done->record(*last_used);
    bins_.emplace(size, Cached{allocation, last_used, std::move(done)});
    stats_.cached_bytes += size;
  } catch (const std::exception& e) {
    // The free cannot be ordered after the stream's work (after a device fault, every record
    // fails): hand the block straight back; cudaFree waits for the device, so nothing still
    // running can see the memory reused.
    if (!unordered_free_logged_) {
      core::logger().warn("CachingAllocator: a free could not be stream-ordered ({}); such blocks go back to the driver",
                          e.what());
    }
    unordered_free_logged_ = true;
    driver_free_(allocation, nullptr);
    ++stats_.driver_frees;
  }
}

void CachingAllocator::release_cached() {
  std::lock_guard lock(mutex_);
  release_cached_locked(static_cast<std::size_t>(-1), false);
}

std::size_t CachingAllocator::in_use_bytes_on(const core::Stream& stream) const {
  std::lock_guard lock(mutex_);
  const auto it = in_use_by_stream_.find(&stream);
  return it == in_use_by_stream_.end() ? 0 : it->second;
}

std::size_t CachingAllocator::fences_created() const {
  std::lock_guard lock(mutex_);
  return fences_created_;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  AllocatorStats s = stats_;
  s.held_bytes = held_locked();
  return s;
}

void CachingAllocator::reset_batch_peak() {
  std::lock_guard lock(mutex_);
  stats_.batch_peak_bytes = stats_.in_use_bytes;
}

}  // namespace gnnpipe::memory
