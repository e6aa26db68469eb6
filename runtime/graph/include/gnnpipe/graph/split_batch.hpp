#pragma once
// split_batch: exact micro-batches of a mini-batch (docs/DESIGN.md §4, the memory governor's "split").
//
// When a sampled batch does not fit the device budget, the governor cuts its loss rows into k
// micro-batches, runs forward + loss + backward on each, accumulates the parameter gradients and
// takes one optimizer step. Splitting is exact: every output a micro-batch's loss needs is
// computed from the same edges, edge weights and edge order as in the parent batch, so every
// aggregation (SpMM, attention softmax) of a kept row is bitwise the parent's, and the accumulated
// gradient is the parent's up to summation order. The logits are equal up to the rounding of the
// dense transforms: a BLAS gemm may round a row differently at another row count or offset
// (OpenBLAS does, for K >= 8), which no choice of the graph side can prevent.
//
// What a micro-batch keeps (micro-batch i takes the i-th run of consecutive loss rows; run sizes
// differ by at most one):
// - Layer-wise batches (one block per layer, all sharing one local numbering, blocks[l].num_dst ==
//   blocks[l + 1].num_src; the neighbor sampler): the loss targets and exactly their computation
//   tree inside the batch. The last block keeps the full rows of the micro targets; each block
//   before it keeps the full rows (in that block) of every node the block after it reads. The new
//   numbering has the parent's invariants: micro targets first, then every other node in the order
//   it is first reached, block by block from the output side, so each block's destinations are a
//   prefix of its sources and blocks[l].num_dst == blocks[l + 1].num_src.
// - Shared-block batches (one square block read by every layer, input_nodes == targets;
//   GraphSAINT, Cluster-GCN, full batch): with S_L the micro-batch's loss nodes and
//   S_{k-1} = S_k u in-neighbors(S_k) for k = L..1, one square block over S_0, numbered loss nodes
//   first, then in order of first reach. Nodes of S_1 keep their full parent rows; the rows of
//   S_0 \ S_1 are empty. Why that is exact: layer k (1-based) must produce correct outputs only
//   for S_k (the loss reads S_L; a correct output of S_k reads only inputs of its row, which lie
//   in S_{k-1}, including itself). Every node of S_k, k >= 1, lies in S_1 and has its full row,
//   so by induction from the gathered features (layer 0) every needed output equals the parent's.
//   The other outputs (rows of S_0 \ S_1, or nodes outside S_k at layer k) differ from the
//   parent's but reach no needed output and the loss reads none of them, so the gradient flowing
//   back into them is exactly zero, and they add exact zeros to every parameter gradient.
// Edge weights are copied, never recomputed (GCN weights come from full-graph degrees, mean
// weights from the sampled row length and whole rows are kept, GraphSAINT alpha from counts), and
// each kept row keeps its parent's edge order (Block::RowOrder::kKeep), so rows are not sorted by
// the micro-batch's local ids. Self-loops a sampler added are ordinary edges here.
//
// The loss: a micro-batch's targets are the layer-wise batch's loss targets (or, shared form, all
// of S_0, with the loss nodes first); `loss_rows` are the positions of its loss targets. Weights:
// the parent's, for its loss rows, when it had them; otherwise (the parent's loss is the mean over
// its n loss rows) each row gets the weight 1/n, so the micro-batches' losses and gradients sum to
// the parent's. The weights are float, so that sum carries float(1/n) for 1/n: a relative
// difference up to 2^-24 (none when n is a power of two), below a float gradient's own rounding.
// epoch and index stay the parent's (dropout keys derive from them; the split is exact with dropout
// on only once masks are keyed by global node id, docs/DESIGN.md §4, not by row position as GnnModel's are
// today); input_nodes and targets are global ids; `shape` is computed with the parent's
// shape.feature_dim.
//
// Cost: O(edges and nodes of the micro-batches) per call, plus one local-id map over the parent's
// local ids (input_nodes.size() entries) reused for every micro-batch: nothing scales with the
// whole graph. The parent is only read; it may be split concurrently by several threads.
#include <cstddef>
#include <functional>
#include <vector>

#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/memory/batch_shape.hpp"

namespace gnnpipe::graph {

// Splits the loss rows of `batch` (a model of `num_layers` layers) into `parts` micro-batches of
// consecutive loss rows, as described above; `parts` is clamped to the number of loss rows.
// Returns the micro-batches in loss-row order. Throws core::Error when parts < 1, when the batch
// has no loss rows, or when it is malformed (block count neither num_layers nor one shared square
// block, as graph::layer_blocks says; sizes that contradict each other; loss rows out of order).
std::vector<MiniBatch> split_batch(const MiniBatch& batch, std::size_t num_layers, int parts);

// The shapes split_batch(batch, num_layers, parts) would give, without building the blocks (one
// pass over the same edges that counts instead of copying; no transposes). For a governor that
// tries k = 2, 4, 8, ... and builds only the split it chooses. Same errors as split_batch.
std::vector<memory::BatchShape> split_shapes(const MiniBatch& batch, std::size_t num_layers, int parts);

// What a micro-batch of split_batch(batch, num_layers, parts) holds, counted without building it:
// everything its packed size and its memory prediction depend on (the memory governor sizes a
// candidate split from these and builds only the split it chooses). Exact: equal to what the
// built micro-batch has (tests/unit/graph/test_split_batch.cpp checks it).
struct MicroBatchSize {
  memory::BatchShape shape;          // as MiniBatch::compute_shape of the built micro-batch
  std::vector<EdgeOffset> block_edges;  // per block of the micro-batch (one shared block stays one)
  std::size_t targets = 0;           // == loss weights of the built micro-batch
  std::size_t loss_rows = 0;
  bool identity_inputs = false;      // its input_nodes are 0, 1, ..., n - 1 (global ids) in order
};

// The sizes of split_batch(batch, num_layers, parts)'s micro-batches, in order. Cost: one pass
// over the micro-batches' edges (no copies; host memory: one local-id map over the parent's
// nodes, reused). With `keep_going`, stops after the first micro-batch it returns false for (that
// one is the last returned): a caller that rules the split out by one part pays for no more.
// Same errors as split_batch.
std::vector<MicroBatchSize> split_sizes(const MiniBatch& batch, std::size_t num_layers, int parts,
                                        const std::function<bool(const MicroBatchSize&)>& keep_going = {});

}  // namespace gnnpipe::graph
