#include "gnnpipe/samplers/neighbor_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using graph::NodeId;

constexpr uint64_t kPlanStream = 0x706c616e;    // "plan"
constexpr uint64_t kSampleStream = 0x73616d70;  // "samp"

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

// Appends the positions in the graph's index array of `fanout` picks from the row [begin, begin +
// degree): all when fanout is -1 or >= degree (without replacement), distinct ones by Floyd's
// algorithm otherwise, or independent draws with replacement.
void pick(core::Rng& rng, EdgeOffset begin, EdgeOffset degree, int fanout, bool replace, std::vector<EdgeOffset>& out) {
  if (degree == 0) return;
  if (fanout < 0 || (!replace && degree <= fanout)) {
    for (EdgeOffset k = 0; k < degree; ++k) out.push_back(begin + k);
    return;
  }
  if (replace) {
    for (int k = 0; k < fanout; ++k) {
      out.push_back(begin + static_cast<EdgeOffset>(rng.below(static_cast<uint64_t>(degree))));
    }
    return;
  }
  const auto first = static_cast<std::ptrdiff_t>(out.size());  // this row's picks so far: out[first..]
  for (EdgeOffset j = degree - fanout; j < degree; ++j) {  // Floyd: a uniform fanout-subset
    const EdgeOffset t = begin + static_cast<EdgeOffset>(rng.below(static_cast<uint64_t>(j + 1)));
    const bool seen = std::find(out.begin() + first, out.end(), t) != out.end();
    out.push_back(seen ? begin + j : t);
  }
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
  if (o_.norm == graph::BlockNorm::kGcn) {
    inv_sqrt_degree_.resize(static_cast<std::size_t>(graph_.num_nodes()));
    for (NodeId v = 0; v < graph_.num_nodes(); ++v) {
      inv_sqrt_degree_[static_cast<std::size_t>(v)] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(graph_.in_degree(v) + 1)));
    }
  }
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
    core::RngKey key = core::rng_key(o_.seed, {kSampleStream, static_cast<uint64_t>(spec.epoch), static_cast<uint64_t>(spec.index), h});
    if (spec.attempt > 0) key = key.with(static_cast<uint64_t>(spec.attempt));  // the plan's batch keeps its stream
    core::Rng rng(key);
    // The hop in three passes, each a stream of independent loads that it prefetches ahead. The
    // graph is far larger than the caches, and one pass over the nodes waited on three dependent
    // misses per node (offsets -> neighbour ids -> local ids): on the products-size graph 93 % of
    // its own time sat on the first two loads. The draws, the order of first reaches and so every
    // local id are those of that single pass: batches are bitwise what they were.
    // 1. Each node's picks, in node order (the rng's order), as positions in the index array.
    const std::span<const EdgeOffset> offsets = graph_.offsets();
    const std::span<const NodeId> indices = graph_.indices();
    ws.pick_positions.clear();
    ws.pick_ends.clear();
    for (std::size_t p = expanded; p < num_dst; ++p) {
      if (p + kAheadNodes < num_dst) __builtin_prefetch(&offsets[static_cast<std::size_t>(ws.nodes[p + kAheadNodes])]);
      const auto v = static_cast<std::size_t>(ws.nodes[p]);
      pick(rng, offsets[v], offsets[v + 1] - offsets[v], o_.fanouts[h], o_.replace, ws.pick_positions);
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

  graph::MiniBatch batch;
  batch.epoch = spec.epoch;
  batch.index = spec.index;
  // Blocks input side first: the deepest hop is blocks[0].
  for (std::size_t h = o_.fanouts.size(); h-- > 0;) {
    const auto nd = static_cast<std::size_t>(dst_counts[h]);
    graph::HostArray<EdgeOffset> offsets(std::vector<EdgeOffset>(ws.row_offsets.begin(), ws.row_offsets.begin() + static_cast<std::ptrdiff_t>(nd + 1)));
    graph::HostArray<NodeId> indices(std::vector<NodeId>(ws.row_indices.begin(), ws.row_indices.begin() + offsets[nd]));
    graph::HostArray<float> weights;
    if (o_.norm == graph::BlockNorm::kMean || o_.norm == graph::BlockNorm::kGcn) {
      weights = graph::HostArray<float>(indices.size());
      for (std::size_t v = 0; v < nd; ++v) {
        for (auto e = offsets[v]; e < offsets[v + 1]; ++e) {
          const auto k = static_cast<std::size_t>(e);
          weights[k] = o_.norm == graph::BlockNorm::kMean
                           ? 1.0f / static_cast<float>(offsets[v + 1] - offsets[v])
                           : inv_sqrt_degree_[static_cast<std::size_t>(ws.nodes[static_cast<std::size_t>(indices[k])])] *
                                 inv_sqrt_degree_[static_cast<std::size_t>(ws.nodes[v])];
        }
      }
    }
    batch.blocks.push_back(graph::Block::from_csr(dst_counts[h], src_counts[h], std::move(offsets), std::move(indices),
                                                  std::move(weights), "sampled block"));
  }
  batch.input_nodes = graph::HostArray<NodeId>(std::vector<NodeId>(ws.nodes.begin(), ws.nodes.end()));
  batch.targets = graph::HostArray<NodeId>(std::vector<NodeId>(spec.seeds.begin(), spec.seeds.end()));
  batch.loss_rows = graph::HostArray<int32_t>(spec.seeds.size());
  for (std::size_t i = 0; i < spec.seeds.size(); ++i) batch.loss_rows[i] = static_cast<int32_t>(i);
  batch.compute_shape(0, o_.fanouts.size());
  for (NodeId v : ws.nodes) ws.local_of[static_cast<std::size_t>(v)] = -1;  // clean for the next batch
  return batch;
}

}  // namespace gnnpipe::samplers
