#include "chunk_cache.hpp"

#include "gnnpipe/core/hash.hpp"

namespace gnnpipe::pipeline::detail {

void ChunkCache::use(uint64_t plan_key, std::size_t plan_chunks) {
  if (plan_key != 0 && plan_key == key_ && chunks_.size() == plan_chunks) return;
  chunks_.clear();
  kept_ = bytes_ = 0;
  full_ = false;
  key_ = plan_key;
  if (plan_key != 0) chunks_.resize(plan_chunks);
}

bool ChunkCache::holds(std::size_t begin, std::size_t end) const {
  if (end > chunks_.size()) return false;
  for (std::size_t k = begin; k < end; ++k) {
    if (!chunks_[k]) return false;
  }
  return true;
}

void ChunkCache::offer(std::size_t index, graph::MiniBatch&& chunk, std::size_t limit) {
  if (full_ || index >= chunks_.size() || chunks_[index]) return;
  const std::size_t size = host_bytes(chunk);
  if (bytes_ + size > limit) {
    full_ = true;
    return;
  }
  chunks_[index] = std::make_unique<const graph::MiniBatch>(std::move(chunk));
  bytes_ += size;
  ++kept_;
}

std::size_t ChunkCache::host_bytes(const graph::MiniBatch& b) {
  std::size_t n = (b.input_nodes.size() + b.targets.size()) * sizeof(graph::NodeId) +
                  b.loss_rows.size() * sizeof(int32_t) + b.loss_weights.size() * sizeof(float);
  for (const graph::Block& k : b.blocks) {
    n += (k.offsets.size() + k.t_offsets.size() + k.t_edges.size()) * sizeof(graph::EdgeOffset) +
         (k.indices.size() + k.t_indices.size()) * sizeof(graph::NodeId) + k.weights.size() * sizeof(float);
  }
  return n;
}

uint64_t chunk_plan_key(const graph::CsrGraph& graph, graph::BlockNorm norm, const std::vector<samplers::BatchSpec>& plan,
                        const LayerwiseInferenceOptions& options) {
  const auto word = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); };
  std::vector<uint64_t> words{word(graph.offsets().data()), word(graph.indices().data()),
                              static_cast<uint64_t>(graph.num_nodes()), static_cast<uint64_t>(graph.num_edges()),
                              core::hash64(graph.offsets().data(), graph.offsets().size_bytes()),
                              static_cast<uint64_t>(norm), plan.size()};
  for (const samplers::BatchSpec& spec : plan) {
    words.push_back(spec.seeds.empty() ? ~uint64_t{0} : static_cast<uint64_t>(spec.seeds.front()));
    words.push_back(spec.seeds.size());
  }
  if (options.chunks != nullptr) {
    for (const int64_t keep : options.chunks->keep_edges) words.push_back(static_cast<uint64_t>(keep));
  }
  words.insert(words.end(), {word(options.cut.scores), static_cast<uint64_t>(options.cut.weights), options.cut.seed});
  const uint64_t key = core::hash64(words.data(), words.size() * sizeof(uint64_t));
  return key == 0 ? 1 : key;
}

}  // namespace gnnpipe::pipeline::detail
