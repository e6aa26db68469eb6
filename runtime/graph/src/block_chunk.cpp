#include "gnnpipe/graph/block_chunk.hpp"

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph {

BlockChunker::BlockChunker(const Block& parent) : parent_(parent), local_(static_cast<std::size_t>(parent.num_src), -1) {}

void BlockChunker::check(NodeId begin, NodeId end) const {
  GNNPIPE_CHECK(0 <= begin && begin < end && end <= parent_.num_dst, "chunk [{}, {}) of a block of {} destinations",
                begin, end, parent_.num_dst);
}

ChunkCounts BlockChunker::count(NodeId begin, NodeId end) {
  check(begin, end);
  ChunkCounts c;
  c.num_dst = end - begin;
  c.edges = parent_.offsets[static_cast<std::size_t>(end)] - parent_.offsets[static_cast<std::size_t>(begin)];
  c.num_src = c.num_dst;
  seen_.clear();
  for (NodeId v = begin; v < end; ++v) {
    local_[static_cast<std::size_t>(v)] = 0;
    seen_.push_back(v);
  }
  const EdgeOffset first = parent_.offsets[static_cast<std::size_t>(begin)];
  const EdgeOffset last = parent_.offsets[static_cast<std::size_t>(end)];
  for (EdgeOffset e = first; e < last; ++e) {
    const NodeId u = parent_.indices[static_cast<std::size_t>(e)];
    if (local_[static_cast<std::size_t>(u)] < 0) {
      local_[static_cast<std::size_t>(u)] = 0;
      seen_.push_back(u);
      ++c.num_src;
    }
  }
  for (NodeId u : seen_) local_[static_cast<std::size_t>(u)] = -1;
  return c;
}

BlockChunk BlockChunker::build(NodeId begin, NodeId end, bool transpose) {
  check(begin, end);
  BlockChunk chunk;
  const NodeId n = end - begin;
  for (NodeId v = begin; v < end; ++v) {
    local_[static_cast<std::size_t>(v)] = v - begin;
    chunk.sources.push_back(v);
  }
  const auto first = static_cast<std::size_t>(parent_.offsets[static_cast<std::size_t>(begin)]);
  const auto last = static_cast<std::size_t>(parent_.offsets[static_cast<std::size_t>(end)]);
  std::vector<EdgeOffset> offsets(static_cast<std::size_t>(n) + 1);
  for (NodeId r = 0; r <= n; ++r) {
    offsets[static_cast<std::size_t>(r)] =
        parent_.offsets[static_cast<std::size_t>(begin + r)] - static_cast<EdgeOffset>(first);
  }
  std::vector<NodeId> indices(last - first);
  for (std::size_t e = first; e < last; ++e) {
    const NodeId u = parent_.indices[e];
    NodeId& l = local_[static_cast<std::size_t>(u)];
    if (l < 0) {
      l = static_cast<NodeId>(chunk.sources.size());
      chunk.sources.push_back(u);
    }
    indices[e - first] = l;
  }
  for (NodeId u : chunk.sources) local_[static_cast<std::size_t>(u)] = -1;
  std::vector<float> weights;
  if (parent_.weighted()) weights.assign(parent_.weights.begin() + first, parent_.weights.begin() + last);
  const auto num_src = static_cast<NodeId>(chunk.sources.size());
  if (!transpose) {  // valid by construction: the parent's rows under the chunk's numbering
    chunk.block.num_dst = n;
    chunk.block.num_src = num_src;
    chunk.block.offsets = HostArray<EdgeOffset>(std::move(offsets));
    chunk.block.indices = HostArray<NodeId>(std::move(indices));
    chunk.block.weights = HostArray<float>(std::move(weights));
    return chunk;
  }
  chunk.block = Block::from_csr(n, num_src, HostArray<EdgeOffset>(std::move(offsets)), HostArray<NodeId>(std::move(indices)),
                                HostArray<float>(std::move(weights)), "block chunk", Block::RowOrder::kKeep);
  return chunk;
}

}  // namespace gnnpipe::graph
