#pragma once
// The `optimizer:` section of an experiment (docs/DESIGN.md §5) as plain options with in-class defaults.
#include <string_view>

namespace gnnpipe::models {

enum class OptimizerType { kAdam, kSgd };

struct OptimizerOptions {
  OptimizerType type = OptimizerType::kAdam;
  double lr = 0.003;                           // > 0
  double weight_decay = 0.0;                   // L2 coefficient, >= 0
  bool weight_decay_first_layer_only = false;  // GraphSAINT/Cluster-GCN style: decay only layer 0's weights
  // sgd only:
  double momentum = 0.9;                       // in [0, 1)
  // adam only:
  double beta1 = 0.9;                          // in [0, 1)
  double beta2 = 0.999;                        // in [0, 1)
  double eps = 1e-8;                           // > 0

  bool operator==(const OptimizerOptions&) const = default;
};

constexpr std::string_view to_string(OptimizerType type) {
  switch (type) {
    case OptimizerType::kAdam: return "adam";
    case OptimizerType::kSgd: return "sgd";
  }
  return "?";
}

}  // namespace gnnpipe::models
