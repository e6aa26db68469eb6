#include "gnnpipe/samplers/neighbor_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"
#include "neighbor_batch.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using graph::NodeId;

constexpr uint64_t kPlanStream = 0x706c616e;    // "plan"

// How far ahead each of a hop's passes (below) prefetches what it will read: far enough that that
// many loads are in flight while one item is worked on, near enough that the lines are still in
// cache when it comes to them. A pass whose items cost less runs further ahead (products-size
// graph, 2026-11-27: 16/16/16 gave 42.0 ms a [15, 10, 5] batch, 16/64/32 40.4 ms).
constexpr std::size_t kAheadNodes = 16;   // 1: a node's offsets, while earlier nodes draw their picks
constexpr std::size_t kAheadPicks = 64;   // 2: a pick's neighbour id (one load each)
constexpr std::size_t kAheadLocal = 32;   // 3: a neighbour's local-id slot

// Scratch of one sampling thread: the global -> local map (all -1 between batches), the nodes
// reached so far, the sampled rows accumulated in node order, and one hop's picks (positions in
// the graph's index array, the global ids there, and where each expanded node's picks end).
class NeighborWorkspace final : public SamplerWorkspace {
 public:
  explicit NeighborWorkspace(NodeId num_nodes) : local_of(static_cast<std::size_t>(num_nodes), -1) {}
  std::vector<NodeId> local_of;
  std::vector<NodeId> nodes;
  std::vector<EdgeOffset> row_offsets;
  std::vector<NodeId> row_indices;
  std::vector<EdgeOffset> pick_positions;
  std::vector<NodeId> pick_ids;
  std::vector<std::size_t> pick_ends;
};

// The local id of global node u, appending it to the node list the first time.
NodeId local_id(NeighborWorkspace& ws, NodeId u) {
  NodeId& slot = ws.local_of[static_cast<std::size_t>(u)];
  if (slot < 0) {
    slot = static_cast<NodeId>(ws.nodes.size());
    ws.nodes.push_back(u);
  }
  return slot;
}

}  // namespace

NeighborSampler::NeighborSampler(const graph::CsrGraph& graph, std::vector<NodeId> train_nodes,
                                 NeighborSamplerOptions options)
    : graph_(graph), train_(std::move(train_nodes)), o_(std::move(options)) {
  GNNPIPE_CHECK_CONFIG(!o_.fanouts.empty(), "sampler.fanouts: needs at least one hop");
  for (std::size_t h = 0; h < o_.fanouts.size(); ++h) {
    GNNPIPE_CHECK_CONFIG(o_.fanouts[h] > 0 || o_.fanouts[h] == -1, "sampler.fanouts[{}]: must be > 0 or -1, got {}", h,
                         o_.fanouts[h]);
  }
  GNNPIPE_CHECK_CONFIG(o_.batch_size >= 1, "sampler.batch_size: must be >= 1, got {}", o_.batch_size);
  for (NodeId v : train_) {
    GNNPIPE_CHECK_DATA(v >= 0 && v < graph_.num_nodes(), "training node {} is outside [0, {})", v, graph_.num_nodes());
  }
  for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
    GNNPIPE_CHECK_DATA(graph_.in_degree(v) <= kMaxDrawDegree, "node {} has {} in-neighbors; the neighbor sampler draws from at most {}",
                       v, graph_.in_degree(v), kMaxDrawDegree);
  }
  if (o_.norm == graph::BlockNorm::kGcn) inv_sqrt_degree_ = inverse_sqrt_degrees(graph_);
}

