#pragma once
// AliasTable: O(1) draws of an index in [0, n) with probability proportional to non-negative
// weights (Walker's alias method, built with Vose's stable variant). Private to gnnpipe::samplers
// (GraphSAINT's node and edge draws). Items are the slot indices themselves, so one 8-byte entry
// per item suffices even over the edges of a large graph (n < 2^32). The construction is
// graph::build_alias_slots, shared with the synthetic generator.
// Immutable after construction; concurrent draws with separate Rngs are safe.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/saint_draw.hpp"

namespace gnnpipe::samplers::detail {

class AliasTable {
 public:
  AliasTable() = default;
  // Throws Error unless 0 < weights.size() < 2^32 and the weights are >= 0 with a finite, positive
  // sum. Sequential and deterministic; O(n) time, 8n bytes kept.
  explicit AliasTable(std::span<const double> weights);

  std::size_t size() const { return entries_.size(); }

  // One index, from `draws` (saint::alias_draw, the kernels' draw).
  uint32_t draw(DrawCursor& draws) const {
    return saint::alias_draw(entries_.data(), static_cast<uint32_t>(entries_.size()), draws);
  }
  // The slots, as a device sampler uploads them.
  const std::vector<saint::AliasEntry>& entries() const { return entries_; }

 private:
  std::vector<saint::AliasEntry> entries_;
};

}  // namespace gnnpipe::samplers::detail
