#pragma once
// Layer-wise inference's kept chunks (LayerwiseInferenceOptions::cache_bytes,
// pipeline.eval_cache): the chunks a call sampled (after their cuts), by plan index, for the
// call's later layers and later calls with the same chunks, which then neither sample nor
// transpose them again. Kept in plan order while they fit the bytes allowed.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::pipeline::detail {

class ChunkCache {
 public:
  // For a call over `plan_chunks` chunks whose identity is `plan_key` (chunk_plan_key): keeps what
  // it holds when that is the plan it holds, else starts over; key 0 keeps nothing.
  void use(uint64_t plan_key, std::size_t plan_chunks);
  // Whether chunks [begin, end) are all kept.
  bool holds(std::size_t begin, std::size_t end) const;
  const graph::MiniBatch& chunk(std::size_t index) const { return *chunks_.at(index); }
  // Keeps chunk `index` if it and the chunks kept take at most `limit` bytes, and no chunk before
  // it in this plan was refused (plan order).
  void offer(std::size_t index, graph::MiniBatch&& chunk, std::size_t limit);
  void count_sampled(std::size_t chunks) { sampled_ += static_cast<int64_t>(chunks); }

  std::size_t kept() const { return kept_; }
  std::size_t bytes() const { return bytes_; }
  int64_t sampled() const { return sampled_; }  // chunks sampled by the calls with this cache

  // The host bytes of a chunk's arrays (blocks, ids, loss rows and weights).
  static std::size_t host_bytes(const graph::MiniBatch& chunk);

 private:
  uint64_t key_ = 0;
  std::vector<std::unique_ptr<const graph::MiniBatch>> chunks_;  // by plan index; null: not kept
  std::size_t kept_ = 0, bytes_ = 0;
  bool full_ = false;  // a chunk was refused: no later one is kept
  int64_t sampled_ = 0;
};

// The identity of a call's chunks: the graph (its arrays' addresses and sizes, and a hash of its
// offsets), the blocks' weighting, every chunk's destinations, and the cuts and their options.
// Never 0.
uint64_t chunk_plan_key(const graph::CsrGraph& graph, graph::BlockNorm norm, const std::vector<samplers::BatchSpec>& plan,
                        const LayerwiseInferenceOptions& options);

}  // namespace gnnpipe::pipeline::detail
