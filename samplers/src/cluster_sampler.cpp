#include "gnnpipe/samplers/cluster_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/graph_partition.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "induced_subgraph.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::BlockNorm;
using graph::EdgeOffset;
using graph::NodeId;

constexpr uint64_t kPlanStream = 0x636c7573;  // "clus"

// Scratch of one sampling thread: the global -> local map (all -1 between batches), the batch's
// nodes (and a second buffer for merging the parts' sorted node lists), and its CSR.
class ClusterWorkspace final : public SamplerWorkspace {
 public:
  explicit ClusterWorkspace(NodeId num_nodes) : local_of(static_cast<std::size_t>(num_nodes), -1) {}
  std::vector<NodeId> local_of;
  std::vector<NodeId> nodes;
  std::vector<NodeId> merge_buffer;
  std::vector<std::size_t> runs;  // boundaries of the sorted runs in `nodes` while merging
  std::vector<EdgeOffset> row_offsets;
  std::vector<NodeId> row_indices;
};

// Resets the local ids of ws.nodes to -1 when the batch is done, also when it throws.
class LocalIdsGuard {
 public:
  explicit LocalIdsGuard(ClusterWorkspace& ws) : ws_(ws) {}
  LocalIdsGuard(const LocalIdsGuard&) = delete;
  LocalIdsGuard& operator=(const LocalIdsGuard&) = delete;
  ~LocalIdsGuard() {
    for (NodeId v : ws_.nodes) ws_.local_of[static_cast<std::size_t>(v)] = -1;
  }

 private:
  ClusterWorkspace& ws_;
};

// Merges the sorted runs of ws.nodes (boundaries in ws.runs) pairwise until one sorted run is
// left: O(n log runs), no allocation once the buffers are warm.
void merge_runs(ClusterWorkspace& ws) {
  while (ws.runs.size() > 2) {
    ws.merge_buffer.resize(ws.nodes.size());
    std::size_t kept = 0;
    for (std::size_t r = 0; r + 1 < ws.runs.size(); r += 2) {
      const auto first = ws.nodes.begin() + static_cast<std::ptrdiff_t>(ws.runs[r]);
      const auto mid = ws.nodes.begin() + static_cast<std::ptrdiff_t>(ws.runs[r + 1]);
      const auto last = ws.nodes.begin() + static_cast<std::ptrdiff_t>(ws.runs[std::min(r + 2, ws.runs.size() - 1)]);
      std::merge(first, mid, mid, last, ws.merge_buffer.begin() + static_cast<std::ptrdiff_t>(ws.runs[r]));
      ws.runs[kept++] = ws.runs[r];
    }
    ws.runs[kept++] = ws.nodes.size();
    ws.runs.resize(kept);
    ws.nodes.swap(ws.merge_buffer);
  }
}

}  // namespace

ClusterSampler::ClusterSampler(const graph::CsrGraph& graph, std::vector<NodeId> train_nodes,
                               ClusterSamplerOptions options)
    : graph_(graph), o_(std::move(options)) {
  const NodeId n = graph_.num_nodes();
  GNNPIPE_CHECK_CONFIG(o_.num_parts >= 1 && o_.num_parts <= n, "sampler.num_parts: must be in [1, {}] ({} nodes), got {}",
                       n, n, o_.num_parts);
  GNNPIPE_CHECK_CONFIG(o_.parts_per_batch >= 1 && o_.parts_per_batch <= o_.num_parts,
                       "sampler.parts_per_batch: must be in [1, {}] (sampler.num_parts), got {}", o_.num_parts,
                       o_.parts_per_batch);
  GNNPIPE_CHECK_CONFIG(std::isfinite(o_.diag_lambda) && o_.diag_lambda >= 0.0f,
                       "sampler.diag_lambda: must be a finite number >= 0, got {}", o_.diag_lambda);
  GNNPIPE_CHECK_CONFIG(o_.diag_lambda == 0.0f || o_.norm == BlockNorm::kGcn,
                       "sampler.diag_lambda: {} > 0 works only with model gcn (it replaces the GCN normalisation); "
                       "use 0 for other models", o_.diag_lambda);
  GNNPIPE_CHECK_CONFIG(o_.num_layers >= 1, "model.layers: must be >= 1, got {}", o_.num_layers);
  is_train_.assign(static_cast<std::size_t>(n), 0);
  for (NodeId v : train_nodes) {
    GNNPIPE_CHECK_DATA(v >= 0 && v < n, "training node {} is outside [0, {})", v, n);
    is_train_[static_cast<std::size_t>(v)] = 1;
  }

  parts_ = load_or_partition(graph_, o_.num_parts, o_.seed, o_.cache_dir);
  GNNPIPE_CHECK(parts_.size() == static_cast<std::size_t>(n), "partition has {} entries for {} nodes", parts_.size(), n);
  // Counting sort of the nodes by part; walking nodes in order keeps every part's list ascending.
  const auto num_parts = static_cast<std::size_t>(o_.num_parts);
  part_offsets_.assign(num_parts + 1, 0);
  part_has_train_.assign(num_parts, 0);
  for (NodeId v = 0; v < n; ++v) {
    const int32_t p = parts_[static_cast<std::size_t>(v)];
    GNNPIPE_CHECK(p >= 0 && p < o_.num_parts, "node {} is in part {}, outside [0, {})", v, p, o_.num_parts);
    ++part_offsets_[static_cast<std::size_t>(p) + 1];
    part_has_train_[static_cast<std::size_t>(p)] |= is_train_[static_cast<std::size_t>(v)];
  }
  std::partial_sum(part_offsets_.begin(), part_offsets_.end(), part_offsets_.begin());
  std::vector<NodeId> cursor(part_offsets_.begin(), part_offsets_.end() - 1);
  part_nodes_.resize(static_cast<std::size_t>(n));
  for (NodeId v = 0; v < n; ++v) {
    part_nodes_[static_cast<std::size_t>(cursor[static_cast<std::size_t>(parts_[static_cast<std::size_t>(v)])]++)] = v;
  }
}

