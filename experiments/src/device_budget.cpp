#include "device_budget.hpp"

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/device_pool.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::experiments {

Budget budget_for(const config::ExperimentConfig& c) {
  Budget b;
  b.limit = c.memory.limit_bytes;
  b.reserve = c.memory.reserve_for(c.run.device.is_cuda());
  GNNPIPE_CHECK_CONFIG(b.reserve < b.limit, "memory.reserve: {} leaves nothing of memory.limit ({})",
                       core::format_bytes(b.reserve), core::format_bytes(b.limit));
  std::size_t available = b.limit;
  if (c.run.device.is_cuda()) {
    b.free_at_start = core::device_memory_info(c.run.device).free_bytes;
    if (b.free_at_start < available) {
      available = b.free_at_start;
      b.clamped = true;
    }
  }
  GNNPIPE_CHECK_AS(OutOfBudget, available > b.reserve, "memory.limit: {} has only {} free, less than memory.reserve ({})",
                   c.run.device.str(), core::format_bytes(available), core::format_bytes(b.reserve));
  b.budget = available - b.reserve;
  if (c.run.device.is_cuda() && c.memory.allocator == memory::AllocatorMode::kAsync) {
    // A stream-ordered pool reserves device memory in 32 MiB units (core::DevicePool): the budget
    // is what whole units of it hold, so the plan, the books and the pool use that one number.
    GNNPIPE_CHECK_CONFIG(b.budget >= core::kPoolPageBytes,
                         "memory.allocator: async on {} needs a budget of at least {} (its pool reserves device "
                         "memory in units of that size), not {} (memory.limit {} - memory.reserve {}): raise "
                         "memory.limit or use memory.allocator: caching",
                         c.run.device.str(), core::format_bytes(core::kPoolPageBytes), core::format_bytes(b.budget),
                         core::format_bytes(b.limit), core::format_bytes(b.reserve));
    b.budget = b.budget / core::kPoolPageBytes * core::kPoolPageBytes;
  }
  if (b.clamped) {
    core::logger().info("memory.limit {} is more than the {} free on {}: the budget is {} (free - reserve)",
                        core::format_bytes(b.limit), core::format_bytes(b.free_at_start), c.run.device.str(),
                        core::format_bytes(b.budget));
  }
  return b;
}

}  // namespace gnnpipe::experiments
