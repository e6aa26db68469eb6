#include "gnnpipe/memory/memory_options.hpp"

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/choice.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"

namespace gnnpipe::memory {

std::string_view to_string(AllocatorMode mode) {
  switch (mode) {
    case AllocatorMode::kCaching: return "caching";
    case AllocatorMode::kAsync: return "async";
  }
  return "?";
}

AllocatorMode parse_allocator_mode(std::string_view text, std::string_view key) {
  return core::parse_choice(text, key, {AllocatorMode::kCaching, AllocatorMode::kAsync}, "an allocator");
}

std::string_view to_string(MemoryPolicy policy) {
  switch (policy) {
    case MemoryPolicy::kSplit: return "split";
    case MemoryPolicy::kResample: return "resample";
    case MemoryPolicy::kLayerwise: return "layerwise";
    case MemoryPolicy::kCut: return "cut";
  }
  return "?";
}

std::string_view to_string(CutStrategy strategy) {
  switch (strategy) {
    case CutStrategy::kRandom: return "random";
    case CutStrategy::kDegreeSum: return "degree_sum";
    case CutStrategy::kDegreeProduct: return "degree_product";
    case CutStrategy::kPagerankSum: return "pagerank_sum";
    case CutStrategy::kPagerankProduct: return "pagerank_product";
  }
  return "?";
}

std::string_view to_string(CacheRank rank) {
  switch (rank) {
    case CacheRank::kDegree: return "degree";
    case CacheRank::kPresample: return "presample";
  }
  return "?";
}

CacheRank parse_cache_rank(std::string_view text, std::string_view key) {
  return core::parse_choice(text, key, {CacheRank::kDegree, CacheRank::kPresample}, "a cache rank");
}

std::string_view to_string(FeaturePlacement placement) {
  switch (placement) {
    case FeaturePlacement::kAuto: return "auto";
    case FeaturePlacement::kDevice: return "device";
    case FeaturePlacement::kHost: return "host";
    case FeaturePlacement::kCache: return "cache";
  }
  return "?";
}

FeaturePlacement parse_feature_placement(std::string_view text, std::string_view key) {
  return core::parse_choice(
      text, key, {FeaturePlacement::kAuto, FeaturePlacement::kDevice, FeaturePlacement::kHost, FeaturePlacement::kCache},
      "a feature placement");
}

FeaturePlan plan_features(FeaturePlacement wanted, int64_t rows, std::size_t row_bytes, std::size_t left,
                          std::optional<std::size_t> batches) {
  if (wanted == FeaturePlacement::kHost || rows == 0) return {};
  // In allocator size classes: the matrix or cache is one allocation.
  const std::size_t side = batches ? (left > *batches ? left - *batches : 0) : left / 2;
  const std::size_t room = CachingAllocator::class_within(side);
  const std::size_t whole = CachingAllocator::size_class(static_cast<std::size_t>(rows) * row_bytes);
  const auto fitting = static_cast<int64_t>(std::min<std::size_t>(static_cast<std::size_t>(rows), room / std::max<std::size_t>(1, row_bytes)));
  switch (wanted) {
    case FeaturePlacement::kDevice: return {FeaturePlacement::kDevice, 0};
    case FeaturePlacement::kCache:
      GNNPIPE_CHECK_AS(OutOfBudget, fitting >= 1, "memory.limit: memory.features cache: the budget leaves {} for the device side, less than one feature row ({})",
                       core::format_bytes(side), core::format_bytes(row_bytes));
      return {FeaturePlacement::kCache, fitting};
    case FeaturePlacement::kAuto:
      if (whole <= room) return {FeaturePlacement::kDevice, 0};
      if (fitting >= std::max<int64_t>(1, rows / 64)) return {FeaturePlacement::kCache, fitting};
      return {};
    case FeaturePlacement::kHost: break;
  }
  return {};
}

int plan_device_slots(int staging_slots, std::size_t budget, std::size_t largest_packed) {
  int slots = std::clamp(staging_slots, 1, kMaxDeviceSlots);
  const std::size_t each = CachingAllocator::size_class(largest_packed + largest_packed / 8);
  while (slots > 1 && static_cast<std::size_t>(slots) * each > budget / 4) --slots;
  return slots;
}

MemoryPolicy parse_memory_policy(std::string_view text, std::string_view key) {
  return core::parse_choice(text, key, {MemoryPolicy::kSplit, MemoryPolicy::kResample, MemoryPolicy::kCut, MemoryPolicy::kLayerwise},
                            "a memory policy");
}

CutStrategy parse_cut_strategy(std::string_view text, std::string_view key) {
  return core::parse_choice(text, key,
                            {CutStrategy::kRandom, CutStrategy::kDegreeSum, CutStrategy::kDegreeProduct,
                             CutStrategy::kPagerankSum, CutStrategy::kPagerankProduct},
                            "a cut strategy");
}

}  // namespace gnnpipe::memory
