#include "gnnpipe/samplers/saint_sampler.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"
#include "induced_subgraph.hpp"
#include "node_set_drawer.hpp"

namespace gnnpipe::samplers {
namespace {

using detail::NodeSetDrawer;
using detail::NodeSetScratch;
using graph::EdgeOffset;
using graph::NodeId;

constexpr uint64_t kNormStream = 0x736e726d;   // "snrm": pre-sample subgraph i
constexpr int64_t kPilotSubgraphs = 16;        // subgraphs whose mean size resolves the "auto" options
constexpr double kCoverage = 50;               // auto norm_samples: each node covered ~50 times (PyG)
constexpr int kMaxAutoNormSamples = 10000;
constexpr int kMaxNormSamples = 1000000;        // an explicit norm_samples (100 x the auto cap)
constexpr double kMaxDrawsPerElement = 1024;    // a batch's draws per node and edge of the graph
constexpr std::size_t kDenseScanRatio = 32;    // a node set of >= V / 32 nodes is ordered by a scan
constexpr std::size_t kPrefetchRows = 8;       // rows ahead whose counts the weight loop prefetches


const char* mode_name(SaintMode mode) {
  switch (mode) {
    case SaintMode::kNode: return "saint_node";
    case SaintMode::kEdge: return "saint_edge";
    case SaintMode::kRandomWalk: return "saint_rw";
  }
  return "?";
}

// Scratch of one sampling thread: the node set (with the global -> local map) and the rows and
// degree terms of the last subgraph.
class SaintWorkspace final : public SamplerWorkspace {
 public:
  explicit SaintWorkspace(NodeId num_nodes) : set(num_nodes) {}
  NodeSetScratch set;
  detail::InducedRows rows;
  std::vector<double> inv_sqrt_degree;  // kGcn: per local node (full graph, or the subgraph without normalize)
};

// Sorts set.nodes ascending: by a sequential scan of the marks when the set is dense (O(V),
// about as fast as sorting V / 32 ids), else by sorting (O(k log k)).
void order_ascending(NodeSetScratch& set) {
  if (set.nodes.size() * kDenseScanRatio >= set.local_of.size()) {
    set.nodes.clear();
    for (std::size_t v = 0; v < set.local_of.size(); ++v) {
      if (set.local_of[v] >= 0) set.nodes.push_back(static_cast<NodeId>(v));
    }
  } else {
    std::sort(set.nodes.begin(), set.nodes.end());
  }
}

// Leaves the map all -1 even when building a batch throws, so the workspace stays usable.
struct ResetOnExit {
  NodeSetScratch& set;
  ~ResetOnExit() { set.reset(); }
};

// Calls visit(i, workspace) for pre-sample subgraphs i in [0, count), drawn from (seed, i) into
// workspace.set in parallel, one workspace per thread; visit must be safe to run concurrently.
template <class Visit>
void for_each_presample(const NodeSetDrawer& drawer, NodeId num_nodes, uint64_t seed, int64_t count, Visit visit) {
  tbb::enumerable_thread_specific<SaintWorkspace> workspaces([num_nodes] { return SaintWorkspace(num_nodes); });
  using Range = tbb::blocked_range<int64_t>;
  tbb::parallel_for(Range(0, count), core::tsan::fork_join([&](const Range& r) {
    SaintWorkspace& ws = workspaces.local();
    for (int64_t i = r.begin(); i < r.end(); ++i) {
      drawer.draw(core::rng_key(seed, {kNormStream, static_cast<uint64_t>(i)}), ws.set);
      visit(i, ws);
      ws.set.reset();
    }
  }));
}

}  // namespace

SaintSampler::SaintSampler(const graph::CsrGraph& graph, std::vector<NodeId> train_nodes, SaintSamplerOptions options)
    : graph_(graph), o_(options) {
  GNNPIPE_CHECK_CONFIG(o_.budget >= 1, "sampler.batch_size: must be >= 1, got {}", o_.budget);
  GNNPIPE_CHECK_CONFIG(o_.mode != SaintMode::kRandomWalk || o_.walk_length >= 1,
                       "sampler.walk_length: must be >= 1, got {}", o_.walk_length);
  GNNPIPE_CHECK_CONFIG(o_.steps_per_epoch >= 0, "sampler.steps_per_epoch: must be >= 0 (0 = auto), got {}",
                       o_.steps_per_epoch);
  GNNPIPE_CHECK_CONFIG(o_.norm_samples >= 0, "sampler.norm_samples: must be >= 0 (0 = auto), got {}", o_.norm_samples);
  GNNPIPE_CHECK_CONFIG(o_.num_layers >= 1, "model.layers: must be >= 1, got {}", o_.num_layers);
  const NodeId n = graph_.num_nodes();
  GNNPIPE_CHECK_CONFIG(n > 0, "sampler.type: {} needs a graph with nodes; this one has none", mode_name(o_.mode));
  GNNPIPE_CHECK_CONFIG(o_.mode == SaintMode::kRandomWalk || graph_.num_edges() > 0,
                       "sampler.type: {} draws from the edges, but the graph has none (saint_rw works without)",
                       mode_name(o_.mode));
  GNNPIPE_CHECK_CONFIG(o_.mode != SaintMode::kEdge || graph_.num_edges() < (int64_t{1} << 32),
                       "sampler.type: saint_edge supports fewer than 2^32 edges, the graph has {}", graph_.num_edges());
  // Bounds that keep the pre-sampling finite (a walk of 10^9 steps, 2 * 10^9 draws a batch or
  // pre-samples otherwise run for hours): a batch's draws stay within kMaxDrawsPerElement per
  // node and edge of the graph (far past the point where a batch is the whole graph).
  const double draws = static_cast<double>(o_.budget) *
                       (o_.mode == SaintMode::kRandomWalk ? static_cast<double>(o_.walk_length) + 1 : 1.0);
  const double elements = static_cast<double>(n) + static_cast<double>(graph_.num_edges());
  GNNPIPE_CHECK_CONFIG(draws <= kMaxDrawsPerElement * elements,
                       "sampler.{}: {} draws a batch, more than {} per node and edge of this graph ({} nodes, {} "
                       "edges): a batch covers the graph long before",
                       o_.mode == SaintMode::kRandomWalk ? "batch_size x (walk_length + 1)" : "batch_size", draws,
                       kMaxDrawsPerElement, n, graph_.num_edges());
  GNNPIPE_CHECK_CONFIG(o_.norm_samples <= kMaxNormSamples, "sampler.norm_samples: at most {}, got {}", kMaxNormSamples,
                       o_.norm_samples);
  if (o_.mode == SaintMode::kRandomWalk) {
    for (NodeId v = 0; v < n; ++v) {
      GNNPIPE_CHECK_DATA(graph_.in_degree(v) <= kMaxDrawDegree, "node {} has {} in-neighbors; saint_rw walks through at most {}",
                         v, graph_.in_degree(v), kMaxDrawDegree);
    }
  }
  is_train_.assign(static_cast<std::size_t>(n), 0);
  for (NodeId v : train_nodes) {
    GNNPIPE_CHECK_DATA(v >= 0 && v < n, "training node {} is outside [0, {})", v, n);
    num_train_ += is_train_[static_cast<std::size_t>(v)] == 0 ? 1 : 0;
    is_train_[static_cast<std::size_t>(v)] = 1;
  }
  drawer_ = std::make_unique<NodeSetDrawer>(graph_, o_.mode, o_.budget, o_.walk_length);

  // The "auto" options need the mean subgraph size: the first pre-sample subgraphs estimate it.
  double mean_size = 0;
  if (o_.steps_per_epoch == 0 || (o_.normalize && o_.norm_samples == 0)) {
    std::vector<std::size_t> sizes(kPilotSubgraphs);
    for_each_presample(*drawer_, n, o_.seed, kPilotSubgraphs,
                       [&](int64_t i, const SaintWorkspace& ws) { sizes[static_cast<std::size_t>(i)] = ws.set.nodes.size(); });
    for (std::size_t size : sizes) mean_size += static_cast<double>(size);
    mean_size /= static_cast<double>(kPilotSubgraphs);  // >= 1: every subgraph holds a root or a drawn node
  }
  steps_per_epoch_ = o_.steps_per_epoch > 0
                         ? o_.steps_per_epoch
                         : static_cast<int>(std::clamp<double>(std::round(n / mean_size), 1, INT_MAX));
  if (!o_.normalize) return;
  norm_samples_ = o_.norm_samples > 0
                      ? o_.norm_samples
                      : static_cast<int>(std::clamp<double>(std::ceil(kCoverage * n / mean_size), 1, kMaxAutoNormSamples));

  // C_v and C_{u,v}: relaxed atomic increments commute, so the counts do not depend on scheduling.
  // The subgraph's edges are listed first (ascending, branch-free; see induced_rows) and counted in
  // a tight loop, so the atomics hit lines in ascending order instead of waiting on a scan.
  node_counts_.assign(static_cast<std::size_t>(n), 0);
  edge_counts_.assign(static_cast<std::size_t>(graph_.num_edges()), 0);
  for_each_presample(*drawer_, n, o_.seed, norm_samples_, [&](int64_t, SaintWorkspace& ws) {
    order_ascending(ws.set);
    for (NodeId v : ws.set.nodes) {
      std::atomic_ref<uint32_t>(node_counts_[static_cast<std::size_t>(v)]).fetch_add(1, std::memory_order_relaxed);
    }
    detail::induced_rows(graph_, ws.set.nodes, ws.set.local_of, false, ws.rows);
    for (std::size_t k = 0; k < ws.rows.num_edges; ++k) {
      std::atomic_ref<uint32_t>(edge_counts_[static_cast<std::size_t>(ws.rows.edge_ids[k])]).fetch_add(1, std::memory_order_relaxed);
    }
  });
  if (o_.norm == graph::BlockNorm::kGcn) {
    // Full-graph GCN degrees with exactly one self-loop per node (as full_graph_block counts them).
    inv_sqrt_degree_.resize(static_cast<std::size_t>(n));
    for (NodeId v = 0; v < n; ++v) {
      const auto row = graph_.in_neighbors(v);
      const auto loops = std::count(row.begin(), row.end(), v);
      inv_sqrt_degree_[static_cast<std::size_t>(v)] =
          1.0 / std::sqrt(static_cast<double>(static_cast<EdgeOffset>(row.size()) - loops + 1));
    }
  }
}

SaintSampler::~SaintSampler() = default;

std::vector<BatchSpec> SaintSampler::plan_epoch(int64_t epoch) const {
  std::vector<BatchSpec> plan;
  plan.reserve(static_cast<std::size_t>(steps_per_epoch_));
  for (int i = 0; i < steps_per_epoch_; ++i) plan.push_back(BatchSpec{epoch, i, {}, {}});
  return plan;
}

std::unique_ptr<SamplerWorkspace> SaintSampler::make_workspace() const {
  return std::make_unique<SaintWorkspace>(graph_.num_nodes());
}

induced::SaintWeightView SaintSampler::weight_view(std::span<const NodeId> nodes, const detail::InducedRows& r,
                                                  std::vector<double>& inv_sqrt_degree) const {
  return {.normalize = o_.normalize,
          .gcn = o_.norm == graph::BlockNorm::kGcn,
          .graph_offsets = graph_.offsets().data(),
          .nodes = nodes.data(),
          .row_start = r.offsets.data(),
          .row_indices = r.indices.data(),
          .edge_ids = r.edge_ids.data(),
          .node_counts = node_counts_.data(),
          .edge_counts = edge_counts_.data(),
          .full_inv_sqrt = inv_sqrt_degree_.data(),
          .inv_sqrt = inv_sqrt_degree.data()};
}

graph::HostArray<float> SaintSampler::edge_weights(std::span<const NodeId> nodes, const detail::InducedRows& r,
                                                  std::vector<double>& inv_sqrt_degree) const {
  if (o_.norm != graph::BlockNorm::kMean && o_.norm != graph::BlockNorm::kGcn) return {};
  const std::size_t k = nodes.size();
  graph::HostArray<float> weights(r.num_edges);
  inv_sqrt_degree.resize(o_.norm == graph::BlockNorm::kGcn ? k : 0);
  const induced::SaintWeightView view = weight_view(nodes, r, inv_sqrt_degree);
  if (view.gcn) {
    for (std::size_t i = 0; i < k; ++i) induced::inv_sqrt_of(view, static_cast<int64_t>(i));
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (o_.normalize && i + kPrefetchRows < k) {
      // The counts of a row lie far from the previous row's: ask for them a few rows ahead
      // (a cache miss per row was half of this loop's time on arxiv).
      const auto ahead = static_cast<std::size_t>(nodes[i + kPrefetchRows]);
      __builtin_prefetch(&node_counts_[ahead]);
      const auto end = static_cast<std::size_t>(graph_.offsets()[ahead + 1]);
      for (auto e = static_cast<std::size_t>(graph_.offsets()[ahead]); e < end; e += 16) __builtin_prefetch(&edge_counts_[e]);
    }
    induced::saint_row_weights(view, static_cast<int64_t>(i), weights.data());
  }
  return weights;
}

graph::MiniBatch SaintSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<SaintWorkspace&>(workspace);
  const ResetOnExit reset{ws.set};
  drawer_->draw(saint::batch_key(o_.seed, spec.epoch, spec.index, spec.attempt), ws.set);
  order_ascending(ws.set);  // local order = ascending global id
  const std::vector<NodeId>& nodes = ws.set.nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) ws.set.local_of[static_cast<std::size_t>(nodes[i])] = static_cast<NodeId>(i);
  const bool self_loops = o_.norm == graph::BlockNorm::kGcn || o_.norm == graph::BlockNorm::kSelfLoops;
  detail::induced_rows(graph_, nodes, ws.set.local_of, self_loops, ws.rows);
  const detail::InducedRows& r = ws.rows;
  const std::size_t k = nodes.size();

  graph::HostArray<float> weights = edge_weights(nodes, r, ws.inv_sqrt_degree);

  std::vector<int32_t> loss_rows;
  std::vector<float> loss_weights;
  for (std::size_t i = 0; i < k; ++i) {
    const auto v = static_cast<std::size_t>(nodes[i]);
    if (is_train_[v] == 0) continue;
    loss_rows.push_back(static_cast<int32_t>(i));
    if (o_.normalize) {
      loss_weights.push_back(induced::saint_loss_weight(norm_samples_, node_counts_[v], static_cast<double>(num_train_)));
    }
  }
  return detail::assemble_subgraph_batch(spec, nodes, graph::HostArray<EdgeOffset>(r.offsets),
                                         graph::HostArray<NodeId>(std::vector<NodeId>(
                                             r.indices.begin(), r.indices.begin() + static_cast<std::ptrdiff_t>(r.num_edges))),
                                         std::move(weights), std::move(loss_rows), std::move(loss_weights), o_.num_layers,
                                         "GraphSAINT subgraph");
}

SaintSampler::Tables SaintSampler::tables() const {
  return {.alias = drawer_->table().entries(),
          .row_of_block = drawer_->row_of_block(),
          .row_block_shift = detail::NodeSetDrawer::kRowBlockShift,
          .is_train = is_train_,
          .num_train = static_cast<double>(num_train_),
          .full_inv_sqrt = inv_sqrt_degree_};
}

}  // namespace gnnpipe::samplers
