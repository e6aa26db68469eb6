#include "gnnpipe/samplers/neighbor_twin.hpp"

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/samplers/neighbor_hop.hpp"
#include "neighbor_batch.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using twin::atomic_min;
using twin::exclusive_scan;
using twin::phase;
using graph::NodeId;

// The arrays a kernel sequence would hold on the device: per graph node (local_of -1 and first
// kNoPick between batches) and per hop, reused across batches.
class TwinWorkspace final : public SamplerWorkspace {
 public:
  explicit TwinWorkspace(NodeId num_nodes)
      : local_of(static_cast<std::size_t>(num_nodes), -1), first(static_cast<std::size_t>(num_nodes), hop::kNoPick) {}
  std::vector<int32_t> local_of;
  std::vector<int64_t> first;
  std::vector<int32_t> nodes;
  std::vector<int64_t> counts, pick_start, picks, lengths, row_start;
  std::vector<int32_t> is_new, rank;
  std::vector<EdgeOffset> row_offsets;
  std::vector<int32_t> row_indices;
};

}  // namespace

NeighborSamplerTwin::NeighborSamplerTwin(const graph::CsrGraph& graph, std::vector<NodeId> train_nodes,
                                         NeighborSamplerOptions options)
    : graph_(graph), plan_(graph, std::move(train_nodes), options), o_(std::move(options)) {
  if (o_.norm == graph::BlockNorm::kGcn) inv_sqrt_degree_ = inverse_sqrt_degrees(graph_);
}

std::unique_ptr<SamplerWorkspace> NeighborSamplerTwin::make_workspace() const {
  return std::make_unique<TwinWorkspace>(graph_.num_nodes());
}

graph::MiniBatch NeighborSamplerTwin::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<TwinWorkspace&>(workspace);
  ws.nodes.assign(spec.seeds.begin(), spec.seeds.end());
  for (std::size_t i = 0; i < ws.nodes.size(); ++i) {
    const NodeId s = ws.nodes[i];
    GNNPIPE_CHECK(s >= 0 && s < graph_.num_nodes(), "batch {}: seed {} is outside [0, {})", spec.index, s, graph_.num_nodes());
    GNNPIPE_CHECK(ws.local_of[static_cast<std::size_t>(s)] < 0, "batch {}: seed {} appears twice", spec.index, s);
    ws.local_of[static_cast<std::size_t>(s)] = static_cast<int32_t>(i);
  }
  ws.row_offsets.assign(1, 0);
  ws.row_indices.clear();
  const bool self_loops = o_.norm == graph::BlockNorm::kGcn || o_.norm == graph::BlockNorm::kSelfLoops;
  std::vector<NodeId> dst_counts, src_counts;
  std::size_t expanded = 0;
  for (std::size_t h = 0; h < o_.fanouts.size(); ++h) {
    const std::size_t num_dst = ws.nodes.size();
    const auto frontier_size = static_cast<int64_t>(num_dst - expanded);
    const core::RngKey key = neighbor_hop_key(o_.seed, spec.epoch, spec.index, h, spec.attempt);
    hop::HopView v{};
    v.graph_offsets = graph_.offsets().data();
    v.graph_indices = graph_.indices().data();
    v.frontier_size = frontier_size;
    v.fanout = o_.fanouts[h];
    v.replace = o_.replace;
    v.self_loops = self_loops;
    v.key = key;
    v.local_of = ws.local_of.data();
    v.first = ws.first.data();
    v.num_nodes_before = static_cast<int32_t>(num_dst);

    ws.counts.resize(static_cast<std::size_t>(frontier_size));
    v.counts = ws.counts.data();
    v.frontier = ws.nodes.data() + expanded;
    phase(frontier_size, [&](int64_t i) { hop::count(v, i); });
    exclusive_scan(ws.counts, ws.pick_start, int64_t{0});
    v.pick_start = ws.pick_start.data();
    const int64_t num_picks = ws.pick_start.back();
    ws.picks.resize(static_cast<std::size_t>(num_picks));
    v.picks = ws.picks.data();
    phase(frontier_size, [&](int64_t i) { hop::draw(v, i); });

    phase(num_picks, [&](int64_t j) { hop::first_reach(v, j, atomic_min); });
    ws.is_new.resize(static_cast<std::size_t>(num_picks));
    v.is_new = ws.is_new.data();
    phase(num_picks, [&](int64_t j) { hop::flag(v, j); });
    exclusive_scan(ws.is_new, ws.rank, int32_t{0});
    v.rank = ws.rank.data();
    // The nodes array grows by the first reaches; the frontier is a view into it, so it is
    // re-pointed after the resize (a device sampler allocates the worst case once).
    ws.nodes.resize(num_dst + static_cast<std::size_t>(ws.rank.back()));
    v.nodes = ws.nodes.data();
    v.frontier = ws.nodes.data() + expanded;
    phase(num_picks, [&](int64_t j) { hop::assign(v, j); });

    ws.lengths.resize(static_cast<std::size_t>(frontier_size));
    v.lengths = ws.lengths.data();
    phase(frontier_size, [&](int64_t i) { hop::row_length(v, i); });
    exclusive_scan(ws.lengths, ws.row_start, static_cast<int64_t>(ws.row_indices.size()));
    v.row_start = ws.row_start.data();
    ws.row_indices.resize(static_cast<std::size_t>(ws.row_start.back()));
    v.row_indices = ws.row_indices.data();
    phase(frontier_size, [&](int64_t i) { hop::write_row(v, i); });
    ws.row_offsets.insert(ws.row_offsets.end(), ws.row_start.begin() + 1, ws.row_start.end());
    phase(num_picks, [&](int64_t j) { hop::reset(v, j); });

    expanded = num_dst;
    dst_counts.push_back(static_cast<NodeId>(num_dst));
    src_counts.push_back(static_cast<NodeId>(ws.nodes.size()));
  }
  graph::MiniBatch batch = assemble_neighbor_batch(spec, {.dst_counts = dst_counts,
                                                          .src_counts = src_counts,
                                                          .row_offsets = ws.row_offsets,
                                                          .row_indices = ws.row_indices,
                                                          .nodes = ws.nodes},
                                                   o_.norm, inv_sqrt_degree_);
  for (NodeId n : ws.nodes) ws.local_of[static_cast<std::size_t>(n)] = -1;  // clean for the next batch
  return batch;
}

}  // namespace gnnpipe::samplers
