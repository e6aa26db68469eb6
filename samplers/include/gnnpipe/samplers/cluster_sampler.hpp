#pragma once
// Cluster-GCN (Chiang et al., KDD'19; PyG's ClusterData + ClusterLoader). The graph's nodes are
// split once into num_parts METIS parts (graph_partition.hpp, cached on disk). An epoch shuffles
// the parts (keyed by (seed, epoch)) and cuts them into groups of parts_per_batch, the paper's
// "stochastic multiple partitions"; the last group is smaller when it does not divide num_parts.
// A batch is the subgraph induced by its group's nodes: every full-graph edge between two of
// them, so the edges between the group's parts, which a single partition would drop, come back.
//
// Groups whose parts hold no training node are left out of the plan: their loss would be empty,
// so sampling, gathering and copying them would buy no gradient. Every training node is therefore
// in exactly one batch per epoch, and with every node a training node every node is.
//
// Each batch is ONE block shared by every layer (MiniBatch::layer_blocks): its nodes, in ascending
// global id, are both its sources and destinations, so input_nodes == targets. loss_rows are the
// positions of the training nodes among them; loss_weights stay empty (mean over those rows).
// Edge weights are computed on the subgraph itself, as Cluster-GCN normalises each subgraph's own
// adjacency:
//   kMean      1 / (in-degree in the subgraph)
//   kGcn       PyG's gcn_norm on the subgraph with exactly one self-loop per node:
//              (d_u d_v)^-1/2, d = subgraph in-degree + 1 (an existing u -> u is not doubled)
//   kSelfLoops exactly one self-loop per node added, unweighted (GAT)
//   kNone      the induced edges as they are, unweighted
// With diag_lambda > 0 (kGcn only), the paper's diagonal enhancement (eq. 10-11) replaces
// gcn_norm: A~ = (D + I)^-1 (A + I), every entry of row v (self-loop included) 1 / (d_v + 1) with
// d_v the subgraph in-degree without self-loops, and then the self-loop's entry times
// (1 + diag_lambda), i.e. A~ + lambda diag(A~).
// Sampling draws no random numbers: a batch is a function of its parts, so batches are the same
// for any thread count; only the plan's order depends on (seed, epoch).
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

struct ClusterSamplerOptions {
  int num_parts = 0;          // METIS parts P, 1 <= P <= num_nodes (required)
  int parts_per_batch = 1;    // q parts joined per batch (PyG ClusterLoader's batch_size), 1 <= q <= P
  float diag_lambda = 0.0f;   // Cluster-GCN diagonal enhancement (eq. 11); > 0 only with norm kGcn
  std::filesystem::path cache_dir{};  // partition cache (graph_partition.hpp); empty: none. ({}: designated
                                     // initializers may skip it without -Wmissing-field-initializers)
  uint64_t seed = 0;          // METIS's seed and the epoch shuffles'
  graph::BlockNorm norm = graph::BlockNorm::kMean;
  std::size_t num_layers = 2;  // model layers, all reading the shared block
};

class ClusterSampler final : public Sampler {
 public:
  // Partitions `graph` (or loads the cached partition) here, once. `graph` must outlive the
  // sampler. ConfigError naming the key for num_parts outside [1, num_nodes], parts_per_batch
  // outside [1, num_parts], a negative or non-finite diag_lambda, diag_lambda > 0 with a norm
  // other than kGcn, num_layers 0; DataError for a training node out of range.
  ClusterSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes, ClusterSamplerOptions options);

  // The groups of this epoch that hold a training node; BatchSpec::parts lists a group's parts
  // ascending, and index counts the returned specs from 0.
  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override;
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  // The induced subgraph of spec.parts, in O(nodes log q + sum of their in-degrees). Throws
  // Error for a part outside [0, num_parts) or listed twice. Thread-safe for different workspaces.
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return o_.num_layers; }
  bool redraws() const override { return false; }  // the plan fixes every batch
  // All parts in one group: every epoch's one batch is the subgraph induced by every node (the
  // shuffle only reorders the group, which is sorted).
  bool fixed_batch() const override { return o_.parts_per_batch >= o_.num_parts; }
  // The weights count the batch's rows; the diagonal enhancement's (1 + lambda) / d_v is a mean's
  // form (a view scales it by d_v / d'_v).
  std::optional<mh::ViewSupport> augment_support() const override {
    return mh::ViewSupport{.norm = o_.diag_lambda > 0.0f ? graph::BlockNorm::kMean : o_.norm,
                           .degrees = mh::ViewDegrees::kBatchRows};
  }

  // The part of each node, in [0, num_parts).
  std::span<const int32_t> parts() const { return parts_; }

  // The read-only arrays a batch reads beside the graph: what a device sampler uploads once, and
  // what the data-parallel twin (cluster_twin.hpp) reads.
  struct Tables {
    std::span<const graph::NodeId> part_offsets;  // [num_parts + 1] into part_nodes
    std::span<const graph::NodeId> part_nodes;    // nodes by part, ascending within each
    std::span<const uint8_t> is_train;            // [num_nodes]
  };
  Tables tables() const;
  const ClusterSamplerOptions& options() const { return o_; }
  const graph::CsrGraph& graph() const { return graph_; }

 private:
  const graph::CsrGraph& graph_;
  ClusterSamplerOptions o_;
  std::vector<int32_t> parts_;             // [num_nodes] part of each node
  std::vector<graph::NodeId> part_offsets_;  // [num_parts + 1] into part_nodes_
  std::vector<graph::NodeId> part_nodes_;    // nodes grouped by part, ascending within each part
  std::vector<uint8_t> is_train_;            // [num_nodes]
  std::vector<uint8_t> part_has_train_;      // [num_parts]
};

}  // namespace gnnpipe::samplers
