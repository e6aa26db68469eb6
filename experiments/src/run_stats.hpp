#pragma once
// Summary statistics of repeated measurements (runs over seeds, epoch times of a bench).
#include <nlohmann/json.hpp>

#include <vector>

namespace gnnpipe::experiments {

// {"mean", "std", "n"} of `values` (std: unbiased, 0 for one value), as OGB reports runs.
nlohmann::json mean_std(const std::vector<double>& values);

}  // namespace gnnpipe::experiments
