#pragma once
// CachingAllocator: device memory for a run, under a hard budget (docs/DESIGN.md §4, `memory.limit`).
//  - Sizes are rounded to size classes (512 B steps up to 1 MiB, then 1 MiB steps) and freed blocks
//    are kept in per-class bins for reuse, so a steady run stops calling the driver after warm-up.
//  - Stream-ordered reuse: a block freed on stream S is reusable at once by later work on S (stream
//    order protects it) and by other streams only after an event recorded at the free has completed.
//  - The budget counts bytes the driver holds for us (in use + cached). A request that would exceed
//    it first returns completed cached blocks to the driver; then it waits for the cached blocks
//    whose work is still pending on other streams (largest first) and returns those, so whether a
//    request fits never depends on another stream's timing; if it still does not fit it throws
//    OutOfBudget and never reaches the driver. A driver that is out of memory anyway (other
//    processes, the reserve too small) gets every cached block back and one more try; then the
//    request is an OutOfBudget too, never a raw CUDA error, and no CUDA error is left behind.
//  - Completion is tracked by FreeFences (events by default), pooled and recorded again, so a
//    steady run creates no event per free.
//  - Never throws from a destructor or a free: after a device fault (a sticky CUDA error) the
//    first error reported stays the one the user sees; later failures are logged.
//  - Statistics: bytes in use and their peak, cached bytes, per-batch high-water mark, counts of
//    requests, cache hits and driver allocations.
//  - memory.allocator async (AllocatorMode::kAsync): blocks come from a stream-ordered
//    cudaMallocAsync pool capped at the budget (core::DevicePool) and go back to it at once, freed
//    in the order of the stream they were last used on; the pool keeps them for reuse, so this
//    allocator caches nothing itself. The books, size classes and budget checks are the same, so a
//    run makes the same requests and the governor the same decisions; what differs is how memory
//    is reused (the driver's pool instead of our bins) and what the driver holds (held_bytes).
// Works on both backends (on the CPU "device" memory is host memory and events complete at once),
// so its logic is tested without a GPU. Thread-safe (one mutex; a handful of calls per batch).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/device_pool.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/free_fence.hpp"
#include "gnnpipe/memory/memory_options.hpp"

namespace gnnpipe::memory {

struct AllocatorStats {
  std::size_t in_use_bytes = 0;      // handed out and not freed
  std::size_t peak_in_use_bytes = 0;
  std::size_t cached_bytes = 0;      // freed, kept for reuse
  std::size_t batch_peak_bytes = 0;  // peak in use since the last reset_batch_peak()
  std::size_t budget_bytes = 0;
  int64_t requests = 0, cache_hits = 0, driver_allocations = 0, driver_frees = 0;
  int64_t budget_waits = 0;  // requests that waited for pending cached blocks to fit the budget
  int64_t driver_out_of_memory = 0;  // driver allocations that failed for lack of device memory
  // Bytes the driver holds for this allocator (caching: in use + cached; async: the pool's
  // reservation; budget charges included) and their peak: what the budget bounds on the driver's
  // side, and what the two allocator modes are compared by.
  std::size_t held_bytes = 0;
  std::size_t peak_held_bytes = 0;
};

class CachingAllocator;

// What the allocator asks of the outside world; tests substitute both.
struct AllocatorHooks {
  // Makes the fences that track frees (default: events of the allocator's device).
  FenceFactory fences;
  // Asks the driver for `bytes` of device memory for work on `stream`; an allocation with
  // ptr == nullptr means the device (async: the pool) is out of memory. Default: caching
  // core::try_allocate_bytes(kDevice, device, bytes); async the pool's try_allocate.
  std::function<core::Allocation(std::size_t bytes, const core::Stream& stream)> driver_allocate;
  // Returns an allocation of driver_allocate to the driver; never throws. `stream`: where the
  // block was last used (async: the free is ordered after its work); nullptr when its work is
  // known complete (caching: a cached block's fence). Default: core::free_bytes; async the pool's free.
  std::function<void(const core::Allocation&, const core::Stream* stream)> driver_free;
  // Async only: what an allocation the driver refused tries before it fails for good (default:
  // the pool's reclaim(): every stream of the device finishes, unused pool memory goes back).
  std::function<void()> driver_reclaim;
  // Async only: the bytes the driver holds (default: the pool's reserved()).
  std::function<std::size_t()> driver_held;
};

// One allocation; returns itself to the allocator when destroyed (or on free()), ordered after the
// work queued so far on the stream it was last used on.
class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(DeviceBlock&& other) noexcept;
  DeviceBlock& operator=(DeviceBlock&& other) noexcept;
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  ~DeviceBlock() { free(); }

  void* data() const { return ptr_; }
  std::size_t size() const { return size_; }  // the size class (>= the request)
  explicit operator bool() const { return ptr_ != nullptr; }
  // Later uses are on `stream` (the free is then ordered after its work).
  void use_on(const core::Stream& stream) { stream_ = &stream; }
  void free() noexcept;

