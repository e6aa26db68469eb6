#pragma once
// GraphSAINT subgraph sampling (Zeng et al., ICLR 2020; PyG's GraphSAINT*Sampler). Every batch is
// the subgraph INDUCED by a random node set (every full-graph edge between two chosen nodes), as
// one block shared by all layers (MiniBatch::layer_blocks): num_dst == num_src == subgraph size,
// local ids in ascending global id, input_nodes == targets == the node list, and the loss is
// taken over the training nodes among them. The node set comes from one of three samplers:
//   kNode        `budget` draws with replacement, node v with probability in-degree(v) / E
//                (PyG: a uniformly random edge, its destination), duplicates merged;
//   kEdge        `budget` edges drawn with replacement with probability proportional to
//                1/deg(u) + 1/deg(v) (deg = in-degree, at least 1), the set of their endpoints;
//   kRandomWalk  `budget` roots uniform over all nodes, each walking `walk_length` steps to a
//                uniformly random in-neighbor (stopping at a node without one), every visited node.
//
// Normalisation (`normalize`): the constructor pre-samples `norm_samples` subgraphs and counts
// C_v (subgraphs holding node v) and C_{u,v} (subgraphs holding the full-graph edge u -> v); zero
// counts read as 0.1 (PyG). An edge v <- u is weighted base(u, v) * alpha^-1 with
// alpha^-1 = C_v / C_{u,v} (the paper's alpha_{u,v} = C_{u,v} / C_v), clamped to <= 1e4, where
// base is the FULL-graph weight (kMean: 1 / in-degree(v); kGcn: (d_u d_v)^-1/2 with d = in-degree
// not counting self-loops, + 1), so that the expected aggregation over subgraphs holding v is the
// full-graph one. Added self-loops have alpha^-1 = 1. The loss of training node v is weighted
// N / (C_v * |train|), so the expected batch loss is the mean training loss. Without `normalize`
// the weights are those of the subgraph alone (kMean: 1 / subgraph in-degree; kGcn: PyG's gcn_norm
// on the subgraph with self-loops) and the loss is the plain mean over the batch's training nodes.
// kSelfLoops (GAT) adds one self-loop per node and, like kNone, leaves the block unweighted.
//
// Randomness: batch (epoch, index) draws only from (seed, epoch, index), pre-sample subgraph i
// only from (seed, i) on a separate stream, so batches and counts are the same for every thread
// count and schedule.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "gnnpipe/samplers/saint_draw.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

namespace detail {
class NodeSetDrawer;
struct InducedRows;
}

enum class SaintMode { kNode, kEdge, kRandomWalk };

struct SaintSamplerOptions {
  SaintMode mode = SaintMode::kRandomWalk;
  // kNode: nodes drawn per subgraph; kEdge: edges drawn; kRandomWalk: walk roots (PyG's
  // batch_size). The `sampler.batch_size` key.
  int budget = 1000;
  int walk_length = 2;      // kRandomWalk only: steps per walk, >= 1
  // Batches per epoch; 0 = auto: max(1, round(num_nodes / mean subgraph size)), the mean taken
  // over the first 16 pre-sample subgraphs (so an epoch visits about as many nodes as the graph has).
  int steps_per_epoch = 0;
  // Subgraphs pre-sampled to estimate the norms; 0 = auto: enough that every node is covered 50
  // times on average (ceil(50 * num_nodes / mean subgraph size), PyG's sample_coverage = 50),
  // capped at 10,000 to bound the constructor's time for tiny budgets. Ignored without `normalize`.
  int norm_samples = 0;
  bool normalize = true;    // the paper's aggregator and loss normalisation; false: see above
  uint64_t seed = 0;
  graph::BlockNorm norm = graph::BlockNorm::kMean;  // the edge weighting the model expects
  std::size_t num_layers = 2;                       // model layers that share the block
};

class SaintSampler final : public Sampler {
 public:
  // `graph` must outlive the sampler (the training nodes are kept as a mask). Pre-samples the
  // norms in parallel (oneTBB) here. ConfigError for budget < 1, walk_length < 1 (kRandomWalk),
  // steps_per_epoch < 0, norm_samples < 0, num_layers == 0, a graph without nodes, or kNode /
  // kEdge on a graph without edges; DataError for a training node out of range.
  SaintSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes, SaintSamplerOptions options);
  ~SaintSampler() override;

  // steps_per_epoch() specs {epoch, 0 .. steps - 1}; the subgraphs are drawn in sample().
  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override;
  // Scratch of one thread: a global -> local map over all nodes (reset after each batch) and the
  // rows of the last subgraph, reused so that a warm workspace allocates only the batch's output.
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  // Thread-safe for different workspaces. O(budget * draw cost + sum of the in-degrees of the
  // chosen nodes + block transpose).
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return o_.num_layers; }
  // With normalisation the weights count the full graph's in-degrees and the loss reads C_v.
  std::optional<mh::ViewSupport> augment_support() const override {
    if (!o_.normalize) return mh::ViewSupport{.norm = o_.norm, .degrees = mh::ViewDegrees::kBatchRows};
    return mh::ViewSupport{.norm = o_.norm, .degrees = mh::ViewDegrees::kFullGraph, .node_counts = node_counts_,
                           .norm_samples = norm_samples_};
  }

  int steps_per_epoch() const { return steps_per_epoch_; }  // resolved
  int norm_samples() const { return norm_samples_; }        // resolved; 0 without `normalize`

  // For tests and diagnostics: the pre-sample counts C_v (indexed by node) and C_{u,v} (indexed by
  // the full-graph CSR edge position); empty without `normalize`.
  std::span<const uint32_t> node_counts() const { return node_counts_; }
  std::span<const uint32_t> edge_counts() const { return edge_counts_; }

  // The read-only arrays a batch reads beside the graph: what a device sampler uploads once, and
  // what the data-parallel twin (saint_twin.hpp) reads.
  struct Tables {
    std::span<const saint::AliasEntry> alias;     // kNode: over nodes; kEdge: over CSR positions
    std::span<const graph::NodeId> row_of_block;  // kEdge: the row of every 2^row_block_shift-th position
    int row_block_shift = 0;
    std::span<const uint8_t> is_train;            // [num_nodes]
    double num_train = 0;                         // distinct training nodes
    std::span<const double> full_inv_sqrt;        // kGcn with normalize: per node
  };
  Tables tables() const;
  const SaintSamplerOptions& options() const { return o_; }
  const graph::CsrGraph& graph() const { return graph_; }

 private:
  // The block's edge weights (empty for kNone / kSelfLoops), indexed like rows.indices;
  // inv_sqrt_degree is per-thread scratch.
  graph::HostArray<float> edge_weights(std::span<const graph::NodeId> nodes, const detail::InducedRows& rows,
                                       std::vector<double>& inv_sqrt_degree) const;
  induced::SaintWeightView weight_view(std::span<const graph::NodeId> nodes, const detail::InducedRows& rows,
                                       std::vector<double>& inv_sqrt_degree) const;

  const graph::CsrGraph& graph_;
  SaintSamplerOptions o_;
  std::vector<uint8_t> is_train_;        // [num_nodes]: 1 for a training node
  std::size_t num_train_ = 0;            // distinct training nodes
  std::unique_ptr<const detail::NodeSetDrawer> drawer_;
  int steps_per_epoch_ = 0;
  int norm_samples_ = 0;
  std::vector<uint32_t> node_counts_;
  std::vector<uint32_t> edge_counts_;
  std::vector<double> inv_sqrt_degree_;  // kGcn: (full in-degree without self-loops + 1)^-1/2
};

}  // namespace gnnpipe::samplers
