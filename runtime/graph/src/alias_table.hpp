#pragma once
// AliasTable: O(1) sampling of items in proportion to non-negative weights (Walker's alias method,
// built with Vose's stable variant). Private to gnnpipe::graph (the synthetic generator).
// Each slot is one 12-byte entry holding both candidates, so a draw touches one cache line.
// Immutable after construction; concurrent draws with separate Rngs are safe.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"

namespace gnnpipe::graph::detail {

struct AliasEntry {
  uint32_t threshold = 0;  // keep `item` when a uniform u32 is < threshold (exact when >= 1: item == alias)
  NodeId item = 0;
  NodeId alias = 0;
};

// Builds the entries for `items` with `weights` (same length, sum > 0) into out[0 .. items.size()).
// Sequential and deterministic.
void build_alias(std::span<const NodeId> items, std::span<const double> weights, std::span<AliasEntry> out);

// Draws one item from the table `entries` (non-empty), consuming two u32 from `rng` (more only on
// the rare rejection inside Rng::below).
inline NodeId draw_alias(std::span<const AliasEntry> entries, core::Rng& rng) {
  const AliasEntry& e = entries[rng.below(entries.size())];
  return rng.next_u32() < e.threshold ? e.item : e.alias;
}

}  // namespace gnnpipe::graph::detail
