#pragma once
// Block: one layer of a sampled (or full) computation graph, a.k.a. message-flow graph (docs/DESIGN.md §2).
// Destinations are the first num_dst of the num_src sources (local ids). The CSR over destinations
// drives forward aggregation; its transpose (CSR over sources, with the forward edge id of each
// entry) drives backward aggregation, so neither direction needs atomics and results are
// deterministic. Optional per-edge weights (GCN normalisation, GraphSAINT alpha) are indexed by
// forward edge id. Built on the CPU by the graph/sampler side; models only read it.
//
// Forward aggregation sums a row in edge order, so a row's order fixes its floating-point result.
// Samplers build rows sorted by local source id; a micro-batch of a split batch (split_batch.hpp)
// keeps its parent's edge order instead (RowOrder::kKeep), under its own local numbering, so that
// its rows sum exactly as the parent's did. Nothing reads a forward row assuming it is sorted.
#include <cstdint>
#include <string_view>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph {

struct Block {
  NodeId num_dst = 0;
  NodeId num_src = 0;
  HostArray<EdgeOffset> offsets;    // [num_dst + 1]
  HostArray<NodeId> indices;        // [E] local source ids, sorted within each row (RowOrder::kSort)
  HostArray<float> weights;         // [E] or empty (unweighted)
  HostArray<EdgeOffset> t_offsets;  // [num_src + 1]: CSR over sources
  HostArray<NodeId> t_indices;      // [E] local destination ids, sorted within each row
  HostArray<EdgeOffset> t_edges;    // [E] forward edge id of each transposed entry

  EdgeOffset num_edges() const { return static_cast<EdgeOffset>(indices.size()); }
  bool weighted() const { return !weights.empty(); }

  // How from_csr treats the order of edges within a forward row.
  enum class RowOrder {
    kSort,  // sort each row by source id (weights permuted along): the samplers' canonical form
    kKeep,  // keep the rows as given (a split micro-batch keeps its parent's summation order)
  };

  // Builds the transpose of a forward CSR (offsets, indices, weights) in O(E). With RowOrder::kSort
  // the rows of `indices` are sorted first (weights permuted along). The transpose is the same
  // either way in form: its rows are sorted by destination id, and t_edges gives each entry's
  // forward edge id. Throws DataError naming `what` when the arrays are inconsistent (offsets, ids
  // outside [0, num_src), num_dst > num_src, weight count).
  static Block from_csr(NodeId num_dst, NodeId num_src, HostArray<EdgeOffset> offsets, HostArray<NodeId> indices,
                        HostArray<float> weights, std::string_view what = "block", RowOrder order = RowOrder::kSort);
};

// How a block's edges are weighted for aggregation.
enum class BlockNorm {
  kNone,     // unweighted: plain sum over in-neighbors
  kMean,     // 1 / in-degree of the destination (mean aggregation)
  kGcn,      // add a self-loop to every node, weight deg(src)^-1/2 * deg(dst)^-1/2 with degrees
             // counted on the self-looped graph (Kipf & Welling; PyG's gcn_norm)
  kSelfLoops,  // add a self-loop to every node, unweighted (GAT: attention supplies the weights)
};

// The whole graph as one block (full-batch training): num_dst = num_src = num_nodes.
Block full_graph_block(const CsrGraph& graph, BlockNorm norm);

}  // namespace gnnpipe::graph
