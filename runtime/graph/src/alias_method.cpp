#include "gnnpipe/graph/alias_method.hpp"

#include <cmath>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph {

std::vector<AliasSlot> build_alias_slots(std::span<const double> weights) {
  const std::size_t n = weights.size();
  GNNPIPE_CHECK(n > 0 && n < (std::size_t{1} << 32), "alias table: {} items (need 1 to 2^32 - 1)", n);
  double total = 0;
  for (double w : weights) {
    GNNPIPE_CHECK(w >= 0, "alias table: negative weight {}", w);
    total += w;
  }
  GNNPIPE_CHECK(total > 0 && std::isfinite(total), "alias table: weights sum to {}", total);

  // Vose: scaled[i] = n * w_i / total; each slot below 1 is topped up by one slot above 1.
  std::vector<AliasSlot> out(n);
  std::vector<double> scaled(n);
  std::vector<uint32_t> small, large;
  for (std::size_t i = 0; i < n; ++i) {
    scaled[i] = weights[i] * static_cast<double>(n) / total;
    (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  auto set = [&](uint32_t slot, double p, uint32_t alias) {
    // p * 2^32 rounded down; p >= 1 (up to rounding) means "always keep", encoded as alias == slot.
    const bool always = p >= 1.0;
    out[slot] = AliasSlot{always ? 0xFFFFFFFFu : static_cast<uint32_t>(std::ldexp(p, 32)), always ? slot : alias};
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
  return out;
}

}  // namespace gnnpipe::graph
