#pragma once
// Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11, "Parallel random numbers:
// as easy as 1, 2, 3"). A value depends only on (seed, stream ids, position), never on thread
// count or scheduling: a batch's randomness is keyed by (seed, epoch, batch_index), dropout by
// (seed, epoch, batch, layer) at positions of global node ids; CUDA kernels draw the CPU twins' bits.
#include <array>
#include <cstdint>
#include <initializer_list>

#include "gnnpipe/core/host_device.hpp"

namespace gnnpipe::core {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

namespace philox_detail {
inline constexpr uint32_t kM0 = 0xD2511F53u;
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kW1 = 0xBB67AE85u;  // sqrt(3) - 1

GNNPIPE_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}
}  // namespace philox_detail

// One Philox-4x32 block with 10 rounds: the published algorithm, checked against the Random123
// known-answer vectors in tests/unit/test_rng.cpp.
GNNPIPE_HD PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, ctr[0], hi0, lo0);
    mulhilo(kM1, ctr[2], hi1, lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

// SplitMix64 finaliser: a bijective 64-bit mixer used to fold stream ids into one 64-bit id.
GNNPIPE_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Identifies one independent random stream: the seed is the Philox key, the ids (epoch, batch,
// layer, ...) are folded into a 64-bit stream id that fills the upper half of the counter; the
// lower half counts blocks, so each stream holds 2^64 blocks of four 32-bit values.
struct RngKey {
  uint64_t seed = 0;
  uint64_t stream = 0;

  GNNPIPE_HD static RngKey make(uint64_t seed) { return RngKey{seed, 0}; }
  // Appends one id: (a, b) and (b, a) give different streams.
  GNNPIPE_HD RngKey with(uint64_t id) const { return RngKey{seed, splitmix64(stream ^ splitmix64(id + 1))}; }

  // The four 32-bit values at block `index` of this stream.
  GNNPIPE_HD PhiloxCounter block(uint64_t index) const {
    const PhiloxCounter ctr{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                            static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    return philox4x32_10(ctr, PhiloxKey{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  }
  // The 32-bit value at position `i` of the stream (random access). Dropout reads blocks as 1- to
  // 8-bit values instead (models/ops/dropout_mask.hpp).
  GNNPIPE_HD uint32_t u32_at(uint64_t i) const { return block(i >> 2)[static_cast<unsigned>(i & 3u)]; }
  // A float uniform in [0, 1) with 24 random bits, at position `i`.
  GNNPIPE_HD float uniform_at(uint64_t i) const {
    return static_cast<float>(u32_at(i) >> 8) * (1.0f / 16777216.0f);
  }
};

// Builds a key from a seed and any number of ids: rng_key(seed, {epoch, batch_index}).
inline RngKey rng_key(uint64_t seed, std::initializer_list<uint64_t> ids) {
  RngKey key = RngKey::make(seed);
  for (uint64_t id : ids) key = key.with(id);
  return key;
}

// A sequential generator over one stream: cheap to create (two words of state), so create one per
// batch or per task rather than sharing one across threads. Not thread-safe.
class Rng {
 public:
  explicit Rng(RngKey key) : key_(key) {}
  Rng(uint64_t seed, std::initializer_list<uint64_t> ids) : key_(rng_key(seed, ids)) {}

  uint32_t next_u32() {
    if (lane_ == 4) {
      buffer_ = key_.block(block_++);
      lane_ = 0;
    }
    return buffer_[lane_++];
  }
  uint64_t next_u64() {
    const uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }
  // Uniform in [0, 1) with 24 random bits (every value exactly representable as float).
  float uniform() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  // Unbiased integer in [0, n) (Lemire's multiply-and-reject); n must be > 0. The 32-bit case is
  // inline: the neighbor sampler draws one per pick, and the call cost 13 % of its profile.
  uint64_t below(uint64_t n) {
    if (n - 1 >= 0xFFFFFFFFull) return below_wide(n);  // n == 0 (refused there) or n > 2^32
    const auto n32 = static_cast<uint32_t>(n);
    uint64_t m = static_cast<uint64_t>(next_u32()) * n32;
    if (static_cast<uint32_t>(m) < n32) {  // only then can m fall in the biased sliver
      const uint32_t threshold = static_cast<uint32_t>(-n32) % n32;
      while (static_cast<uint32_t>(m) < threshold) m = static_cast<uint64_t>(next_u32()) * n32;
    }
    return m >> 32;
  }
  // Standard normal (Box-Muller on two uniforms; no cached second value, so draws stay positional).
  double normal();
  // True with probability p.
  bool bernoulli(double p) { return uniform_double() < p; }

 private:
  // below() for n > 2^32 (a 128-bit product), and its refusal of n == 0.
  uint64_t below_wide(uint64_t n);

  RngKey key_;
  uint64_t block_ = 0;
  PhiloxCounter buffer_{};
  unsigned lane_ = 4;
};

}  // namespace gnnpipe::core
