#include "gnnpipe/core/rng.hpp"

#include <cmath>
#include <numbers>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {
__extension__ using Uint128 = unsigned __int128;  // GCC/Clang extension; pedantic-clean
}  // namespace

uint64_t Rng::below_wide(uint64_t n) {
  GNNPIPE_CHECK(n > 0, "Rng::below needs n > 0");
  // 64-bit: 128-bit product.
  Uint128 m = static_cast<Uint128>(next_u64()) * n;
  auto low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<Uint128>(next_u64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::normal() {
  // 1 - u lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - uniform_double();
  const double u2 = uniform_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace gnnpipe::core
