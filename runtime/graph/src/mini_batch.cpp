#include "gnnpipe/graph/mini_batch.hpp"

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph {

std::vector<const Block*> layer_blocks(std::span<const Block> blocks, std::size_t num_layers, int64_t batch) {
  GNNPIPE_CHECK(num_layers >= 1 && !blocks.empty() &&
                    (blocks.size() == num_layers || (blocks.size() == 1 && blocks[0].num_dst == blocks[0].num_src)),
                "batch {}: {} blocks for {} layers (need one per layer, or one shared square block)", batch,
                blocks.size(), num_layers);
  std::vector<const Block*> out;
  out.reserve(num_layers);
  for (std::size_t l = 0; l < num_layers; ++l) out.push_back(&blocks[blocks.size() == 1 ? 0 : l]);
  return out;
}

std::vector<const Block*> MiniBatch::layer_blocks(std::size_t num_layers) const {
  return graph::layer_blocks(blocks, num_layers, index);
}

void MiniBatch::compute_shape(int64_t feature_dim, std::size_t num_layers) {
  shape = memory::BatchShape{};
  shape.feature_dim = feature_dim;
  for (const Block* b : layer_blocks(num_layers)) {
    shape.src_nodes.push_back(b->num_src);
    shape.dst_nodes.push_back(b->num_dst);
    shape.edges.push_back(b->num_edges());
  }
}

}  // namespace gnnpipe::graph
