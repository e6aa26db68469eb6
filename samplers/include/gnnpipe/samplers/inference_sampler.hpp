#pragma once
// Full-neighbor layer-wise inference (the evaluation path of sampled training: published accuracies
// evaluate with every neighbor, not a sample). The plan lists every node of the graph in id order,
// in chunks of `chunk_nodes` destinations; each chunk is one Block (num_layers() == 1) holding all
// in-neighbors of its destinations, weighted with full-graph degrees (`norm`), so running layer l
// over every chunk computes exactly layer l of a full-graph forward, in memory bounded by the chunk.
// It is the neighbor sampler with fanout -1 and no shuffle, so it shares its tests and speed.
#include <memory>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"

namespace gnnpipe::samplers {

// ConfigError when chunk_nodes < 1. `graph` must outlive the sampler.
std::unique_ptr<NeighborSampler> make_inference_sampler(const graph::CsrGraph& graph, graph::BlockNorm norm,
                                                        int chunk_nodes);

}  // namespace gnnpipe::samplers
