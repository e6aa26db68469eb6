#include "gnnpipe/core/hash.hpp"

#include <bit>
#include <cstring>

namespace gnnpipe::core {

uint64_t hash64(const void* bytes, std::size_t size, uint64_t seed) {
  constexpr uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xc2b2ae3d27d4eb4fULL;
  const auto* p = static_cast<const unsigned char*>(bytes);
  uint64_t h = seed ^ (size * k1);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = std::rotl(h ^ (w * k2), 31) * k1;
  }
  for (; i < size; ++i) h = std::rotl(h ^ (p[i] * k2), 31) * k1;
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  return h;
}

}  // namespace gnnpipe::core
