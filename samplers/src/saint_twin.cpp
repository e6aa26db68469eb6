#include "gnnpipe/samplers/saint_twin.hpp"

#include "gnnpipe/samplers/induced_phases.hpp"
#include "gnnpipe/samplers/saint_draw.hpp"
#include "induced_subgraph.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using graph::NodeId;
using twin::exclusive_scan;
using twin::phase;

// What a kernel sequence would hold on the device: marks and local ids per graph node (0 and -1
// between batches), and the batch's arrays, reused across batches.
class SaintTwinWorkspace final : public SamplerWorkspace {
 public:
  explicit SaintTwinWorkspace(NodeId num_nodes)
      : mark(static_cast<std::size_t>(num_nodes), 0), local_of(static_cast<std::size_t>(num_nodes), -1) {}
  std::vector<int32_t> mark, local_of;
  std::vector<int64_t> rank;
  std::vector<int32_t> nodes;
  std::vector<int64_t> lengths, row_start, edge_ids;
  std::vector<int32_t> row_indices;
  std::vector<double> inv_sqrt;
  std::vector<int32_t> is_loss;
  std::vector<int64_t> loss_start;
};

// Leaves marks and local ids clean even when a batch throws.
struct CleanOnExit {
  SaintTwinWorkspace& ws;
  ~CleanOnExit() {
    for (NodeId v : ws.nodes) {
      ws.mark[static_cast<std::size_t>(v)] = 0;
      ws.local_of[static_cast<std::size_t>(v)] = -1;
    }
  }
};

}  // namespace

std::unique_ptr<SamplerWorkspace> SaintSamplerTwin::make_workspace() const {
  return std::make_unique<SaintTwinWorkspace>(cpu_.graph().num_nodes());
}

graph::MiniBatch SaintSamplerTwin::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<SaintTwinWorkspace&>(workspace);
  ws.nodes.clear();
  const CleanOnExit clean{ws};
  const graph::CsrGraph& g = cpu_.graph();
  const SaintSamplerOptions& o = cpu_.options();
  const SaintSampler::Tables t = cpu_.tables();
  const core::RngKey key = saint::batch_key(o.seed, spec.epoch, spec.index, spec.attempt);
  const int64_t* offsets = g.offsets().data();
  const NodeId* indices = g.indices().data();
  const NodeId n = g.num_nodes();
  int32_t* mark = ws.mark.data();

  // 1. The draws mark the node set.
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
  // 2. The set in ascending order: a scan of the marks over all nodes, each marked node to its rank.
  exclusive_scan(ws.mark, ws.rank, int64_t{0});
  const int64_t k = ws.rank.back();
  ws.nodes.resize(static_cast<std::size_t>(k));
  phase(n, [&](int64_t v) {
    if (mark[v] != 0) ws.nodes[static_cast<std::size_t>(ws.rank[static_cast<std::size_t>(v)])] = static_cast<NodeId>(v);
  });
  phase(k, [&](int64_t i) { ws.local_of[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i); });

  // 3. The induced rows.
  ws.lengths.resize(static_cast<std::size_t>(k));
  induced::InducedView view{.graph_offsets = offsets,
                            .graph_indices = indices,
                            .nodes = ws.nodes.data(),
                            .local_of = ws.local_of.data(),
                            .self_loops = o.norm == graph::BlockNorm::kGcn || o.norm == graph::BlockNorm::kSelfLoops,
                            .lengths = ws.lengths.data(),
                            .row_start = nullptr,
                            .row_indices = nullptr,
                            .edge_ids = nullptr};
  phase(k, [&](int64_t i) { induced::row_length(view, i); });
  exclusive_scan(ws.lengths, ws.row_start, int64_t{0});
  const auto num_edges = static_cast<std::size_t>(ws.row_start.back());
  ws.row_indices.resize(num_edges);
  ws.edge_ids.resize(num_edges);
  view.row_start = ws.row_start.data();
  view.row_indices = ws.row_indices.data();
  view.edge_ids = ws.edge_ids.data();
  phase(k, [&](int64_t i) { induced::write_row(view, i); });

  // 4. The weights (kMean, kGcn).
  graph::HostArray<float> weights;
  if (o.norm == graph::BlockNorm::kMean || o.norm == graph::BlockNorm::kGcn) {
    weights = graph::HostArray<float>(num_edges);
    ws.inv_sqrt.resize(static_cast<std::size_t>(k));
    const induced::SaintWeightView w{.normalize = o.normalize,
                                     .gcn = o.norm == graph::BlockNorm::kGcn,
                                     .graph_offsets = offsets,
                                     .nodes = ws.nodes.data(),
                                     .row_start = ws.row_start.data(),
                                     .row_indices = ws.row_indices.data(),
                                     .edge_ids = ws.edge_ids.data(),
                                     .node_counts = cpu_.node_counts().data(),
                                     .edge_counts = cpu_.edge_counts().data(),
                                     .full_inv_sqrt = t.full_inv_sqrt.data(),
                                     .inv_sqrt = ws.inv_sqrt.data()};
    if (w.gcn) phase(k, [&](int64_t i) { induced::inv_sqrt_of(w, i); });
    phase(k, [&](int64_t i) { induced::saint_row_weights(w, i, weights.data()); });
  }

  // 5. The loss rows: the training nodes, compacted in order.
  ws.is_loss.resize(static_cast<std::size_t>(k));
  phase(k, [&](int64_t i) {
    ws.is_loss[static_cast<std::size_t>(i)] = t.is_train[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(i)])];
  });
  exclusive_scan(ws.is_loss, ws.loss_start, int64_t{0});
  std::vector<int32_t> loss_rows(static_cast<std::size_t>(ws.loss_start.back()));
  std::vector<float> loss_weights(o.normalize ? loss_rows.size() : 0);
  phase(k, [&](int64_t i) {
    if (ws.is_loss[static_cast<std::size_t>(i)] == 0) return;
    const auto at = static_cast<std::size_t>(ws.loss_start[static_cast<std::size_t>(i)]);
    loss_rows[at] = static_cast<int32_t>(i);
    if (o.normalize) {
      loss_weights[at] = induced::saint_loss_weight(cpu_.norm_samples(),
                                                    cpu_.node_counts()[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(i)])],
                                                    t.num_train);
    }
  });
  return detail::assemble_subgraph_batch(spec, ws.nodes, graph::HostArray<EdgeOffset>(ws.row_start),
                                         graph::HostArray<NodeId>(ws.row_indices), std::move(weights), std::move(loss_rows),
                                         std::move(loss_weights), o.num_layers, "GraphSAINT subgraph");
}

}  // namespace gnnpipe::samplers
