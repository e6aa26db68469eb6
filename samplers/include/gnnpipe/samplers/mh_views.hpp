#pragma once
// MH-Aug's views of a batch (issue #41; ../shared/reference/MH-AUG.md §3, §7.6): the chain's
// states are keep-masks over the entries of the chain's graph (the training graph without its
// self-loops, rows sorted), and a batch (one square block shared by every layer: full batch,
// GraphSAINT, Cluster-GCN; or one block per layer: neighbor sampling, whose local ids are one
// numbering, input_nodes) gets, from its one node sample, the view of the previous state and the
// view of the new one, block by block:
//   - the block's entries whose graph entry the state keeps (self-loops always stay: the
//     aggregator adds one per node, and none is ever dropped), in the original order;
//   - each kept entry's weight re-normalised from the state's kept in-degrees (MH-AUG.md §3 (b),
//     (c)): GCN's (d_u d_v)^-1/2 becomes (d'_u d'_v)^-1/2 and the mean's 1/d_v becomes 1/d'_v,
//     everything else in the weight (GraphSAINT's alpha^-1) unchanged, where d counts what the
//     sampler's weights counted (the batch's rows, or the full graph's in-degrees) and d' the same
//     count without the dropped entries;
//   - each input row's feature factor: 0 for a masked node, else N / (N - masked) (§3 (d): the
//     global N and count).
// And each target's weight in the KL and entropy terms (§3 (a)): GraphSAINT with normalisation
// N_pre / (C_v N), so that a batch's expected sum is the mean over all nodes; otherwise the mean
// over the batch's targets (1 / |V_s|; the full batch: 1 / N; neighbor sampling: 1 / seeds).
// A neighbor drawn twice (with replacement) reads its entry's flag twice.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/samplers/mh_aug.hpp"
#include "gnnpipe/samplers/view_support.hpp"

namespace gnnpipe::samplers::mh {

// `graph` without its self-loops, rows sorted: the graph the chain runs on.
graph::CsrGraph chain_graph(const graph::CsrGraph& graph);

// A state as views read it: its masks, the dropped in-entries of each node, the feature factor.
struct ViewState {
  MhMasks masks;
  std::vector<int32_t> dropped_in;  // per node
  float feature_factor = 1.0f;      // N / (N - masked)
  // Built from a chain state over `chain` (masks sized for it, else DataError).
  static ViewState of(const graph::CsrGraph& chain, MhMasks masks);
};

class ViewBuilder {
 public:
  // `graph`: the sampler's graph; `chain`: chain_graph(graph). Both must outlive the builder.
  ViewBuilder(const graph::CsrGraph& graph, const graph::CsrGraph& chain, ViewSupport support);

  // Sets batch.views to {view of `previous`, view of `next`} and batch.node_weights. Local id j
  // of every block is global id input_nodes[j]; an entry that is not in the graph is a DataError
  // naming the batch.
  void attach(graph::MiniBatch& batch, const ViewState& previous, const ViewState& next) const;

  // The view of one state (attach's parts; tests). chain_entries: per block, per entry its chain
  // entry (-1: a self-loop).
  std::vector<std::vector<int64_t>> chain_entries(const graph::MiniBatch& batch) const;
  graph::MiniBatch::AugmentedView view(const graph::MiniBatch& batch,
                                       const std::vector<std::vector<int64_t>>& chain_entries,
                                       const ViewState& state) const;
  graph::HostArray<float> node_weights(const graph::MiniBatch& batch) const;

 private:
  std::vector<int64_t> block_entries(const graph::MiniBatch& batch, const graph::Block& b) const;
  graph::Block view_block(const graph::MiniBatch& batch, const graph::Block& b, std::span<const int64_t> chain_entry,
                          const ViewState& state) const;

  const graph::CsrGraph& graph_;
  const graph::CsrGraph& chain_;
  ViewSupport support_;
};

}  // namespace gnnpipe::samplers::mh
