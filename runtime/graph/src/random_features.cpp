#include "gnnpipe/graph/random_features.hpp"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::graph {

void check_feature_bytes(int64_t rows, int64_t cols, const char* what) {
  const double bytes = static_cast<double>(rows) * static_cast<double>(cols) * sizeof(float);
  const uint64_t machine = core::physical_memory_bytes();
  GNNPIPE_CHECK_CONFIG(machine == 0 || bytes <= static_cast<double>(machine),
                       "{}: {} x {} float32 features take {}, more than this machine's {} of memory", what, rows, cols,
                       core::format_bytes(static_cast<uint64_t>(std::min(bytes, 1.8e19))), core::format_bytes(machine));
}

FeatureStore random_features(int64_t rows, int64_t cols, uint64_t seed) {
  GNNPIPE_CHECK_CONFIG(rows >= 0 && cols > 0, "random features need rows >= 0 and width > 0, got {} x {}", rows, cols);
  check_feature_bytes(rows, cols, "random features (dataset.random_features)");
  HostArray<float> values(static_cast<std::size_t>(rows * cols));
  const core::RngKey base = core::rng_key(seed, {0x66656174ull /* "feat" */});
  using Range = tbb::blocked_range<int64_t>;
  tbb::parallel_for(Range(0, rows, 256), core::tsan::fork_join([&](const Range& r) {
    for (int64_t v = r.begin(); v < r.end(); ++v) {
      core::Rng rng(base.with(static_cast<uint64_t>(v)));
      float* out = values.data() + v * cols;
      for (int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(rng.normal());
    }
  }));
  return FeatureStore(std::move(values), rows, cols);
}

void add_random_features(Dataset& dataset, int64_t cols, uint64_t seed) {
  GNNPIPE_CHECK_DATA(dataset.features.empty(),
                     "{}: dataset.random_features is set but the dataset has {}-dim features; remove the key",
                     dataset.name, dataset.features.cols());
  dataset.features = random_features(dataset.num_nodes(), cols, seed);
  dataset.synthesized.push_back(
      fmt::format("features: random standard normal, {} dims, seed {} (the dataset has none)", cols, seed));
}

}  // namespace gnnpipe::graph
