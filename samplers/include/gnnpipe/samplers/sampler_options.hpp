#pragma once
// The `sampler:` section of an experiment (DESIGN §5) as plain options with in-class defaults.
// Sampler-specific keys (walk length, cluster count, ...) arrive with the samplers (issue 5).
#include <string_view>
#include <vector>

namespace gnnpipe::samplers {

enum class SamplerType { kNeighbor, kSaintNode, kSaintEdge, kSaintRw, kCluster, kFull };

struct SamplerOptions {
  SamplerType type = SamplerType::kNeighbor;
  // Neighbors sampled per hop in PyG's order: fanouts[0] applies to the seed (target) nodes, i.e.
  // the model's last layer, fanouts[1] to the nodes that hop reached, and so on; -1 takes every
  // neighbor. At most one per model layer. The default has two entries to match ModelOptions' default of 2 layers, so that an
  // experiment without model and sampler sections is valid.
  std::vector<int> fanouts{15, 10};
  int batch_size = 1024;  // target nodes per batch (subgraph samplers: their budget), >= 1
  bool replace = false;   // sample neighbors with replacement
};

constexpr std::string_view to_string(SamplerType type) {
  switch (type) {
    case SamplerType::kNeighbor: return "neighbor";
    case SamplerType::kSaintNode: return "saint_node";
    case SamplerType::kSaintEdge: return "saint_edge";
    case SamplerType::kSaintRw: return "saint_rw";
    case SamplerType::kCluster: return "cluster";
    case SamplerType::kFull: return "full";
  }
  return "?";
}

}  // namespace gnnpipe::samplers
