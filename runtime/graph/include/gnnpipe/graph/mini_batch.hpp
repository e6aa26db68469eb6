#pragma once
// MiniBatch: one sampled computation graph (docs/DESIGN.md §2). blocks[0] reads the input features of
// `input_nodes` (global ids, in the order of its local source ids); blocks.back() writes the
// outputs of `targets` (global ids, its local destinations).
//
// Either one block per model layer (layer-wise samplers: neighbor), or exactly one block that
// every layer uses (subgraph samplers: GraphSAINT, Cluster-GCN, full batch; its num_dst == num_src,
// so input_nodes == targets). The loss is taken over the targets at `loss_rows` (positions in
// `targets`, ascending) whose labels the trainer looks up by global id; with `loss_weights` empty the
// loss is the mean over those rows, otherwise the weighted sum sum_k loss_weights[k] * loss(loss_rows[k])
// (GraphSAINT's loss normalisation; weights already include the 1/|train| of a mean).
// Move-only; passed as std::shared_ptr through the pipeline.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/host_array.hpp"
#include "gnnpipe/memory/batch_shape.hpp"

namespace gnnpipe::graph {

struct MiniBatch {
  int64_t epoch = 0;
  int64_t index = 0;               // batch index within the epoch
  std::vector<Block> blocks;       // input side first
  HostArray<NodeId> input_nodes;   // [blocks[0].num_src] global ids
  HostArray<NodeId> targets;       // [blocks.back().num_dst] global ids
  HostArray<int32_t> loss_rows;    // positions in `targets` that carry loss, ascending
  HostArray<float> loss_weights;   // [loss_rows.size()] or empty (mean over loss_rows)
  memory::BatchShape shape;
  // MH-Aug (issue #41, samplers/mh_views.hpp): the previous and the new augmented views of the
  // blocks (empty without augmentation; the blocks above are the original view), each with the
  // factor of every input row's features (0 for a masked node, else N / (N - masked)), and each
  // target's weight in the KL and entropy terms. A batch the memory governor splits, cuts or
  // redraws has none (the train stage refuses it).
  struct AugmentedView {
    std::vector<Block> blocks;     // as `blocks`, over the same nodes
    HostArray<float> row_factors;  // [blocks[0].num_src]
  };
  std::vector<AugmentedView> views;
  HostArray<float> node_weights;  // [targets.size()] when views are set

  MiniBatch() = default;
  MiniBatch(MiniBatch&&) = default;
  MiniBatch& operator=(MiniBatch&&) = default;
  MiniBatch(const MiniBatch&) = delete;
  MiniBatch& operator=(const MiniBatch&) = delete;

  // Fills `shape` from the blocks (feature_dim as given); a shared block is listed once per layer.
  void compute_shape(int64_t feature_dim, std::size_t num_layers);

  // The block each of `num_layers` layers reads (see layer_blocks below).
  std::vector<const Block*> layer_blocks(std::size_t num_layers) const;
};

// The block each of `num_layers` layers reads: blocks[l], or the shared square block for every l.
// Throws when `blocks` is neither one block per layer nor a single shared block. `batch` names the
// batch in the error. Also used for batches read back from a staging slot (pipeline).
std::vector<const Block*> layer_blocks(std::span<const Block> blocks, std::size_t num_layers, int64_t batch);

}  // namespace gnnpipe::graph
