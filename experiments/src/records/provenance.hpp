#pragma once
// Where a result came from (issue #16 item 4), for summary.json and bench.json: the build (git
// commit or version, build type, compiler, CUDA), the machine (CUDA runtime and driver, the GPU of
// run.device, CPU model), the threads, the dataset's content hashes and the config hash.
#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::experiments {

// {"structure_hash", "feature_hash"} as 16 hex digits (core::hash64 of the CSR offsets and indices;
// of the feature values as stored), and the shape: equal hashes mean the same graph and features.
nlohmann::json dataset_checksum(const graph::Dataset& dataset);

// The provenance object; `threads` is the run's ThreadPlan::json() (null when none).
nlohmann::json provenance(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                          const nlohmann::json& threads);

}  // namespace gnnpipe::experiments
