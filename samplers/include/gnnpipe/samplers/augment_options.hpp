#pragma once
// The `augment:` section of an experiment (issue #41): MH-Aug (Park et al., NeurIPS 2021) as
// ../shared/reference/MH-AUG.md specifies it from the official code, with its defaults. Plain
// options with in-class defaults; the config parser checks them (experiments/src/config).
#include <cstdint>
#include <string_view>

namespace gnnpipe::samplers {

namespace mh {
// The chain's keys (MH-AUG.md §1, §2).
struct MhAugOptions {
  double sigma_delta_e = 0.03, sigma_delta_v = 0.03;  // proposal sd of the drop ratios
  double mu_e = 0.6, mu_v = 0.2;                      // target change of the ego-aggregates
  double lambda1_e = 1, lambda1_v = 1;                // weight of the target
  double lambda2_e = 0, lambda2_v = 0;                // weight of the subset term in q
  double a_e = 100, a_v = 100, b_e = 1, b_v = 1;      // sigma_i = a ent_i + b
  int k = 2;                                          // aggregation rounds
  uint64_t seed = 0;                                  // the run's seed (run.seed), not a config key

  bool operator==(const MhAugOptions&) const = default;
};
}  // namespace mh

enum class AugmentType { kNone, kMh };

// What decides a proposal: the Metropolis-Hastings test (the method), or every proposal accepted /
// every one rejected (diagnostics: `always` makes the chain a free random walk of the proposal,
// `never` keeps the original graph, so the previous and the new views are the same and the KL
// term is exactly 0).
enum class AugmentAccept { kMh, kAlways, kNever };

struct AugmentOptions {
  AugmentType type = AugmentType::kNone;
  mh::MhAugOptions mh;
  int max_tries = 100;  // proposals per epoch before the state is kept (a valid MH rejection)
  double kl = 2.0;      // weight of KL(previous view || new view) in the loss
  double h = 0.2;       // weight of the entropy of the original view's predictions
  AugmentAccept accept = AugmentAccept::kMh;

  bool enabled() const { return type != AugmentType::kNone; }
  bool operator==(const AugmentOptions&) const = default;
};

constexpr std::string_view to_string(AugmentType t) { return t == AugmentType::kMh ? "mh" : "none"; }
constexpr std::string_view to_string(AugmentAccept a) {
  switch (a) {
    case AugmentAccept::kMh: return "mh";
    case AugmentAccept::kAlways: return "always";
    case AugmentAccept::kNever: return "never";
  }
  return "mh";
}

}  // namespace gnnpipe::samplers
