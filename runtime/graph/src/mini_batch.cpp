#include "gnnpipe/graph/mini_batch.hpp"

namespace gnnpipe::graph {

void MiniBatch::compute_shape(int64_t feature_dim) {
  shape = memory::BatchShape{};
  shape.feature_dim = feature_dim;
  for (const Block& b : blocks) {
    shape.src_nodes.push_back(b.num_src);
    shape.dst_nodes.push_back(b.num_dst);
    shape.edges.push_back(b.num_edges());
  }
}

}  // namespace gnnpipe::graph
