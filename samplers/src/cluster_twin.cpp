#include "gnnpipe/samplers/cluster_twin.hpp"

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "induced_subgraph.hpp"
#include "subgraph_twin.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::BlockNorm;
using graph::EdgeOffset;
using graph::NodeId;
using twin::exclusive_scan;
using twin::phase;

// The set's arrays (subgraph_twin.hpp), the parts' sizes and the weights' per-node scratch.
class ClusterTwinWorkspace final : public SamplerWorkspace {
 public:
  explicit ClusterTwinWorkspace(NodeId num_nodes) : set(num_nodes) {}
  twin::SubgraphArrays set;
  std::vector<int64_t> part_sizes, member_start;
  std::vector<double> inv_sqrt;
};

}  // namespace

std::unique_ptr<SamplerWorkspace> ClusterSamplerTwin::make_workspace() const {
  return std::make_unique<ClusterTwinWorkspace>(cpu_.graph().num_nodes());
}

graph::MiniBatch ClusterSamplerTwin::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<ClusterTwinWorkspace&>(workspace);
  twin::SubgraphArrays& set = ws.set;
  set.clear();
  const twin::ClearOnExit clear{set};
  const graph::CsrGraph& g = cpu_.graph();
  const ClusterSamplerOptions& o = cpu_.options();
  const ClusterSampler::Tables t = cpu_.tables();
  for (int32_t p : spec.parts) {
    GNNPIPE_CHECK(p >= 0 && p < o.num_parts, "batch {}: part {} is outside [0, {})", spec.index, p, o.num_parts);
  }
  // 1. The parts' members marked (a part's list is contiguous); 2. ascending, by a scan.
  ws.part_sizes.resize(spec.parts.size());
  for (std::size_t q = 0; q < spec.parts.size(); ++q) {
    const auto p = static_cast<std::size_t>(spec.parts[q]);
    ws.part_sizes[q] = t.part_offsets[p + 1] - t.part_offsets[p];
  }
  exclusive_scan(ws.part_sizes, ws.member_start, int64_t{0});
  phase(static_cast<int64_t>(spec.parts.size()), [&](int64_t q) {
    const auto p = static_cast<std::size_t>(spec.parts[static_cast<std::size_t>(q)]);
    for (NodeId m = t.part_offsets[p]; m < t.part_offsets[p + 1]; ++m) {
      twin::set_flag(&set.mark[static_cast<std::size_t>(t.part_nodes[static_cast<std::size_t>(m)])]);
    }
  });
  set.compact_marked();
  // A part listed twice marks its members twice: fewer nodes than members (the CPU sampler refuses it too).
  GNNPIPE_CHECK(static_cast<int64_t>(set.nodes.size()) == ws.member_start.back(), "batch {}: a part appears twice", spec.index);
  const auto k = static_cast<int64_t>(set.nodes.size());

  // 3. The induced rows; 4. the weights.
  set.induced_rows(g, o.norm == BlockNorm::kGcn || o.norm == BlockNorm::kSelfLoops, false);
  graph::HostArray<float> weights;
  if (o.norm == BlockNorm::kMean || o.norm == BlockNorm::kGcn) {
    weights = graph::HostArray<float>(set.row_indices.size());
    ws.inv_sqrt.resize(static_cast<std::size_t>(k));
    const induced::ClusterWeightView w{.gcn = o.norm == BlockNorm::kGcn,
                                       .diag_lambda = o.diag_lambda,
                                       .row_start = set.row_start.data(),
                                       .row_indices = set.row_indices.data(),
                                       .inv_sqrt = ws.inv_sqrt.data()};
    if (w.gcn && w.diag_lambda == 0.0f) phase(k, [&](int64_t i) { induced::cluster_inv_sqrt_of(w, i); });
    phase(k, [&](int64_t i) { induced::cluster_row_weights(w, i, weights.data()); });
  }
  // 5. The loss rows.
  std::vector<int32_t> loss_rows = set.loss_rows(t.is_train);
  return detail::assemble_subgraph_batch(spec, set.nodes, graph::HostArray<EdgeOffset>(set.row_start),
                                         graph::HostArray<NodeId>(set.row_indices), std::move(weights), std::move(loss_rows),
                                         {}, o.num_layers, "cluster block");
}

}  // namespace gnnpipe::samplers
