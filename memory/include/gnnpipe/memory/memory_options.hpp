#pragma once
// The `memory:` section of an experiment (docs/DESIGN.md §4, §5) as plain options with in-class defaults.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gnnpipe::memory {

// What the governor does with a training batch whose predicted peak does not fit the budget.
enum class MemoryPolicy {
  kSplit,     // split its loss targets into k micro-batches, accumulate their gradients (exact)
  kResample,  // draw another batch instead, up to max_tries times (the seed paper's behaviour)
  kCut,       // remove the fewest edges needed, lowest-scored first (memory.cut)
  kLayerwise, // run it one layer at a time over chunks of destination rows, the hidden outputs on
              // the device or the host (exact; what split falls back to when splitting cannot help)
};

// How edges are scored for `cut`; the lowest-scored edges go first. d = full-graph in-degree + 1,
// pr = PageRank of the full graph.
enum class CutStrategy {
  kRandom,           // a seeded random order
  kDegreeSum,        // 1 / (d_u + d_v)
  kDegreeProduct,    // 1 / (d_u * d_v)
  kPagerankSum,      // 1 / (pr_u + pr_v)
  kPagerankProduct,  // 1 / (pr_u * pr_v)
};

// Where the feature matrix lives during training (memory.features).
enum class FeaturePlacement {
  kAuto,    // device when it fits in what the planned batches leave, else a cache or host (plan_features)
  kDevice,  // copied to the device once; batches carry node ids, rows are gathered on the device
  kHost,    // gathered on the host into every batch's staging slot and copied with it
  kCache,   // the most sampled rows on the device; a batch carries only the rows it misses
};

// Which rows a feature cache holds (memory.cache_rank): the most often sampled, estimated
enum class CacheRank {
  kDegree,     // by in-graph appearances as a neighbour (PaGraph): free, blind to which nodes train
  kPresample,  // by appearances in the batches of the first cache_presample_epochs epochs,
               // sampled before training (GNNLab); ties by degree. Costs that much sampling.
};

// Where the run's device memory comes from (memory.allocator). The budget, the size classes and
// the books are the same in both, so the governor's predictions and the batches are too.
enum class AllocatorMode {
  kCaching,  // our caching allocator: cudaMalloc'd blocks kept in size-class bins, reused with events
  kAsync,    // cudaMallocAsync: a stream-ordered pool capped at the budget (core::DevicePool);
             // on the CPU backend, host memory allocated per request and freed at once
};

std::string_view to_string(AllocatorMode mode);
AllocatorMode parse_allocator_mode(std::string_view text, std::string_view key);
std::string_view to_string(MemoryPolicy policy);
std::string_view to_string(CacheRank rank);
CacheRank parse_cache_rank(std::string_view text, std::string_view key);
std::string_view to_string(FeaturePlacement placement);
std::string_view to_string(CutStrategy strategy);
// Parse the YAML names; throw ConfigError naming `key` and the allowed values otherwise.
MemoryPolicy parse_memory_policy(std::string_view text, std::string_view key);
CutStrategy parse_cut_strategy(std::string_view text, std::string_view key);
FeaturePlacement parse_feature_placement(std::string_view text, std::string_view key);
// Where a feature matrix of `rows` rows of `row_bytes` goes, given `left`, what the budget leaves
// after what is resident and evaluation's bound, and `batches`, what the run's batches take beyond
// that at most (device slots, the train stream's arrays: the plan of the first batches, with a
// margin) when it is known. The device side may take what the batches leave (half of `left` when
// they are not known), in allocator size classes:
//   host    host.
//   device  device.
//   cache   a cache of as many rows as fit there, at most all (OutOfBudget naming memory.limit
//           when not one row fits).
//   auto    device when the whole matrix fits; else a cache when at least 1/64 of the rows fit;
//           else host.
// row_bytes is the store's (fp16/bf16 rows are 16-bit on the device too).
struct FeaturePlan {
  FeaturePlacement where = FeaturePlacement::kHost;  // kHost, kDevice or kCache
  int64_t cache_rows = 0;
};
FeaturePlan plan_features(FeaturePlacement wanted, int64_t rows, std::size_t row_bytes, std::size_t left,
                          std::optional<std::size_t> batches = std::nullopt);

// The device slots a pipelined run uses (batches on the device at once: copied ahead of the step
// or being trained): the staging slots' count, at most kMaxDeviceSlots (one batch copied ahead of
// the step and one behind already overlap copy and compute; more only hold memory), and fewer while
// they would take more than a quarter of `budget`, each sized to `largest_packed` (the largest
// packed batch planned) with its 1/8 growth headroom in an allocator size class. At least 1.
inline constexpr int kMaxDeviceSlots = 4;
int plan_device_slots(int staging_slots, std::size_t budget, std::size_t largest_packed);

struct MemoryOptions {
  // The device memory budget (YAML `limit`, e.g. 16GiB): the governor and allocator never exceed it.
  uint64_t limit_bytes = uint64_t{16} << 30;
  // Device memory the budget leaves to what the allocator cannot see (YAML `reserve`: bytes, or
  // `auto`): the CUDA context's lazily loaded kernels, library-internal allocations,
  // fragmentation. Unset = auto: on a GPU kAutoReserveCuda, or an eighth of the limit when that is
  // less (a 64 MiB limit keeps 8 MiB back, not all of it); 0 on the CPU backend.
  std::optional<uint64_t> reserve_bytes;
  MemoryPolicy policy = MemoryPolicy::kSplit;
  int max_tries = 10;  // resample: batches drawn before giving up on one
  CutStrategy cut = CutStrategy::kDegreeSum;
  // Safety margin of a prediction: a batch fits when predicted / (1 - tolerance) <= what is left.
  double tolerance = 0.05;
  FeaturePlacement features = FeaturePlacement::kAuto;
  CacheRank cache_rank = CacheRank::kDegree;
  int cache_presample_epochs = 1;  // presample: epochs counted (>= 1)
  AllocatorMode allocator = AllocatorMode::kCaching;

  static constexpr uint64_t kAutoReserveCuda = uint64_t{256} << 20;
  // The reserve on a device of this kind (`cuda`: a GPU).
  uint64_t reserve_for(bool cuda) const {
    return reserve_bytes.value_or(cuda ? std::min(kAutoReserveCuda, limit_bytes / 8) : 0);
  }

  bool operator==(const MemoryOptions&) const = default;
};

}  // namespace gnnpipe::memory
