#pragma once
// MiniBatch: one sampled computation graph (DESIGN §2). blocks[0] reads the input features of
// `input_nodes` (global ids, in the order of its local source ids); blocks.back() writes the
// outputs of `targets` (global ids, its local destinations). Labels and loss weights are looked up
// by the trainer from `targets`. Move-only; passed as std::shared_ptr through the pipeline.
#include <cstdint>
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
  memory::BatchShape shape;

  MiniBatch() = default;
  MiniBatch(MiniBatch&&) = default;
  MiniBatch& operator=(MiniBatch&&) = default;
  MiniBatch(const MiniBatch&) = delete;
  MiniBatch& operator=(const MiniBatch&) = delete;

  // Fills `shape` from the blocks (feature_dim as given).
  void compute_shape(int64_t feature_dim);
};

}  // namespace gnnpipe::graph
