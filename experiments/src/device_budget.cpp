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
  GNNPIPE_CHECK_CONFIG(b.limit > 0, "memory.limit (gnnpipe infer: --memory-limit): 0 B leaves nothing to run in");
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
  // A GPU's stream-ordered pool reserves device memory in 32 MiB units (core::DevicePool): with
  // async the budget is what whole units of it hold, so the plan, the books and the pool agree.
  if (c.memory.allocator == memory::AllocatorMode::kAsync) b.budget = core::pool_cap(c.run.device, b.budget);
  if (b.clamped) {
    core::logger().info("memory.limit {} is more than the {} free on {}: the budget is {} (free - reserve)",
                        core::format_bytes(b.limit), core::format_bytes(b.free_at_start), c.run.device.str(),
                        core::format_bytes(b.budget));
  }
  return b;
}

}  // namespace gnnpipe::experiments
