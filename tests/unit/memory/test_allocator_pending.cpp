// The caching allocator with work still pending on other streams (issue #12, item 4): fences the
// test completes by hand stand in for events of a GPU stream that is still running.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/simulated_fault.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"

using namespace gnnpipe;
using memory::CachingAllocator;

namespace {

constexpr std::size_t kKiB = 1024;

// Fences that stay pending after record() until the test completes them, or until someone waits
// (synchronize() stands for "the GPU finished that work"). Counts what the allocator does.
struct FenceLog {
  int created = 0, records = 0, waits = 0;
  std::vector<bool*> pending;  // one flag per fence, for complete_all()
  void complete_all() {
    for (bool* p : pending) *p = false;
  }
};

class ManualFence final : public memory::FreeFence {
 public:
  explicit ManualFence(FenceLog& log) : log_(log) { log_.pending.push_back(&pending_); }
  void record(const core::Stream&) override {
    pending_ = true;
    ++log_.records;
  }
  bool query() override { return !pending_; }
  void synchronize() override {
    ++log_.waits;
    pending_ = false;
  }

 private:
  FenceLog& log_;
  bool pending_ = false;
};

memory::FenceFactory manual_fences(FenceLog& log) {
  return [&log] {
    ++log.created;
    return std::make_unique<ManualFence>(log);
  };
}

memory::AllocatorHooks fence_hooks(FenceLog& log) {
  memory::AllocatorHooks hooks;
  hooks.fences = manual_fences(log);
  return hooks;
}

}  // namespace

TEST_CASE("a budget miss waits for blocks still pending on another stream, then fits", "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  FenceLog log;
  CachingAllocator alloc(core::Device::cpu(), 4 * kKiB, fence_hooks(log));
  alloc.allocate(3 * kKiB, eval).free();  // freed on the eval stream, its work still running
  CHECK(alloc.stats().cached_bytes == 3 * kKiB);
  // 3 KiB cached + 2 KiB wanted > 4 KiB: without the wait this would throw, depending on timing.
  auto b = alloc.allocate(2 * kKiB, train);
  const auto s = alloc.stats();
  CHECK(log.waits == 1);
  CHECK(s.budget_waits == 1);
  CHECK(s.driver_frees == 1);
  CHECK(s.cached_bytes == 0);
  CHECK(s.in_use_bytes == 2 * kKiB);
}

TEST_CASE("completed blocks go back first, then the wait takes the largest pending ones, only as many as needed",
          "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  FenceLog log;
  CachingAllocator alloc(core::Device::cpu(), 16 * kKiB, fence_hooks(log));
  {
    auto small = alloc.allocate(1 * kKiB, eval);
    auto mid = alloc.allocate(4 * kKiB, eval);
    auto big = alloc.allocate(8 * kKiB, eval);
  }  // all three pending on eval: 13 KiB cached
  auto x = alloc.allocate(2 * kKiB, train);  // 15 KiB: fits without releasing anything
  CHECK(log.waits == 0);
  // 6 KiB more: 21 KiB > 16 KiB, 5 KiB must go. Only the 8 KiB block is waited for.
  auto y = alloc.allocate(6 * kKiB, train);
  CHECK(log.waits == 1);
  CHECK(alloc.stats().cached_bytes == 5 * kKiB);
  // Once the eval stream's work has completed, nothing needs a wait.
  log.complete_all();
  auto z = alloc.allocate(7 * kKiB, train);
  CHECK(log.waits == 1);
  CHECK(alloc.stats().in_use_bytes == 15 * kKiB);
}

TEST_CASE("a block pending on the requesting stream is reused without a wait, one on another stream is not",
          "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  FenceLog log;
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, fence_hooks(log));
  void* first = nullptr;
  {
    auto a = alloc.allocate(kKiB, train);
    first = a.data();
  }
  auto same = alloc.allocate(kKiB, train);  // stream order protects it
  CHECK(same.data() == first);
  same.free();
  auto other = alloc.allocate(kKiB, eval);  // still pending for eval's point of view: a new block
  CHECK(other.data() != first);
  CHECK(log.waits == 0);
  CHECK(alloc.stats().driver_allocations == 2);
}

TEST_CASE("a request that cannot fit even with nothing cached throws at once, without waiting", "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  FenceLog log;
  CachingAllocator alloc(core::Device::cpu(), 4 * kKiB, fence_hooks(log));
  auto held = alloc.allocate(3 * kKiB, train);
  alloc.allocate(kKiB, eval).free();
  CHECK_THROWS_AS(alloc.allocate(2 * kKiB, train), core::OutOfBudget);  // 3 KiB in use + 2 KiB > 4 KiB
  CHECK(log.waits == 0);
  CHECK(alloc.stats().cached_bytes == kKiB);  // nothing was released for a request that could not fit
}