 private:
  friend class CachingAllocator;
  CachingAllocator* owner_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
  const core::Stream* stream_ = nullptr;
};

// Bytes counted as in use against the budget with no memory of the allocator's behind them: the
// CPU backend's twin of a device copy it does not need (device-resident features are read in place
// from host memory there, but must take the budget a GPU copy would). Move-only; the bytes go back
// when it is destroyed. Not counted for any stream.
class BudgetCharge {
 public:
  BudgetCharge() = default;
  BudgetCharge(BudgetCharge&& other) noexcept;
  BudgetCharge& operator=(BudgetCharge&& other) noexcept;
  BudgetCharge(const BudgetCharge&) = delete;
  BudgetCharge& operator=(const BudgetCharge&) = delete;
  ~BudgetCharge() { release(); }
  std::size_t bytes() const { return bytes_; }
  void release() noexcept;

 private:
  friend class CachingAllocator;
  CachingAllocator* owner_ = nullptr;
  std::size_t bytes_ = 0;
};

class CachingAllocator {
 public:
  // `budget_bytes` >= 1 (ConfigError naming memory.limit otherwise). kAsync creates the pool
  // (capped at the budget) unless the hooks replace every use of it.
  CachingAllocator(core::Device device, std::size_t budget_bytes, AllocatorHooks hooks = {},
                   AllocatorMode mode = AllocatorMode::kCaching);
  ~CachingAllocator();  // frees every cached block (blocks still handed out must be gone: checked in debug logs)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (> 0) for work on `stream`. Throws OutOfBudget when it cannot fit.
  DeviceBlock allocate(std::size_t bytes, const core::Stream& stream);

  // Charges `bytes` (> 0) to the budget (see BudgetCharge); OutOfBudget as allocate() when they
  // do not fit after completed cached blocks went back.
  BudgetCharge charge(std::size_t bytes);

  // Returns every cached block whose work has completed to the driver (async: nothing is cached).
  void release_cached();
  AllocatorMode mode() const { return mode_; }
  // How many fences exist (pooled or tracking a cached block): stays flat in a steady run.
  std::size_t fences_created() const;
  // Bytes handed out for work on `stream` (a block counts for the stream it was allocated on) and
  // not freed: what one stream's arrays hold (the train stream's, say, apart from evaluation's).
  std::size_t in_use_bytes_on(const core::Stream& stream) const;
  core::Device device() const { return device_; }
  std::size_t budget() const { return budget_; }
  AllocatorStats stats() const;
  void reset_batch_peak();

  static std::size_t size_class(std::size_t bytes);
  // The largest size class that is at most `bytes` (0 when none is).
  static std::size_t class_within(std::size_t bytes);

 private:
  friend class DeviceBlock;
  friend class BudgetCharge;
  struct Cached {
    core::Allocation allocation;
    const core::Stream* stream;  // freed on this stream
    std::unique_ptr<FreeFence> done;  // completes when the work before the free has
  };
  using Bins = std::multimap<std::size_t, Cached>;
  void give_back(void* ptr, std::size_t size, const core::Stream* stream) noexcept;
  bool reusable(const Cached& c, const core::Stream& stream) const;
  // Returns cached blocks to the driver until `wanted` bytes are freed: only completed ones, or
  // with `wait`, pending ones too (largest first), after waiting for their fences.
  std::size_t release_cached_locked(std::size_t wanted, bool wait);
  Bins::iterator release_locked(Bins::iterator it);
  bool over_budget_locked(std::size_t size) const { return stats_.in_use_bytes + stats_.cached_bytes + size > budget_; }
  std::unique_ptr<FreeFence> take_fence_locked();

  struct Live {
    core::Allocation allocation;
    const core::Stream* stream;  // allocated for work on this stream
  };

  // The driver's bytes now (see AllocatorStats::held_bytes), and the peak updated with them.
  std::size_t held_locked() const;
  void note_held_locked();

  core::Device device_;
  std::size_t budget_;
  AllocatorMode mode_;
  std::unique_ptr<core::DevicePool> pool_;  // async, unless the hooks replace it
  FenceFactory make_fence_;
  std::function<core::Allocation(std::size_t, const core::Stream&)> driver_allocate_;
  std::function<void(const core::Allocation&, const core::Stream*)> driver_free_;
  std::function<void()> driver_reclaim_;
  std::function<std::size_t()> driver_held_;
  std::size_t charged_bytes_ = 0;  // budget charges (in in_use_bytes, but no driver memory)
  std::map<const core::Stream*, std::size_t> in_use_by_stream_;
  std::vector<std::unique_ptr<FreeFence>> fence_pool_;
  std::size_t fences_created_ = 0;
  bool unordered_free_logged_ = false;  // a free that could not be stream-ordered was reported
  mutable std::mutex mutex_;
  Bins bins_;                                           // size class -> cached blocks
  std::map<void*, Live> live_;                          // handed out
  AllocatorStats stats_;
};

}  // namespace gnnpipe::memory
