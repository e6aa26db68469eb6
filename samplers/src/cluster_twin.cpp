#include "gnnpipe/samplers/cluster_twin.hpp"

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "induced_subgraph.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::BlockNorm;
using graph::EdgeOffset;
using graph::NodeId;
using twin::exclusive_scan;
using twin::phase;

// Marks and local ids per graph node (0 and -1 between batches) and the batch's arrays.
class ClusterTwinWorkspace final : public SamplerWorkspace {
 public:
  explicit ClusterTwinWorkspace(NodeId num_nodes)
      : mark(static_cast<std::size_t>(num_nodes), 0), local_of(static_cast<std::size_t>(num_nodes), -1) {}
  std::vector<int32_t> mark, local_of;
  std::vector<int64_t> rank, member_start;
  std::vector<int64_t> part_sizes;
  std::vector<int32_t> nodes;
  std::vector<int64_t> lengths, row_start;
  std::vector<int32_t> row_indices;
  std::vector<double> inv_sqrt;
  std::vector<int32_t> is_loss;
  std::vector<int64_t> loss_start;
};

struct CleanOnExit {
  ClusterTwinWorkspace& ws;
  ~CleanOnExit() {
    for (NodeId v : ws.nodes) {
      ws.mark[static_cast<std::size_t>(v)] = 0;
      ws.local_of[static_cast<std::size_t>(v)] = -1;
    }
  }
};

}  // namespace

std::unique_ptr<SamplerWorkspace> ClusterSamplerTwin::make_workspace() const {
  return std::make_unique<ClusterTwinWorkspace>(cpu_.graph().num_nodes());
}

graph::MiniBatch ClusterSamplerTwin::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<ClusterTwinWorkspace&>(workspace);
  ws.nodes.clear();
  const CleanOnExit clean{ws};
  const graph::CsrGraph& g = cpu_.graph();
  const ClusterSamplerOptions& o = cpu_.options();
  const ClusterSampler::Tables t = cpu_.tables();
  const NodeId n = g.num_nodes();
  for (int32_t p : spec.parts) {
    GNNPIPE_CHECK(p >= 0 && p < o.num_parts, "batch {}: part {} is outside [0, {})", spec.index, p, o.num_parts);
  }
  // 1. The parts' members marked: one element per member (a part's list is contiguous).
  ws.part_sizes.resize(spec.parts.size());
  for (std::size_t q = 0; q < spec.parts.size(); ++q) {
    const auto p = static_cast<std::size_t>(spec.parts[q]);
    ws.part_sizes[q] = t.part_offsets[p + 1] - t.part_offsets[p];
  }
  exclusive_scan(ws.part_sizes, ws.member_start, int64_t{0});
  phase(static_cast<int64_t>(spec.parts.size()), [&](int64_t q) {
    const auto p = static_cast<std::size_t>(spec.parts[static_cast<std::size_t>(q)]);
    for (NodeId k = t.part_offsets[p]; k < t.part_offsets[p + 1]; ++k) {
      // A part listed twice marks its members twice; the CPU sampler refuses it, so does the count below.
      twin::set_flag(&ws.mark[static_cast<std::size_t>(t.part_nodes[static_cast<std::size_t>(k)])]);
    }
  });
  // 2. Ascending: a scan of the marks, each marked node to its rank.
  exclusive_scan(ws.mark, ws.rank, int64_t{0});
  const int64_t k = ws.rank.back();
  GNNPIPE_CHECK(k == ws.member_start.back(), "batch {}: a part appears twice", spec.index);
  ws.nodes.resize(static_cast<std::size_t>(k));
  phase(n, [&](int64_t v) {
    if (ws.mark[static_cast<std::size_t>(v)] != 0) ws.nodes[static_cast<std::size_t>(ws.rank[static_cast<std::size_t>(v)])] = static_cast<NodeId>(v);
  });
  phase(k, [&](int64_t i) { ws.local_of[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i); });

  // 3. The induced rows.
  ws.lengths.resize(static_cast<std::size_t>(k));
  induced::InducedView view{.graph_offsets = g.offsets().data(),
                            .graph_indices = g.indices().data(),
                            .nodes = ws.nodes.data(),
                            .local_of = ws.local_of.data(),
                            .self_loops = o.norm == BlockNorm::kGcn || o.norm == BlockNorm::kSelfLoops,
                            .lengths = ws.lengths.data(),
                            .row_start = nullptr,
                            .row_indices = nullptr,
                            .edge_ids = nullptr};
  phase(k, [&](int64_t i) { induced::row_length(view, i); });
  exclusive_scan(ws.lengths, ws.row_start, int64_t{0});
  ws.row_indices.resize(static_cast<std::size_t>(ws.row_start.back()));
  view.row_start = ws.row_start.data();
  view.row_indices = ws.row_indices.data();
  phase(k, [&](int64_t i) { induced::write_row(view, i); });

  // 4. The weights.
  graph::HostArray<float> weights;
  if (o.norm == BlockNorm::kMean || o.norm == BlockNorm::kGcn) {
    weights = graph::HostArray<float>(ws.row_indices.size());
    ws.inv_sqrt.resize(static_cast<std::size_t>(k));
    const induced::ClusterWeightView w{.gcn = o.norm == BlockNorm::kGcn,
                                       .diag_lambda = o.diag_lambda,
                                       .row_start = ws.row_start.data(),
                                       .row_indices = ws.row_indices.data(),
                                       .inv_sqrt = ws.inv_sqrt.data()};
    if (w.gcn && w.diag_lambda == 0.0f) phase(k, [&](int64_t i) { induced::cluster_inv_sqrt_of(w, i); });
    phase(k, [&](int64_t i) { induced::cluster_row_weights(w, i, weights.data()); });
  }

  // 5. The loss rows.
  ws.is_loss.resize(static_cast<std::size_t>(k));
  phase(k, [&](int64_t i) {
    ws.is_loss[static_cast<std::size_t>(i)] = t.is_train[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(i)])];
  });
  exclusive_scan(ws.is_loss, ws.loss_start, int64_t{0});
  std::vector<int32_t> loss_rows(static_cast<std::size_t>(ws.loss_start.back()));
  phase(k, [&](int64_t i) {
    if (ws.is_loss[static_cast<std::size_t>(i)] != 0) {
      loss_rows[static_cast<std::size_t>(ws.loss_start[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i);
    }
  });
  return detail::assemble_subgraph_batch(spec, ws.nodes, graph::HostArray<EdgeOffset>(ws.row_start),
                                         graph::HostArray<NodeId>(ws.row_indices), std::move(weights), std::move(loss_rows),
                                         {}, o.num_layers, "cluster block");
}

}  // namespace gnnpipe::samplers
