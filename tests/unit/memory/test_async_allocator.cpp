// memory.allocator async: the allocator keeps its books and budget, and leaves reuse to a
// stream-ordered pool (core::DevicePool; on the CPU backend host memory per request). The fake
// pools here record what reaches them.
#include <catch2/catch.hpp>

#include <vector>

#include "gnnpipe/core/device_pool.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"

using namespace gnnpipe;
using memory::AllocatorMode;
using memory::CachingAllocator;

namespace {

constexpr std::size_t kKiB = 1024;

// A pool of `capacity` bytes whose frees stay pending (their bytes still held) until reclaim(),
// as a GPU pool's frees are until their streams reach them. Records the streams it sees.
struct FakePool {
  explicit FakePool(std::size_t bytes) : capacity(bytes) {}
  std::size_t capacity, held = 0, pending = 0;
  int allocations = 0, refusals = 0, reclaims = 0;
  std::vector<const core::Stream*> allocated_on, freed_on;

  memory::AllocatorHooks hooks() {
    memory::AllocatorHooks h;
    h.driver_allocate = [this](std::size_t bytes, const core::Stream& stream) {
      if (held + bytes > capacity) {
        ++refusals;
        return core::Allocation{};
      }
      ++allocations;
      held += bytes;
      allocated_on.push_back(&stream);
      return core::allocate_bytes(core::MemoryKind::kDevice, core::Device::cpu(), bytes);
    };
    h.driver_free = [this](const core::Allocation& a, const core::Stream* stream) {
      freed_on.push_back(stream);
      pending += a.bytes;  // held until reclaim: the free has not completed yet
      core::free_bytes(a);
    };
    h.driver_reclaim = [this] {
      ++reclaims;
      held -= pending;
      pending = 0;
    };
    h.driver_held = [this] { return held; };
    return h;
  }
};

}  // namespace

TEST_CASE("async allocator: every request reaches the pool and every free goes back to it on the stream last used",
          "[memory][allocator]") {
  const core::Stream train(core::Device::cpu()), copy(core::Device::cpu());
  FakePool pool(64 * kKiB);
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, pool.hooks(), AllocatorMode::kAsync);
  CHECK(alloc.mode() == AllocatorMode::kAsync);
  {
    auto a = alloc.allocate(1000, copy);
    CHECK(a.size() == 1024);  // the same size classes as the caching mode
    a.use_on(train);
    auto b = alloc.allocate(3000, train);
  }
  auto c = alloc.allocate(1000, train);  // the same class again: the pool's business, not a cache hit
  const auto s = alloc.stats();
  CHECK(s.requests == 3);
  CHECK(s.driver_allocations == 3);
  CHECK(s.cache_hits == 0);
  CHECK(s.cached_bytes == 0);
  CHECK(s.driver_frees == 2);
  CHECK(s.in_use_bytes == 1024);
  CHECK(pool.allocated_on == std::vector<const core::Stream*>{&copy, &train, &train});
  // b went back first (declared last), then a on the stream it was last used on.
  CHECK(pool.freed_on == std::vector<const core::Stream*>{&train, &train});
}

TEST_CASE("async allocator: the budget is the caching mode's, checked before the pool", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  FakePool pool(1024 * kKiB);
  CachingAllocator alloc(core::Device::cpu(), 4 * kKiB, pool.hooks(), AllocatorMode::kAsync);
  auto a = alloc.allocate(3 * kKiB, stream);
  CHECK_THROWS_WITH(alloc.allocate(2 * kKiB, stream),
                    Catch::Contains("memory.limit: a request of 2.00 KiB does not fit the budget of 4.00 KiB"));
  CHECK(pool.allocations == 1);
  CHECK(pool.refusals == 0);
  CHECK_THROWS_AS(alloc.charge(2 * kKiB), core::OutOfBudget);
  const memory::BudgetCharge charge = alloc.charge(kKiB);
  CHECK(alloc.stats().in_use_bytes == 4 * kKiB);
}

