#include "alias_table.hpp"

#include "gnnpipe/graph/alias_method.hpp"

namespace gnnpipe::samplers::detail {

AliasTable::AliasTable(std::span<const double> weights) {
  const std::vector<graph::AliasSlot> slots = graph::build_alias_slots(weights);
  entries_.reserve(slots.size());
  for (const auto& s : slots) entries_.push_back(saint::AliasEntry{s.threshold, s.alias});
}

}  // namespace gnnpipe::samplers::detail
