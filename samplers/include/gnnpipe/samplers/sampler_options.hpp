#pragma once
// The `sampler:` section of an experiment (docs/DESIGN.md §5) as plain options with in-class defaults.
// Keys that only some types read are rejected for the others by the config parser.
#include <filesystem>
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
  // PyG's meaning per type: neighbor: seed nodes per batch; saint_node: nodes drawn; saint_edge:
  // edges drawn; saint_rw: walk roots; cluster: METIS parts joined per batch. 0 = the type's
  // default (default_batch_size); >= 1 otherwise.
  int batch_size = 0;
  bool replace = false;   // neighbor: sample neighbors with replacement
  // GraphSAINT (saint_*):
  int walk_length = 2;      // saint_rw: steps per walk
  int steps_per_epoch = 0;  // batches per epoch; 0: about num_nodes / subgraph size
  int norm_samples = 0;     // subgraphs pre-sampled for the norms; 0: ~50 samples per node
  bool normalize = true;    // the paper's aggregator and loss normalisation
  // Cluster-GCN (cluster):
  int num_parts = 0;             // METIS parts, required, 1 <= num_parts <= nodes
  double diag_lambda = 0.0;      // diagonal enhancement (model gcn only)
  std::filesystem::path cache_dir;  // partition cache; empty: $GNNPIPE_CACHE_DIR or ~/.cache/gnnpipe
  // Evaluation (every type): layer-wise full-neighbor inference in chunks of this many nodes.
  int eval_chunk_nodes = 8192;

  bool operator==(const SamplerOptions&) const = default;
};

// The batch_size a type uses when the config gives none (PyG's examples' orders of magnitude).
constexpr int default_batch_size(SamplerType type) {
  switch (type) {
    case SamplerType::kNeighbor: return 1024;
    case SamplerType::kSaintNode: return 6000;
    case SamplerType::kSaintEdge: return 4000;
    case SamplerType::kSaintRw: return 3000;
    case SamplerType::kCluster: return 1;
    case SamplerType::kFull: return 1;
  }
  return 1;
}

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
