#include "gnnpipe/samplers/saint_twin.hpp"

#include "gnnpipe/samplers/induced_phases.hpp"
#include "gnnpipe/samplers/saint_draw.hpp"
#include "induced_subgraph.hpp"
#include "subgraph_twin.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using graph::NodeId;
using twin::phase;

// The set's arrays (subgraph_twin.hpp) and the weights' per-node scratch.
class SaintTwinWorkspace final : public SamplerWorkspace {
 public:
  explicit SaintTwinWorkspace(NodeId num_nodes) : set(num_nodes) {}
  twin::SubgraphArrays set;
  std::vector<double> inv_sqrt;
};

}  // namespace

std::unique_ptr<SamplerWorkspace> SaintSamplerTwin::make_workspace() const {
  return std::make_unique<SaintTwinWorkspace>(cpu_.graph().num_nodes());
}

graph::MiniBatch SaintSamplerTwin::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<SaintTwinWorkspace&>(workspace);
  twin::SubgraphArrays& set = ws.set;
  set.clear();
  const twin::ClearOnExit clear{set};
  const graph::CsrGraph& g = cpu_.graph();
  const SaintSamplerOptions& o = cpu_.options();
  const SaintSampler::Tables t = cpu_.tables();
  const core::RngKey key = saint::batch_key(o.seed, spec.epoch, spec.index, spec.attempt);
  const int64_t* offsets = g.offsets().data();
  const NodeId* indices = g.indices().data();
  const NodeId n = g.num_nodes();
  int32_t* mark = set.mark.data();

  // 1. The draws mark the node set; 2. the set in ascending order.
  switch (o.mode) {
    case SaintMode::kNode:
      phase(o.budget, [&](int64_t i) {
        DrawCursor draws = saint::draw_cursor(key, i);
        twin::set_flag(&mark[saint::alias_draw(t.alias.data(), static_cast<uint32_t>(t.alias.size()), draws)]);
      });
      break;
    case SaintMode::kEdge:
      phase(o.budget, [&](int64_t i) {
        DrawCursor draws = saint::draw_cursor(key, i);
        const int64_t e = saint::alias_draw(t.alias.data(), static_cast<uint32_t>(t.alias.size()), draws);
        twin::set_flag(&mark[indices[e]]);
        twin::set_flag(&mark[saint::row_of_position(offsets, t.row_of_block.data(), static_cast<int64_t>(t.row_of_block.size()), n, e,
                                                    t.row_block_shift)]);
      });
      break;
    case SaintMode::kRandomWalk:
      phase(o.budget, [&](int64_t w) {
        saint::random_walk(key, w, offsets, indices, n, o.walk_length, [&](NodeId v) { twin::set_flag(&mark[v]); });
      });
      break;
  }
  set.compact_marked();
  const auto k = static_cast<int64_t>(set.nodes.size());

  // 3. The induced rows, with their full-graph edge positions (the norms' counts are by them).
  set.induced_rows(g, o.norm == graph::BlockNorm::kGcn || o.norm == graph::BlockNorm::kSelfLoops, true);

  // 4. The weights (kMean, kGcn).
  graph::HostArray<float> weights;
  if (o.norm == graph::BlockNorm::kMean || o.norm == graph::BlockNorm::kGcn) {
    weights = graph::HostArray<float>(set.row_indices.size());
    ws.inv_sqrt.resize(static_cast<std::size_t>(k));
    const induced::SaintWeightView w{.normalize = o.normalize,
                                     .gcn = o.norm == graph::BlockNorm::kGcn,
                                     .graph_offsets = offsets,
                                     .nodes = set.nodes.data(),
                                     .row_start = set.row_start.data(),
                                     .row_indices = set.row_indices.data(),
                                     .edge_ids = set.edge_ids.data(),
                                     .node_counts = cpu_.node_counts().data(),
                                     .edge_counts = cpu_.edge_counts().data(),
                                     .full_inv_sqrt = t.full_inv_sqrt.data(),
                                     .inv_sqrt = ws.inv_sqrt.data()};
    if (w.gcn) phase(k, [&](int64_t i) { induced::inv_sqrt_of(w, i); });
    phase(k, [&](int64_t i) { induced::saint_row_weights(w, i, weights.data()); });
  }

  // 5. The loss rows (the training nodes, in order) and, normalised, their weights.
  std::vector<int32_t> loss_rows = set.loss_rows(t.is_train);
  std::vector<float> loss_weights(o.normalize ? loss_rows.size() : 0);
  if (o.normalize) {
    phase(static_cast<int64_t>(loss_rows.size()), [&](int64_t j) {
      const auto v = static_cast<std::size_t>(set.nodes[static_cast<std::size_t>(loss_rows[static_cast<std::size_t>(j)])]);
      loss_weights[static_cast<std::size_t>(j)] = induced::saint_loss_weight(cpu_.norm_samples(), cpu_.node_counts()[v], t.num_train);
    });
  }
  return detail::assemble_subgraph_batch(spec, set.nodes, graph::HostArray<EdgeOffset>(set.row_start),
                                         graph::HostArray<NodeId>(set.row_indices), std::move(weights), std::move(loss_rows),
                                         std::move(loss_weights), o.num_layers, "GraphSAINT subgraph");
}

}  // namespace gnnpipe::samplers
