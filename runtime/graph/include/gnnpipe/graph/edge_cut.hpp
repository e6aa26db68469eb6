#pragma once
// Cutting edges out of a mini-batch that does not fit the device budget (`memory.policy: cut`,
// issue #13). The memory governor binary-searches how many edges to remove with its predictor; this
// file ranks the batch's edges once and then removes any number of them cheaply:
//
//   EdgeCutPlan plan(batch, scores, {.key = cut_rng_key(seed, epoch, index), .weights = ...});
//   ... plan.shape_after(k) for the predictor, O(blocks * log E) per call ...
//   EdgeCut cut = plan.cut(k);   // cut.batch replaces the batch; cut.removed edges went
//
// Ranking. Every edge u -> v of every block (local ids mapped to global by `input_nodes`) gets
// edge_score(strategy, value[u], value[v]) (node_scores.hpp); edges go lowest score first. Ties (and
// every edge under kRandom, whose score is constant) are ordered by a 64-bit Philox value drawn
// for the edge's position from `key`, then by position, so the order is a total one: deterministic
// for a key, a uniformly random permutation under kRandom, and with no bias towards a block, a row
// or a local id when scores tie (degree scores tie often). Self-loops (u == v: the GCN/GAT loops the
// samplers add) are never removed.
//
// Which blocks: all blocks' edges compete in one ranking; an edge's score does not depend on the
// layer it feeds, and the memory the cut saves is the predictor's business (the governor searches
// the count, so it accounts for where the removed edges fall). In practice most removed edges lie
// in the input-side block, the largest. A shared square block (GraphSAINT, Cluster-GCN, full batch:
// one block for all layers) is one block: an edge removed there is gone from every layer.
//
// The result is a valid batch: each changed block is rebuilt by Block::from_csr (transposes
// rebuilt), node counts and every node list (input_nodes, targets, loss rows and weights) are
// unchanged (shared with the input batch, not copied), so destinations stay a prefix of sources; a
// node may lose all its in-edges (an empty row aggregates to zero; a block left without edges has
// an empty weights array, so weighted() is false, as for any block without edges). Unchanged
// blocks are shared with the input. `shape` is recomputed with the input's feature_dim and layer
// count.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/memory/batch_shape.hpp"

namespace gnnpipe::graph {

// What happens to the weights of a row that lost edges.
enum class CutWeights {
  // Kept as sampled, for weights that estimate full-graph quantities: GCN's (d_u d_v)^-1/2 from
  // full-graph degrees, GraphSAINT's alpha-normalised weights (`normalize`), Cluster-GCN's
  // diag_lambda, and unweighted blocks.
  kKeep,
  // Weights that are 1 / row length (BlockNorm::kMean over what was sampled: the neighbor sampler,
  // Cluster-GCN, a full batch, GraphSAINT without `normalize`): every row that lost an edge gets
  // 1 / (its new length) on each kept edge, as the samplers compute it (1.0f / float(length)).
  // Unchanged rows and unweighted blocks are left alone.
  kRowMean,
};

struct EdgeCutOptions {
  core::RngKey key{};                     // the random order and tie-breaks: use cut_rng_key
  CutWeights weights = CutWeights::kKeep;
};

// The random stream of one batch's cut: (seed, epoch, batch) under a tag of its own, so it never
// repeats the sampler's or dropout's draws for the same batch.
core::RngKey cut_rng_key(uint64_t seed, int64_t epoch, int64_t batch);

struct EdgeCut {
  MiniBatch batch;
  int64_t removed = 0;  // edges removed: min(count, removable edges)
};

class EdgeCutPlan {
 public:
  // Ranks every removable edge of `batch` in O(E log E) (parallel: scores, then a merge sort by a
  // total order, so the ranking is the same for any thread count). `batch` must outlive the plan
  // and stay unchanged. Throws Error when `batch` is not a chain of blocks whose local ids map
  // through input_nodes (blocks[0].num_src == input_nodes.size(), blocks[l].num_dst ==
  // blocks[l + 1].num_src) or its shape's layer count does not fit its blocks, when `scores` has no
  // values for a strategy that needs them, or when a batch node has no value or a value that is
  // not finite and > 0.
  EdgeCutPlan(const MiniBatch& batch, const NodeScores& scores, const EdgeCutOptions& options = {});

  int64_t num_edges() const { return block_start_.back(); }  // all blocks' edges
  int64_t removable_edges() const { return static_cast<int64_t>(order_.size()); }  // not self-loops

  // Edges of each block after removing the min(count, removable) lowest-ranked; count >= 0.
  std::vector<int64_t> block_edges_after(int64_t count) const;
  // The shape cut(count).batch will have, without building it: O(blocks * log E).
  memory::BatchShape shape_after(int64_t count) const;
  // The batch without its min(count, removable) lowest-ranked edges; count >= 0. O(E) for the
  // changed blocks. Thread-safe (const; several cuts of one plan may run at once).
  EdgeCut cut(int64_t count) const;

  // Positions of the removable edges, lowest rank first; a position is an edge id within its
  // block plus the edge counts of the blocks before it (block 0 first).
  std::span<const int64_t> ranked_edges() const { return order_; }

 private:
  int64_t removed_in_block(std::size_t block, int64_t count) const;

  const MiniBatch* batch_;
  CutWeights weights_;
  std::size_t num_layers_;
  std::vector<int64_t> block_start_;   // [blocks + 1]: first position of each block's edges
  std::vector<int64_t> order_;         // removable positions by rank
  std::vector<int64_t> rank_offsets_;  // [blocks + 1] into block_ranks_
  std::vector<int64_t> block_ranks_;   // per block, ascending: the ranks of its removable edges
};

// EdgeCutPlan(batch, scores, options).cut(count), for a one-off cut.
EdgeCut cut_edges(const MiniBatch& batch, int64_t count, const NodeScores& scores, const EdgeCutOptions& options = {});

}  // namespace gnnpipe::graph
