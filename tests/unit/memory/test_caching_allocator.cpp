#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"

using namespace gnnpipe;
using memory::CachingAllocator;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
}

TEST_CASE("allocator size classes: 512-byte steps up to 1 MiB, then whole MiB", "[memory][allocator]") {
  CHECK(CachingAllocator::size_class(1) == 512);
  CHECK(CachingAllocator::size_class(512) == 512);
  CHECK(CachingAllocator::size_class(513) == 1024);
  CHECK(CachingAllocator::size_class(kMiB) == kMiB);
  CHECK(CachingAllocator::size_class(kMiB + 1) == 2 * kMiB);
}

TEST_CASE("a freed block is reused for the same size class without the driver", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 16 * kMiB);
  void* first = nullptr;
  {
    auto a = alloc.allocate(1000, stream);
    CHECK(a.size() == 1024);
    first = a.data();
    CHECK(alloc.stats().in_use_bytes == 1024);
  }
  CHECK(alloc.stats().in_use_bytes == 0);
  CHECK(alloc.stats().cached_bytes == 1024);
  auto b = alloc.allocate(600, stream);  // same class
  CHECK(b.data() == first);
  const auto s = alloc.stats();
  CHECK(s.requests == 2);
  CHECK(s.cache_hits == 1);
  CHECK(s.driver_allocations == 1);
  CHECK(s.cached_bytes == 0);
  CHECK(s.peak_in_use_bytes == 1024);
  auto c = alloc.allocate(3000, stream);  // another class: a new allocation
  CHECK(c.data() != first);
  CHECK(alloc.stats().driver_allocations == 2);
}

TEST_CASE("the budget is hard: past it a request throws OutOfBudget before reaching the driver", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 4 * kMiB);
  auto a = alloc.allocate(3 * kMiB, stream);
  try {
    (void)alloc.allocate(2 * kMiB, stream);
    FAIL("no OutOfBudget");
  } catch (const core::OutOfBudget& e) {
    CHECK_THAT(e.message(), Catch::Contains("memory.limit: a request of 2.00 MiB does not fit the budget of 4.00 MiB"));
  }
  CHECK(alloc.stats().driver_allocations == 1);
  CHECK(alloc.stats().in_use_bytes == 3 * kMiB);
  a.free();
  // The cached 3 MiB block goes back to the driver to make room for a 2 MiB one.
  auto b = alloc.allocate(2 * kMiB, stream);
  const auto s = alloc.stats();
  CHECK(s.driver_frees == 1);
  CHECK(s.cached_bytes == 0);
  CHECK(s.in_use_bytes == 2 * kMiB);
  CHECK_THROWS_AS(CachingAllocator(core::Device::cpu(), 0), core::ConfigError);
}

TEST_CASE("a budget charge counts against the budget without memory and gives it back", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 4 * kMiB);
  auto a = alloc.allocate(kMiB, stream);
  a.free();  // cached: the charge makes it go back to the driver
  memory::BudgetCharge charge = alloc.charge(3 * kMiB + 1);
  CHECK(charge.bytes() == 3 * kMiB + 1);
  CHECK(alloc.stats().in_use_bytes == 3 * kMiB + 1);
  CHECK(alloc.stats().cached_bytes == 0);
  CHECK(alloc.stats().driver_allocations == 1);
  CHECK(alloc.in_use_bytes_on(stream) == 0);  // no stream's
  CHECK_THROWS_AS(alloc.allocate(kMiB, stream), core::OutOfBudget);
  CHECK_THROWS_WITH(alloc.charge(2 * kMiB), Catch::Contains("memory.limit: 2.00 MiB does not fit the budget of 4.00 MiB"));
  memory::BudgetCharge moved = std::move(charge);
  CHECK(alloc.stats().in_use_bytes == 3 * kMiB + 1);
  moved.release();
  CHECK(alloc.stats().in_use_bytes == 0);
  CHECK(alloc.stats().peak_in_use_bytes == 3 * kMiB + 1);
  { const memory::BudgetCharge scoped = alloc.charge(kMiB); CHECK(alloc.stats().in_use_bytes == kMiB); }
  CHECK(alloc.stats().in_use_bytes == 0);
}

TEST_CASE("the per-batch high-water mark resets to what is in use", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 64 * kMiB);
  auto keep = alloc.allocate(kMiB, stream);
  {
    auto a = alloc.allocate(4 * kMiB, stream);
  }
  CHECK(alloc.stats().batch_peak_bytes == 5 * kMiB);
  alloc.reset_batch_peak();
  CHECK(alloc.stats().batch_peak_bytes == kMiB);
  auto b = alloc.allocate(2 * kMiB, stream);
  CHECK(alloc.stats().batch_peak_bytes == 3 * kMiB);
  CHECK(alloc.stats().peak_in_use_bytes == 5 * kMiB);
  alloc.release_cached();
  CHECK(alloc.stats().cached_bytes == 0);
}

TEST_CASE("moved blocks free once, concurrent use keeps the books balanced", "[memory][allocator]") {
  const core::Stream stream(core::Device::cpu());
  CachingAllocator alloc(core::Device::cpu(), 256 * kMiB);
  auto a = alloc.allocate(4096, stream);
  memory::DeviceBlock b = std::move(a);
  CHECK_FALSE(a);
  b = alloc.allocate(8192, stream);  // the first block goes back here
  CHECK(alloc.stats().in_use_bytes == 8192);
  b.free();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&alloc, t] {
      const core::Stream own(core::Device::cpu());
      for (int i = 0; i < 200; ++i) {
        auto x = alloc.allocate(static_cast<std::size_t>(512 * (1 + (i + t) % 7)), own);
        auto y = alloc.allocate(kMiB + static_cast<std::size_t>(i), own);
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto s = alloc.stats();
  CHECK(s.in_use_bytes == 0);
  CHECK(s.requests == 2 + 4 * 200 * 2);
  CHECK(s.cache_hits > 0);
}
