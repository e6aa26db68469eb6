#include "gnnpipe/memory/memory_options.hpp"

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::memory {

std::string_view to_string(MemoryPolicy policy) {
  switch (policy) {
    case MemoryPolicy::kSplit: return "split";
    case MemoryPolicy::kResample: return "resample";
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

std::string_view to_string(FeaturePlacement placement) {
  switch (placement) {
    case FeaturePlacement::kAuto: return "auto";
    case FeaturePlacement::kDevice: return "device";
    case FeaturePlacement::kHost: return "host";
  }
  return "?";
}

FeaturePlacement parse_feature_placement(std::string_view text, std::string_view key) {
  for (FeaturePlacement p : {FeaturePlacement::kAuto, FeaturePlacement::kDevice, FeaturePlacement::kHost}) {
    if (text == to_string(p)) return p;
  }
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not a feature placement (allowed: auto, device, host)", key, text);
}

bool features_on_device(FeaturePlacement wanted, bool float32, std::size_t bytes, std::size_t left) {
  switch (wanted) {
    case FeaturePlacement::kHost: return false;
    case FeaturePlacement::kDevice:
      GNNPIPE_CHECK_CONFIG(float32, "memory.features: device needs float32 features (use host, or auto)");
      return true;
    case FeaturePlacement::kAuto: return float32 && bytes <= left / 2;
  }
  return false;
}

MemoryPolicy parse_memory_policy(std::string_view text, std::string_view key) {
  for (MemoryPolicy p : {MemoryPolicy::kSplit, MemoryPolicy::kResample, MemoryPolicy::kCut}) {
    if (text == to_string(p)) return p;
  }
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not a memory policy (allowed: split, resample, cut)", key, text);
}

CutStrategy parse_cut_strategy(std::string_view text, std::string_view key) {
  for (CutStrategy s : {CutStrategy::kRandom, CutStrategy::kDegreeSum, CutStrategy::kDegreeProduct,
                        CutStrategy::kPagerankSum, CutStrategy::kPagerankProduct}) {
    if (text == to_string(s)) return s;
  }
  GNNPIPE_THROW(ConfigError,
                "{}: '{}' is not a cut strategy (allowed: random, degree_sum, degree_product, pagerank_sum, "
                "pagerank_product)",
                key, text);
}

}  // namespace gnnpipe::memory
