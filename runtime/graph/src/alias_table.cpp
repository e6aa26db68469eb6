#include "alias_table.hpp"

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/alias_method.hpp"

namespace gnnpipe::graph::detail {

void build_alias(std::span<const NodeId> items, std::span<const double> weights, std::span<AliasEntry> out) {
  const std::size_t n = items.size();
  GNNPIPE_CHECK(n > 0 && weights.size() == n && out.size() == n, "build_alias: {} items, {} weights, {} slots", n,
                weights.size(), out.size());
  const std::vector<AliasSlot> slots = build_alias_slots(weights);
  for (std::size_t i = 0; i < n; ++i) out[i] = AliasEntry{slots[i].threshold, items[i], items[slots[i].alias]};
}

}  // namespace gnnpipe::graph::detail
