#pragma once
// The mini-batch of a neighbor-sampled batch from its sampled rows: shared by the CPU sampler and
// its data-parallel twin, which differ only in how they produce the rows.
#include <span>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

// What a batch's hops produced: one CSR over every expanded node in local-id order (a node's row is
// reused by each deeper block), the batch's nodes by local id, and per hop the destinations and
// sources of its block (hop h expands nodes [dst_counts[h - 1], dst_counts[h])).
struct SampledRows {
  std::span<const graph::NodeId> dst_counts;
  std::span<const graph::NodeId> src_counts;
  std::span<const graph::EdgeOffset> row_offsets;
  std::span<const graph::NodeId> row_indices;
  std::span<const graph::NodeId> nodes;
};

// kGcn's per-node factor: (full-graph in-degree + 1)^-1/2.
std::vector<float> inverse_sqrt_degrees(const graph::CsrGraph& graph);

// Blocks input side first (the deepest hop is blocks[0]), weighted by `norm` (kGcn reads
// `inv_sqrt_degree`, the full graph's (in-degree + 1)^-1/2), rows sorted (Block::from_csr); the
// seeds are the targets and the loss rows.
graph::MiniBatch assemble_neighbor_batch(const BatchSpec& spec, const SampledRows& rows, graph::BlockNorm norm,
                                         std::span<const float> inv_sqrt_degree);

}  // namespace gnnpipe::samplers