std::vector<BatchSpec> NeighborSampler::plan_epoch(int64_t epoch) const {
  std::vector<NodeId> order = train_;
  if (o_.shuffle) {
    core::Rng rng(o_.seed, {kPlanStream, static_cast<uint64_t>(epoch)});
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
  std::vector<BatchSpec> plan;
  const auto b = static_cast<std::size_t>(o_.batch_size);
  for (std::size_t begin = 0; begin < order.size(); begin += b) {
    const std::size_t end = std::min(order.size(), begin + b);
    plan.push_back(BatchSpec{epoch, static_cast<int64_t>(plan.size()),
                             std::vector<NodeId>(order.begin() + static_cast<std::ptrdiff_t>(begin),
                                                 order.begin() + static_cast<std::ptrdiff_t>(end)),
                             {}});
  }
  return plan;
}

std::unique_ptr<SamplerWorkspace> NeighborSampler::make_workspace() const {
  return std::make_unique<NeighborWorkspace>(graph_.num_nodes());
}

graph::MiniBatch NeighborSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<NeighborWorkspace&>(workspace);
  ws.nodes.clear();
  ws.row_offsets.assign(1, 0);
  ws.row_indices.clear();
  const bool self_loops = o_.norm == graph::BlockNorm::kGcn || o_.norm == graph::BlockNorm::kSelfLoops;
  for (NodeId s : spec.seeds) {
    GNNPIPE_CHECK(s >= 0 && s < graph_.num_nodes(), "batch {}: seed {} is outside [0, {})", spec.index, s,
                  graph_.num_nodes());
    const std::size_t before = ws.nodes.size();
    local_id(ws, s);
    GNNPIPE_CHECK(ws.nodes.size() > before, "batch {}: seed {} appears twice", spec.index, s);
  }

  // Hop h expands the nodes first reached in hop h - 1 (the seeds for h = 0), PyG's order; each
  // node is expanded once and its sampled row is reused by every later (deeper) block.
  std::vector<NodeId> dst_counts;  // destinations of the block of each hop
  std::vector<NodeId> src_counts;
  std::size_t expanded = 0;
  for (std::size_t h = 0; h < o_.fanouts.size(); ++h) {
    const std::size_t num_dst = ws.nodes.size();
    const core::RngKey key = neighbor_hop_key(o_.seed, spec.epoch, spec.index, h, spec.attempt);
    // The hop in three passes, each a stream of independent loads that it prefetches ahead. The
    // graph is far larger than the caches, and one pass over the nodes waited on three dependent
    // misses per node (offsets -> neighbour ids -> local ids): on the products-size graph 93 % of
    // its own time sat on the first two loads. The order of first reaches, and so every local id,
    // is that of one pass over the nodes in order and each node's picks in draw order.
    // 1. Each node's picks (from its own stream: neighbor_draw.hpp), as positions in the index array.
    const std::span<const EdgeOffset> offsets = graph_.offsets();
    const std::span<const NodeId> indices = graph_.indices();
    ws.pick_positions.clear();
    ws.pick_ends.clear();
    for (std::size_t p = expanded; p < num_dst; ++p) {
      if (p + kAheadNodes < num_dst) __builtin_prefetch(&offsets[static_cast<std::size_t>(ws.nodes[p + kAheadNodes])]);
      const auto v = static_cast<std::size_t>(ws.nodes[p]);
      const EdgeOffset begin = offsets[v], degree = offsets[v + 1] - begin;
      const std::size_t first = ws.pick_positions.size();
      ws.pick_positions.resize(first + static_cast<std::size_t>(neighbor_pick_count(degree, o_.fanouts[h], o_.replace)));
      neighbor_picks(key, static_cast<int64_t>(v), degree, o_.fanouts[h], o_.replace, ws.pick_positions.data() + first);
      for (std::size_t k = first; k < ws.pick_positions.size(); ++k) ws.pick_positions[k] += begin;
      ws.pick_ends.push_back(ws.pick_positions.size());
    }
    // 2. The picked neighbours' global ids.
    const std::size_t num_picks = ws.pick_positions.size();
    ws.pick_ids.resize(num_picks);
    for (std::size_t i = 0; i < num_picks; ++i) {
      if (i + kAheadPicks < num_picks) {
        __builtin_prefetch(&indices[static_cast<std::size_t>(ws.pick_positions[i + kAheadPicks])]);
      }
      ws.pick_ids[i] = indices[static_cast<std::size_t>(ws.pick_positions[i])];
    }
    // 3. Their local ids, row by row (a node reached first gets the next id).
    std::size_t i = 0;
    for (std::size_t p = expanded; p < num_dst; ++p) {
      const NodeId v = ws.nodes[p];
      if (self_loops) ws.row_indices.push_back(static_cast<NodeId>(p));
      for (const std::size_t end = ws.pick_ends[p - expanded]; i < end; ++i) {
        if (i + kAheadLocal < num_picks) {
          __builtin_prefetch(&ws.local_of[static_cast<std::size_t>(ws.pick_ids[i + kAheadLocal])]);
        }
        const NodeId u = ws.pick_ids[i];
        if (self_loops && u == v) continue;  // the self-loop is already there, once
        ws.row_indices.push_back(local_id(ws, u));
      }
      ws.row_offsets.push_back(static_cast<EdgeOffset>(ws.row_indices.size()));
    }
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
  for (NodeId v : ws.nodes) ws.local_of[static_cast<std::size_t>(v)] = -1;  // clean for the next batch
  return batch;
}

}  // namespace gnnpipe::samplers
