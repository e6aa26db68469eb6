#pragma once
// The device memory budget of a run or an inference job (docs/DESIGN.md §4): memory.limit minus
// memory.reserve, and on a GPU never more than what is free when it starts (minus the reserve);
// with memory.allocator async on a GPU, whole 32 MiB pool units of that (at least one).
#include <cstddef>

#include "gnnpipe/experiments/config/experiment_config.hpp"

namespace gnnpipe::experiments {

struct Budget {
  std::size_t limit = 0, reserve = 0, budget = 0, free_at_start = 0;
  bool clamped = false;  // the budget is what was free, not memory.limit
};

// ConfigError when the reserve leaves nothing of the limit, or async on a GPU gets less than one
// pool unit; OutOfBudget when the device has less free than the reserve. Logs a clamped budget.
Budget budget_for(const config::ExperimentConfig& config);

}  // namespace gnnpipe::experiments
