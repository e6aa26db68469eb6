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

namespace gnnpipe::samplers::detail {

class AliasTable {
 public:
  AliasTable() = default;
  // Throws Error unless 0 < weights.size() < 2^32 and the weights are >= 0 with a finite, positive
  // sum. Sequential and deterministic; O(n) time, 8n bytes kept.
  explicit AliasTable(std::span<const double> weights);

  std::size_t size() const { return entries_.size(); }

  // One index, consuming two u32 from `rng` (more only on the rare rejection inside Rng::below).
  uint32_t draw(core::Rng& rng) const {
    const auto slot = static_cast<uint32_t>(rng.below(entries_.size()));
    const Entry& e = entries_[slot];
    return rng.next_u32() < e.threshold ? slot : e.alias;
  }

 private:
  struct Entry {
    uint32_t threshold = 0;  // keep the slot when a uniform u32 is < threshold (always: alias == slot)
    uint32_t alias = 0;
  };
  std::vector<Entry> entries_;
};

}  // namespace gnnpipe::samplers::detail