TEST_CASE("fences are pooled: a steady alloc/free cycle creates no fence per free", "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  FenceLog log;
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, fence_hooks(log));
  for (int i = 0; i < 100; ++i) {
    auto a = alloc.allocate(kKiB, train);
    auto b = alloc.allocate(2 * kKiB, train);
  }
  CHECK(log.records == 200);
  CHECK(log.created <= 2);
  CHECK(alloc.fences_created() == static_cast<std::size_t>(log.created));
  // With the default factory (events of the device) too.
  CachingAllocator events(core::Device::cpu(), 64 * kKiB);
  for (int i = 0; i < 100; ++i) events.allocate(kKiB, eval).free();
  CHECK(events.fences_created() == 1);
}

TEST_CASE("after a device fault, frees and the allocator's teardown log instead of throwing", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  std::optional<CachingAllocator> alloc(std::in_place, core::Device::cpu(), 64 * kKiB);
  alloc->allocate(kKiB, stream).free();  // cached, with a recorded event
  auto held = alloc->allocate(2 * kKiB, stream);
  {
    const core::ScopedSimulatedDeviceFault fault("an illegal memory access was encountered");
    CHECK_THROWS_AS(stream.synchronize(), core::CudaError);
    held.free();  // the event cannot be recorded: the block goes straight back to the driver
    const auto s = alloc->stats();
    CHECK(s.in_use_bytes == 0);
    CHECK(s.cached_bytes == kKiB);
    CHECK(s.driver_frees == 1);
    alloc.reset();  // waits on the cached block's event, which fails: logged, never thrown
  }
  CHECK_NOTHROW(stream.synchronize());  // the scope ended: the simulated fault is gone
}

TEST_CASE("a driver out of memory gets the cache back and one more try, then an OutOfBudget", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu()), eval(core::Device::cpu());
  // A fake driver with 8 KiB of device memory, though the budget says 64 KiB (another process has
  // the rest, say).
  std::size_t driver_used = 0;
  int driver_calls = 0;
  FenceLog log;
  memory::AllocatorHooks hooks;
  hooks.fences = manual_fences(log);
  hooks.driver_allocate = [&](std::size_t bytes, const core::Stream&) {
    ++driver_calls;
    if (driver_used + bytes > 8 * kKiB) return core::Allocation{};
    driver_used += bytes;
    return core::allocate_bytes(core::MemoryKind::kDevice, core::Device::cpu(), bytes);
  };
  hooks.driver_free = [&](const core::Allocation& a, const core::Stream*) {
    driver_used -= a.bytes;
    core::free_bytes(a);
  };
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, hooks);
  alloc.allocate(6 * kKiB, eval).free();  // cached, pending on eval
  {
    auto b = alloc.allocate(4 * kKiB, stream);  // 6 + 4 > 8: fails, the cache goes back, the retry fits
    CHECK(b);
    const auto s = alloc.stats();
    CHECK(s.driver_out_of_memory == 1);
    CHECK(s.cached_bytes == 0);
    CHECK(log.waits == 1);  // the pending block was waited for before it went back
  }
  CHECK(driver_used == 4 * kKiB);  // the 6 KiB block went back to the driver
  auto held = alloc.allocate(4 * kKiB, stream);  // reuses the cached 4 KiB block
  try {
    (void)alloc.allocate(5 * kKiB, stream);  // 4 + 5 > 8 with nothing cached: no way
    FAIL("no OutOfBudget");
  } catch (const core::OutOfBudget& e) {
    CHECK_THAT(e.message(), Catch::Contains("the driver is out of device memory for a request of 5.00 KiB"));
  }
  CHECK(alloc.stats().driver_out_of_memory == 2);
  CHECK(alloc.stats().in_use_bytes == 4 * kKiB);
  CHECK(driver_calls == 5);  // 6 KiB; 4 KiB failed, then fitted; 5 KiB failed twice
}

TEST_CASE("in-use bytes are kept per stream", "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), eval(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB);
  auto a = alloc.allocate(kKiB, train);
  auto b = alloc.allocate(2 * kKiB, eval);
  auto c = alloc.allocate(3 * kKiB, train);
  CHECK(alloc.in_use_bytes_on(train) == 4 * kKiB);
  CHECK(alloc.in_use_bytes_on(eval) == 2 * kKiB);
  c.free();
  CHECK(alloc.in_use_bytes_on(train) == kKiB);
  b.free();
  CHECK(alloc.in_use_bytes_on(eval) == 0);
}
