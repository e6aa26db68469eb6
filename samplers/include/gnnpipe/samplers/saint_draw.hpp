#pragma once
// GraphSAINT's draws, positional (issue #40): draw i of a subgraph (a node, or an edge's two
// endpoints) and random walk w read their own ranges of the batch's stream (DrawCursor::at), so the node set
// depends only on the key, not on which draws ran first or where. The CPU sampler
// (node_set_drawer.cpp), its data-parallel twin (saint_twin.cpp) and the CUDA kernels call these.
#include <cstdint>

#include "gnnpipe/core/host_device.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"

namespace gnnpipe::samplers::saint {

// One slot of Walker's alias table: keep the slot when a uniform u32 is below threshold, else
// take alias.
struct AliasEntry {
  uint32_t threshold = 0;
  uint32_t alias = 0;
};

// One index in [0, n) from the table (two u32 of the cursor; more only on below()'s rare rejection).
GNNPIPE_HD uint32_t alias_draw(const AliasEntry* table, uint32_t n, DrawCursor& draws) {
  const uint32_t slot = draws.below(n);
  const AliasEntry e = table[slot];
  return draws.next_u32() < e.threshold ? slot : e.alias;
}

// The row (destination) holding CSR position e: between the rows holding the first positions of
// e's block and of the next (a directory entry per 2^block_shift positions), an upper bound over
// those offsets.
GNNPIPE_HD int32_t row_of_position(const int64_t* offsets, const int32_t* row_of_block, int64_t num_blocks,
                                   int32_t num_nodes, int64_t e, int block_shift) {
  const int64_t b = e >> block_shift;
  int64_t lo = row_of_block[b] + 1;  // search offsets[lo, hi) for the first > e
  int64_t hi = (b + 1 < num_blocks ? row_of_block[b + 1] : num_nodes - 1) + 2;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= e) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return static_cast<int32_t>(lo - 1);
}

// The stream of training batch `index` of `epoch` ("sbat"; attempt > 0 appended: a resampled
// batch draws anew while the plan's batch keeps its stream). Host code: kernels receive the key.
inline core::RngKey batch_key(uint64_t seed, int64_t epoch, int64_t index, int attempt) {
  constexpr uint64_t kBatchStream = 0x73626174;  // "sbat"
  const core::RngKey key = core::rng_key(seed, {kBatchStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)});
  return attempt > 0 ? key.with(static_cast<uint64_t>(attempt)) : key;
}

// The stream of draw (or walk) i of the subgraph keyed `key`.
GNNPIPE_HD DrawCursor draw_cursor(core::RngKey key, int64_t i) { return DrawCursor::at(key, static_cast<uint64_t>(i)); }

// Walk w: a root uniform over the nodes, then up to walk_length steps each to a uniform
// in-neighbor, stopping at a node without one; visit(v) for the root and every step.
template <class Visit>
GNNPIPE_HD void random_walk(core::RngKey key, int64_t w, const int64_t* offsets, const int32_t* indices, int32_t num_nodes,
                            int walk_length, Visit&& visit) {
  DrawCursor draws = draw_cursor(key, w);
  int32_t v = static_cast<int32_t>(draws.below(static_cast<uint32_t>(num_nodes)));
  visit(v);
  for (int step = 0; step < walk_length; ++step) {
    const int64_t begin = offsets[v], degree = offsets[v + 1] - begin;
    if (degree == 0) return;
    v = indices[begin + draws.below(static_cast<uint32_t>(degree))];
    visit(v);
  }
}

}  // namespace gnnpipe::samplers::saint
