#pragma once
// Walker's alias method, built with Vose's stable variant: O(1) draws of a slot in [0, n) with
// probability proportional to non-negative weights. This is the construction alone, shared by the
// synthetic generator (graph, whose items are node ids) and GraphSAINT's node and edge draws
// (samplers, whose items are the slots themselves); each owner keeps its own table layout.
#include <cstdint>
#include <span>
#include <vector>

namespace gnnpipe::graph {

struct AliasSlot {
  // Keep the slot when a uniform u32 is < threshold; 0xFFFFFFFF with alias == slot means always.
  uint32_t threshold = 0;
  uint32_t alias = 0;
};

// One AliasSlot per weight. Throws Error unless 0 < weights.size() < 2^32 and the weights are
// >= 0 with a finite, positive sum. Sequential and deterministic, O(n).
std::vector<AliasSlot> build_alias_slots(std::span<const double> weights);

}  // namespace gnnpipe::graph
