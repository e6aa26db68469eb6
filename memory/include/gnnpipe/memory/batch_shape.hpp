#pragma once
// BatchShape: the sizes of one mini-batch, as plain numbers, so the memory governor can predict a
// batch's device memory without depending on the graph module (docs/DESIGN.md §2).
#include <cstdint>
#include <vector>

namespace gnnpipe::memory {

struct BatchShape {
  // Per block, input side first: blocks[l] has src_nodes[l] sources, dst_nodes[l] destinations
  // and edges[l] edges; dst_nodes[l] == src_nodes[l + 1].
  std::vector<int64_t> src_nodes;
  std::vector<int64_t> dst_nodes;
  std::vector<int64_t> edges;
  int64_t feature_dim = 0;

  int64_t total_edges() const {
    int64_t total = 0;
    for (int64_t e : edges) total += e;
    return total;
  }
};

}  // namespace gnnpipe::memory
