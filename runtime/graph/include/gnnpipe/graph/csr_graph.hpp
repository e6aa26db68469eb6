#pragma once
// CsrGraph: an immutable graph in compressed sparse rows, docs/DESIGN.md §2. Row v lists the
// in-neighbors (sources) of destination v, so aggregation "for each destination, sum its sources"
// reads one row. Node ids are int32, edge offsets int64. Rows built here are sorted ascending
// (deterministic output whatever the thread count, and neighbor lookups by binary search).
// Arrays may be owned or memory-mapped (HostArray); copies of a CsrGraph share them.
#include <cstdint>
#include <span>
#include <string_view>

#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph {

using NodeId = int32_t;
using EdgeOffset = int64_t;

enum class SelfLoops {
  kKeep,    // leave (v, v) edges as they are
  kRemove,  // drop every (v, v)
  kAdd,     // make sure every node has exactly one (v, v) (GCN's A + I)
};

struct CsrBuildOptions {
  bool symmetrize = false;  // also add (dst -> src) for every (src -> dst)
  bool dedupe = false;      // keep one copy of repeated edges
  SelfLoops self_loops = SelfLoops::kKeep;
};

class CsrGraph {
 public:
  CsrGraph() = default;

  // Adopts existing CSR arrays (for example memory-mapped ones) after validating them:
  // offsets has num_nodes + 1 entries, starts at 0, never decreases, ends at indices.size(), and
  // every index lies in [0, num_nodes). Rows need not be sorted. Throws DataError naming `what`.
  static CsrGraph from_arrays(HostArray<EdgeOffset> offsets, HostArray<NodeId> indices, std::string_view what);

  // Builds from COO edges src[i] -> dst[i] (row dst[i] gets column src[i]) in parallel (oneTBB),
  // with O(E) extra memory. Throws DataError when sizes differ or an id is outside [0, num_nodes).
  static CsrGraph from_coo(NodeId num_nodes, std::span<const NodeId> src, std::span<const NodeId> dst,
                           const CsrBuildOptions& options = {});

  NodeId num_nodes() const { return static_cast<NodeId>(offsets_.empty() ? 0 : offsets_.size() - 1); }
  EdgeOffset num_edges() const { return static_cast<EdgeOffset>(indices_.size()); }
  std::span<const EdgeOffset> offsets() const { return offsets_.span(); }
  std::span<const NodeId> indices() const { return indices_.span(); }

  // The in-neighbors (sources) of `v`; `v` must be in range (unchecked in release builds).
  std::span<const NodeId> in_neighbors(NodeId v) const {
    const auto begin = static_cast<std::size_t>(offsets_[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(offsets_[static_cast<std::size_t>(v) + 1]);
    return indices_.span().subspan(begin, end - begin);
  }
  EdgeOffset in_degree(NodeId v) const {
    return offsets_[static_cast<std::size_t>(v) + 1] - offsets_[static_cast<std::size_t>(v)];
  }
  // Number of edges leaving each node (how often it appears as a source), counted in parallel.
  std::vector<EdgeOffset> out_degrees() const;

  // True when every row is sorted ascending (strictly, if `strictly`: then also no duplicates).
  bool rows_sorted(bool strictly = false) const;
  EdgeOffset count_self_loops() const;
  // True when (u -> v) exists exactly when (v -> u) does, with the same multiplicity.
  bool is_symmetric() const;

  // The graph with every edge reversed: row u lists the destinations of u's out-edges.
  CsrGraph transposed() const;
  // A copy with rows sorted, and duplicates and self-loops handled as `options` says.
  CsrGraph normalized(const CsrBuildOptions& options) const;

  // A 64-bit hash of the structure (for cache keys such as METIS partitions).
  uint64_t structure_hash() const;

 private:
  CsrGraph(HostArray<EdgeOffset> offsets, HostArray<NodeId> indices)
      : offsets_(std::move(offsets)), indices_(std::move(indices)) {}

  HostArray<EdgeOffset> offsets_;
  HostArray<NodeId> indices_;
};

}  // namespace gnnpipe::graph