TEST_CASE("async allocator: a pool that refuses is reclaimed and tried once more, then OutOfBudget names the pool",
          "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu()), eval(core::Device::cpu());
  FakePool pool(8 * kKiB);  // the budget says 64 KiB
  CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, pool.hooks(), AllocatorMode::kAsync);
  alloc.allocate(6 * kKiB, eval).free();  // its free is still pending in the pool
  auto b = alloc.allocate(4 * kKiB, stream);  // 6 + 4 > 8: refused, reclaimed, then placed
  CHECK(b);
  CHECK(pool.refusals == 1);
  CHECK(pool.reclaims == 1);
  CHECK(alloc.stats().driver_out_of_memory == 1);
  try {
    (void)alloc.allocate(5 * kKiB, stream);  // 4 + 5 > 8 with nothing pending
    FAIL("no OutOfBudget");
  } catch (const core::OutOfBudget& e) {
    CHECK_THAT(e.message(), Catch::Contains("the cudaMallocAsync pool (capped at the budget, 64.00 KiB) cannot place "
                                            "a request of 5.00 KiB"));
    CHECK_THAT(e.message(), Catch::Contains("memory.allocator: caching"));
  }
  CHECK(pool.reclaims == 2);
  CHECK(alloc.stats().in_use_bytes == 4 * kKiB);
}

TEST_CASE("held bytes: in use + cached for the caching mode, the pool's reservation + charges for async",
          "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  SECTION("caching") {
    CachingAllocator alloc(core::Device::cpu(), 64 * kKiB);
    { auto a = alloc.allocate(4 * kKiB, stream); }
    auto b = alloc.allocate(2 * kKiB, stream);
    const memory::BudgetCharge charge = alloc.charge(kKiB);
    const auto s = alloc.stats();
    CHECK(s.held_bytes == 4 * kKiB + 2 * kKiB + kKiB);  // the 4 KiB block stays cached
    CHECK(s.peak_held_bytes == 7 * kKiB);
    CHECK(s.peak_in_use_bytes == 4 * kKiB);
  }
  SECTION("async, the CPU backend's pool") {
    CachingAllocator alloc(core::Device::cpu(), 64 * kKiB, {}, AllocatorMode::kAsync);
    { auto a = alloc.allocate(4 * kKiB, stream); }
    auto b = alloc.allocate(2 * kKiB, stream);
    const memory::BudgetCharge charge = alloc.charge(kKiB);
    const auto s = alloc.stats();
    CHECK(s.held_bytes == 2 * kKiB + kKiB);  // the 4 KiB block went back to the host at once
    CHECK(s.peak_held_bytes == 4 * kKiB);
    CHECK(s.peak_held_bytes == s.peak_in_use_bytes);  // nothing is kept beyond what is in use
    CHECK(s.driver_allocations == 2);
    CHECK(s.driver_frees == 1);
  }
}

TEST_CASE("DevicePool on the CPU backend: host memory per request, reserved counts what is not freed",
          "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  core::DevicePool pool(core::Device::cpu(), 16 * kKiB);
  const core::Allocation a = pool.try_allocate(3 * kKiB, stream);
  const core::Allocation b = pool.try_allocate(kKiB, stream);
  REQUIRE(a.ptr != nullptr);
  REQUIRE(b.ptr != nullptr);
  CHECK(a.host_accessible);
  static_cast<char*>(a.ptr)[3 * kKiB - 1] = 1;  // the whole request is ours
  CHECK(pool.reserved() == 4 * kKiB);
  pool.free(a, stream);
  CHECK(pool.reserved() == kKiB);
  pool.reclaim();  // nothing pending on the CPU
  pool.free(b, stream);
  CHECK(pool.reserved() == 0);
  CHECK_THROWS_WITH(pool.try_allocate(0, stream), Catch::Contains("a request of 0 bytes"));
}
