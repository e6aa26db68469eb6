// The rows of the `augment` section (key_table.hpp): MH-Aug's keys with the defaults of
// ../shared/reference/MH-AUG.md (the official code's).
#include "config/key_table.hpp"
#include "gnnpipe/core/choice.hpp"

namespace gnnpipe::experiments::config {
namespace {

using O = samplers::AugmentOptions;
const char* const kMh = "augment.type mh";

bool is_mh(const O& o) { return o.type == samplers::AugmentType::kMh; }

// A number in [0, 1] (the drop ratios' targets).
template <auto Field>
void read_unit(ConfigMap& s, const std::string& key, O& o) {
  double& v = o.mh.*Field;
  v = s.get(key, v);
  GNNPIPE_CHECK_CONFIG(v >= 0 && v <= 1, "{}: must be in [0, 1], got {}", s.key_path(key), v);
}
// A number > 0.
template <auto Field>
void read_positive(ConfigMap& s, const std::string& key, O& o) {
  double& v = o.mh.*Field;
  v = s.get(key, v);
  check_positive(s, key, v);
}
// A number >= 0.
template <auto Field>
void read_non_negative(ConfigMap& s, const std::string& key, O& o) {
  double& v = o.mh.*Field;
  v = s.get(key, v);
  GNNPIPE_CHECK_CONFIG(v >= 0, "{}: must be >= 0, got {}", s.key_path(key), v);
}
template <auto Field>
YAML::Node write_mh(const O& o) {
  return number(o.mh.*Field);
}

// One row of the chain's keys.
template <auto Field, void (*Read)(ConfigMap&, const std::string&, O&)>
Key<O> mh_key(const char* name, const char* meaning) {
  return {.name = name, .doc = {"number", kMh, meaning}, .read = Read, .write = write_mh<Field>, .applies = is_mh,
          .only_for = kMh};
}

using M = samplers::mh::MhAugOptions;

// A loss weight (kl, h): a number >= 0.
template <auto Field>
Key<O> weight_key(const char* name, const char* meaning) {
  return {.name = name,
          .doc = {"number", kMh, meaning},
          .read =
              [](ConfigMap& s, const std::string& key, O& o) {
                o.*Field = s.get(key, o.*Field);
                GNNPIPE_CHECK_CONFIG(o.*Field >= 0, "{}: must be >= 0, got {}", s.key_path(key), o.*Field);
              },
          .write = [](const O& o) { return number(o.*Field); },
          .applies = is_mh,
          .only_for = kMh};
}

}  // namespace

const std::vector<Key<O>>& augment_keys() {
  static const std::vector<Key<O>> keys{
      {.name = "type",
       .doc = {"string", "all",
               "none, or mh: Metropolis-Hastings augmentation (MH-Aug): each epoch trains on the original graph, the "
               "previous augmented graph and a new one drawn by the chain (docs/AUGMENT.md). Full batch and "
               "GraphSAINT/Cluster-GCN batches."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.type = core::parse_choice(s.get(key, std::string(to_string(o.type))), s.key_path(key),
                                         {samplers::AugmentType::kNone, samplers::AugmentType::kMh});
           },
       .write = [](const O& o) { return text(to_string(o.type)); }},
      mh_key<&M::sigma_delta_e, read_positive<&M::sigma_delta_e>>(
          "sigma_delta_e", "Proposal sd of the edge drop ratio (a normal truncated to [0, 1] around the state's)."),
      mh_key<&M::sigma_delta_v, read_positive<&M::sigma_delta_v>>("sigma_delta_v",
                                                                  "Proposal sd of the node mask ratio."),
      mh_key<&M::mu_e, read_unit<&M::mu_e>>("mu_e", "Target change of a node's ego-aggregate under edge drops."),
      mh_key<&M::mu_v, read_unit<&M::mu_v>>("mu_v", "Target change of a node's ego-aggregate under node masks."),
      mh_key<&M::lambda1_e, read_non_negative<&M::lambda1_e>>("lambda1_e", "Weight of the edge target."),
      mh_key<&M::lambda1_v, read_non_negative<&M::lambda1_v>>("lambda1_v", "Weight of the node target."),
      mh_key<&M::lambda2_e, read_non_negative<&M::lambda2_e>>(
          "lambda2_e", "Weight of the edge subset's log-probability in the proposal density (0: the target acts on "
                       "drop ratios)."),
      mh_key<&M::lambda2_v, read_non_negative<&M::lambda2_v>>("lambda2_v",
                                                              "Weight of the node subset's log-probability."),
      mh_key<&M::a_e, read_non_negative<&M::a_e>>("a_e", "Edge target sd per node: a_e * uncertainty + b_e."),
      mh_key<&M::a_v, read_non_negative<&M::a_v>>("a_v", "Node target sd per node: a_v * uncertainty + b_v."),
      mh_key<&M::b_e, read_positive<&M::b_e>>("b_e", "See a_e (> 0)."),
      mh_key<&M::b_v, read_positive<&M::b_v>>("b_v", "See a_v (> 0)."),
      {.name = "k",
       .doc = {"integer", kMh, "Rounds of the fixed aggregator y <- x + A x the target compares (1-8)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.mh.k = s.get(key, o.mh.k);
             GNNPIPE_CHECK_CONFIG(o.mh.k >= 1 && o.mh.k <= 8, "{}: must be in [1, 8], got {}", s.key_path(key), o.mh.k);
           },
       .write = [](const O& o) { return YAML::Node(o.mh.k); }, .applies = is_mh, .only_for = kMh},
      weight_key<&O::kl>(
          "kl", "Weight of the KL divergence from the previous view's predictions to the new view's in the loss (>= 0)."),
      weight_key<&O::h>("h", "Weight of the mean entropy of the original view's predictions in the loss (>= 0)."),
      {.name = "max_tries",
       .doc = {"integer", kMh,
               "Proposals per epoch; when none is accepted the state is kept (a valid MH rejection: the new view "
               "equals the previous one)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             o.max_tries = s.get(key, o.max_tries);
             check_at_least(s, key, o.max_tries, 1);
           },
       .write = [](const O& o) { return YAML::Node(o.max_tries); }, .applies = is_mh, .only_for = kMh},
      {.name = "accept",
       .doc = {"string", kMh,
               "mh (the Metropolis-Hastings test), or for diagnostics always (every first proposal) or never (the "
               "original graph stays: the previous and new views are equal)."},
       .read =
           [](ConfigMap& s, const std::string& key, O& o) {
             using samplers::AugmentAccept;
             o.accept = core::parse_choice(s.get(key, std::string(to_string(o.accept))), s.key_path(key),
                                           {AugmentAccept::kMh, AugmentAccept::kAlways, AugmentAccept::kNever});
           },
       .write = [](const O& o) { return text(to_string(o.accept)); }, .applies = is_mh, .only_for = kMh},
  };
  return keys;
}

}  // namespace gnnpipe::experiments::config
