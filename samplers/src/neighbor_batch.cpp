#include "neighbor_batch.hpp"

#include <cmath>
#include <vector>

namespace gnnpipe::samplers {

using graph::EdgeOffset;
using graph::NodeId;

std::vector<float> inverse_sqrt_degrees(const graph::CsrGraph& graph) {
  std::vector<float> out(static_cast<std::size_t>(graph.num_nodes()));
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    out[static_cast<std::size_t>(v)] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(graph.in_degree(v) + 1)));
  }
  return out;
}

graph::MiniBatch assemble_neighbor_batch(const BatchSpec& spec, const SampledRows& rows, graph::BlockNorm norm,
                                         std::span<const float> inv_sqrt_degree) {
  graph::MiniBatch batch;
  batch.epoch = spec.epoch;
  batch.index = spec.index;
  const std::size_t hops = rows.dst_counts.size();
  for (std::size_t h = hops; h-- > 0;) {
    const auto nd = static_cast<std::size_t>(rows.dst_counts[h]);
    graph::HostArray<EdgeOffset> offsets(
        std::vector<EdgeOffset>(rows.row_offsets.begin(), rows.row_offsets.begin() + static_cast<std::ptrdiff_t>(nd + 1)));
    graph::HostArray<NodeId> indices(std::vector<NodeId>(rows.row_indices.begin(), rows.row_indices.begin() + offsets[nd]));
    graph::HostArray<float> weights;
    if (norm == graph::BlockNorm::kMean || norm == graph::BlockNorm::kGcn) {
      weights = graph::HostArray<float>(indices.size());
      for (std::size_t v = 0; v < nd; ++v) {
        for (auto e = offsets[v]; e < offsets[v + 1]; ++e) {
          const auto k = static_cast<std::size_t>(e);
          weights[k] = norm == graph::BlockNorm::kMean
                           ? 1.0f / static_cast<float>(offsets[v + 1] - offsets[v])
                           : inv_sqrt_degree[static_cast<std::size_t>(rows.nodes[static_cast<std::size_t>(indices[k])])] *
                                 inv_sqrt_degree[static_cast<std::size_t>(rows.nodes[v])];
        }
      }
    }
    batch.blocks.push_back(graph::Block::from_csr(rows.dst_counts[h], rows.src_counts[h], std::move(offsets),
                                                  std::move(indices), std::move(weights), "sampled block"));
  }
  batch.input_nodes = graph::HostArray<NodeId>(std::vector<NodeId>(rows.nodes.begin(), rows.nodes.end()));
  batch.targets = graph::HostArray<NodeId>(std::vector<NodeId>(spec.seeds.begin(), spec.seeds.end()));
  batch.loss_rows = graph::HostArray<int32_t>(spec.seeds.size());
  for (std::size_t i = 0; i < spec.seeds.size(); ++i) batch.loss_rows[i] = static_cast<int32_t>(i);
  batch.compute_shape(0, hops);
  return batch;
}

}  // namespace gnnpipe::samplers
