#include "gnnpipe/samplers/inference_sampler.hpp"

#include <numeric>
#include <vector>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::samplers {

std::unique_ptr<NeighborSampler> make_inference_sampler(const graph::CsrGraph& graph, graph::BlockNorm norm,
                                                        int chunk_nodes) {
  GNNPIPE_CHECK_CONFIG(chunk_nodes >= 1, "sampler.eval_chunk_nodes: must be >= 1, got {}", chunk_nodes);
  std::vector<graph::NodeId> all(static_cast<std::size_t>(graph.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  return std::make_unique<NeighborSampler>(
      graph, std::move(all),
      NeighborSamplerOptions{.fanouts = {-1}, .batch_size = chunk_nodes, .replace = false, .shuffle = false, .seed = 0, .norm = norm});
}

}  // namespace gnnpipe::samplers
