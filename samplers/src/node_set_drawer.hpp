#pragma once
// NodeSetDrawer: the random node set of one GraphSAINT subgraph (node, edge or random-walk
// sampler; see saint_sampler.hpp for the distributions). Private to gnnpipe::samplers.
// Immutable after construction; draw() is thread-safe for different scratches.
#include <cstdint>
#include <vector>

#include "alias_table.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"

namespace gnnpipe::samplers::detail {

// Per-thread scratch: a global -> local map over all nodes (-1 = not chosen; -1 everywhere between
// subgraphs) and the chosen nodes in the order they were first drawn.
struct NodeSetScratch {
  explicit NodeSetScratch(graph::NodeId num_nodes) : local_of(static_cast<std::size_t>(num_nodes), -1) {}

  // Chooses `v` (marks it with local id 0 until the caller numbers the set); no-op when chosen.
  void choose(graph::NodeId v) {
    graph::NodeId& slot = local_of[static_cast<std::size_t>(v)];
    if (slot < 0) {
      slot = 0;
      nodes.push_back(v);
    }
  }
  // Restores local_of to all -1 and empties the set: O(set size), not O(num_nodes).
  void reset() {
    for (graph::NodeId v : nodes) local_of[static_cast<std::size_t>(v)] = -1;
    nodes.clear();
  }

  std::vector<graph::NodeId> local_of;
  std::vector<graph::NodeId> nodes;
};

class NodeSetDrawer {
 public:
  // `graph` must outlive the drawer; options are validated by the sampler. Builds the alias table
  // of kNode (over nodes, weight in-degree) or kEdge (over CSR edge positions) in O(V) or O(E).
  NodeSetDrawer(const graph::CsrGraph& graph, SaintMode mode, int budget, int walk_length);

  // Draws one node set into the empty `scratch` (scratch.nodes unsorted, each node once, and
  // marked in local_of). Positional draws (saint_draw.hpp): the set depends only on the key.
  void draw(core::RngKey key, NodeSetScratch& scratch) const;

  // What a device sampler uploads: the alias table (kNode, kEdge) and kEdge's row directory.
  const AliasTable& table() const { return table_; }
  const std::vector<graph::NodeId>& row_of_block() const { return row_of_block_; }
  static constexpr int kRowBlockShift = 6;

 private:
  const graph::CsrGraph& graph_;
  SaintMode mode_;
  int budget_;
  int walk_length_;
  AliasTable table_;  // kNode: node ids; kEdge: edge positions
  // kEdge: a directory from edge positions to rows, one entry per 2^kRowBlockShift positions (E/16
  // bytes): a drawn position finds its destination row without a binary search over all rows.
  std::vector<graph::NodeId> row_of_block_;
};

}  // namespace gnnpipe::samplers::detail
