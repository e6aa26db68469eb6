#include "alias_table.hpp"

#include <cmath>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph::detail {

void build_alias(std::span<const NodeId> items, std::span<const double> weights, std::span<AliasEntry> out) {
  const std::size_t n = items.size();
  GNNPIPE_CHECK(n > 0 && weights.size() == n && out.size() == n, "build_alias: {} items, {} weights, {} slots", n,
                weights.size(), out.size());
  double total = 0;
  for (double w : weights) total += w;
  GNNPIPE_CHECK(total > 0 && std::isfinite(total), "build_alias: weights sum to {}", total);

  // Vose: scaled[i] = n * w_i / total; slots below 1 are topped up by one slot above 1.
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (std::size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  auto set = [&](std::size_t slot, double p, std::size_t alias) {
    // p * 2^32 rounded; p >= 1 (up to rounding) means "always keep", encoded as alias == item.
    const bool always = p >= 1.0;
    out[slot] = AliasEntry{always ? 0xFFFFFFFFu : static_cast<uint32_t>(std::ldexp(p, 32)), items[slot],
                           items[always ? slot : alias]};
  };
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back();
    small.pop_back();
    const uint32_t l = large.back();
    set(s, scaled[s], l);
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left holds probability 1 up to rounding.
  for (uint32_t i : large) set(i, 1.0, i);
  for (uint32_t i : small) set(i, 1.0, i);
}

}  // namespace gnnpipe::graph::detail