std::vector<BatchSpec> ClusterSampler::plan_epoch(int64_t epoch) const {
  std::vector<int32_t> order(static_cast<std::size_t>(o_.num_parts));
  std::iota(order.begin(), order.end(), 0);
  core::Rng rng(o_.seed, {kPlanStream, static_cast<uint64_t>(epoch)});
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);

  std::vector<BatchSpec> plan;
  const auto q = static_cast<std::size_t>(o_.parts_per_batch);
  for (std::size_t begin = 0; begin < order.size(); begin += q) {
    std::vector<int32_t> group(order.begin() + static_cast<std::ptrdiff_t>(begin),
                               order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), begin + q)));
    const bool has_train = std::any_of(group.begin(), group.end(),
                                       [&](int32_t p) { return part_has_train_[static_cast<std::size_t>(p)] != 0; });
    if (!has_train) continue;
    std::sort(group.begin(), group.end());
    plan.push_back(BatchSpec{epoch, static_cast<int64_t>(plan.size()), {}, std::move(group)});
  }
  return plan;
}

std::unique_ptr<SamplerWorkspace> ClusterSampler::make_workspace() const {
  return std::make_unique<ClusterWorkspace>(graph_.num_nodes());
}

graph::MiniBatch ClusterSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<ClusterWorkspace&>(workspace);
  std::vector<int32_t> sorted_parts = spec.parts;
  std::sort(sorted_parts.begin(), sorted_parts.end());
  for (std::size_t i = 0; i < sorted_parts.size(); ++i) {
    const int32_t p = sorted_parts[i];
    GNNPIPE_CHECK(p >= 0 && p < o_.num_parts, "batch {}: part {} is outside [0, {})", spec.index, p, o_.num_parts);
    GNNPIPE_CHECK(i == 0 || sorted_parts[i - 1] != p, "batch {}: part {} appears twice", spec.index, p);
  }

  // The nodes of the parts, ascending: each part's list is sorted, so merge the runs.
  ws.nodes.clear();
  ws.runs.assign(1, 0);
  for (int32_t p : sorted_parts) {
    const auto begin = part_nodes_.begin() + part_offsets_[static_cast<std::size_t>(p)];
    const auto end = part_nodes_.begin() + part_offsets_[static_cast<std::size_t>(p) + 1];
    if (begin == end) continue;
    ws.nodes.insert(ws.nodes.end(), begin, end);
    ws.runs.push_back(ws.nodes.size());
  }
  merge_runs(ws);
  const LocalIdsGuard guard(ws);
  for (std::size_t i = 0; i < ws.nodes.size(); ++i) ws.local_of[static_cast<std::size_t>(ws.nodes[i])] = static_cast<NodeId>(i);

  // The induced rows (induced_phases.hpp: local ids grow with global ids, so sorted graph rows
  // stay sorted; the self-loop, when added, goes in at its sorted place and the graph's own u -> u
  // is dropped so that there is exactly one).
  const induced::InducedView view{.graph_offsets = graph_.offsets().data(),
                                  .graph_indices = graph_.indices().data(),
                                  .nodes = ws.nodes.data(),
                                  .local_of = ws.local_of.data(),
                                  .self_loops = o_.norm == BlockNorm::kGcn || o_.norm == BlockNorm::kSelfLoops,
                                  .lengths = nullptr,
                                  .row_start = nullptr,
                                  .row_indices = nullptr,
                                  .edge_ids = nullptr};
  ws.row_offsets.assign(1, 0);
  ws.row_indices.clear();
  for (std::size_t i = 0; i < ws.nodes.size(); ++i) {
    induced::for_each_entry(view, static_cast<int64_t>(i), [&](NodeId local, int64_t) { ws.row_indices.push_back(local); });
    ws.row_offsets.push_back(static_cast<EdgeOffset>(ws.row_indices.size()));
  }

  const std::size_t n = ws.nodes.size();
  graph::HostArray<float> weights;
  if (o_.norm == BlockNorm::kMean || o_.norm == BlockNorm::kGcn) {
    weights = graph::HostArray<float>(ws.row_indices.size());
    std::vector<double> inv_sqrt(n);
    const induced::ClusterWeightView w{.gcn = o_.norm == BlockNorm::kGcn,
                                       .diag_lambda = o_.diag_lambda,
                                       .row_start = ws.row_offsets.data(),
                                       .row_indices = ws.row_indices.data(),
                                       .inv_sqrt = inv_sqrt.data()};
    if (w.gcn && w.diag_lambda == 0.0f) {
      for (std::size_t i = 0; i < n; ++i) induced::cluster_inv_sqrt_of(w, static_cast<int64_t>(i));
    }
    for (std::size_t i = 0; i < n; ++i) induced::cluster_row_weights(w, static_cast<int64_t>(i), weights.data());
  }
  std::vector<int32_t> loss_rows;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_train_[static_cast<std::size_t>(ws.nodes[i])] != 0) loss_rows.push_back(static_cast<int32_t>(i));
  }
  return detail::assemble_subgraph_batch(spec, ws.nodes, graph::HostArray<EdgeOffset>(ws.row_offsets),
                                         graph::HostArray<NodeId>(ws.row_indices), std::move(weights), std::move(loss_rows),
                                         {}, o_.num_layers, "cluster block");
}

ClusterSampler::Tables ClusterSampler::tables() const { return {.part_offsets = part_offsets_, .part_nodes = part_nodes_, .is_train = is_train_}; }

}  // namespace gnnpipe::samplers
