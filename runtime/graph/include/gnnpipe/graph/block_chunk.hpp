#pragma once
// BlockChunker: a block cut into chunks of its destinations, each a block of its own, for
// layer-wise chunked training (pipeline/src/layerwise_step.hpp). Chunk [begin, end) of a parent
// block: its destinations 0..end-begin-1 are the parent's begin..end-1, its sources those first
// (destinations are a prefix of sources), then the chunk's other sources in order of first
// appearance; every row keeps the parent's edges in the parent's order with their weights
// (Block::RowOrder::kKeep), so a row sums exactly as it does in the parent. `sources` maps the
// chunk's sources to the parent's local ids. count() gives a chunk's sizes without building it
// (the memory governor's sizing, O(chunk edges)). Not thread-safe (one scratch map per chunker).
#include <cstdint>
#include <vector>

#include "gnnpipe/graph/block.hpp"

namespace gnnpipe::graph {

struct BlockChunk {
  Block block;
  std::vector<NodeId> sources;  // [block.num_src] parent-local ids; the first num_dst are begin..end-1
};

struct ChunkCounts {
  int64_t num_dst = 0, num_src = 0, edges = 0;
};

class BlockChunker {
 public:
  // `parent` must outlive the chunker.
  explicit BlockChunker(const Block& parent);
  ChunkCounts count(NodeId begin, NodeId end);
  // `transpose` false: the block has no transpose (t_* arrays empty), for a forward that no
  // backward over this block follows (a layer-wise step's forward pass).
  BlockChunk build(NodeId begin, NodeId end, bool transpose = true);

 private:
  void check(NodeId begin, NodeId end) const;
  const Block& parent_;
  std::vector<NodeId> local_;  // parent source -> chunk source, -1 outside the current chunk
  std::vector<NodeId> seen_;   // the parent sources marked in local_ (reset after each call)
};

}  // namespace gnnpipe::graph
