// The keep-bit draw of the CPU dropout (dropout_draw.hpp): Philox-4x32-10 blocks turned into mask
// bytes on a scalar, a portable vectorised and an AVX2 path, which give the same bytes and differ
// only in speed.
#include <algorithm>
#include <array>
#include <cstring>

#include "gnnpipe/models/ops/dropout.hpp"
#include "cpu/dropout_draw.hpp"
#include "cpu/dropout_simd.hpp"

namespace gnnpipe::models::cpu {
namespace detail {
namespace {

// --- drawing keep bits ----------------------------------------------------------------------------
// Every path computes, for each i < n, the draw.bytes_per_block() mask bytes of block blocks[i] of
// stream(i) (Streams, dropout_draw.hpp) into out[i << draw.byte_shift ..].

// Even bits of x (bits 0, 2, .., 62) packed into the low 32 bits.
inline uint64_t compact_even_bits(uint64_t x) {
  x &= 0x5555555555555555ull;
  x = (x | (x >> 1)) & 0x3333333333333333ull;
  x = (x | (x >> 2)) & 0x0f0f0f0f0f0f0f0full;
  x = (x | (x >> 4)) & 0x00ff00ff00ff00ffull;
  x = (x | (x >> 8)) & 0x0000ffff0000ffffull;
  return (x | (x >> 16)) & 0xffffffffull;
}

// The mask bytes of one drawn block (words w0..w3): bit q of byte j is decision 8j + q's
// u > level, or u == level where the draw does not refines(); with refinement (k = 8 only) the ties
// u == level go to ties[j] instead, for draw() to decide from the refinement block. SWAR on the
// block's 64-bit halves; the draw is not constant().
inline void block_mask_bytes(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, const DropoutDraw& draw,
                             uint8_t* out, uint8_t* ties) {
  const uint64_t halves[2] = {w0 | (uint64_t{w1} << 32), w2 | (uint64_t{w3} << 32)};
  const uint64_t level = draw.level;
  switch (draw.bits) {
    case 1:  // level 1: a set bit keeps its position
      std::memcpy(out, halves, 16);
      return;
    case 2:
      for (int h = 0; h < 2; ++h) {
        const uint64_t lo = halves[h], hi = halves[h] >> 1;  // each 2-bit value's bits 0 and 1
        const uint64_t keep = level == 1 ? (lo | hi) : level == 2 ? hi : (lo & hi);
        const auto bits = static_cast<uint32_t>(compact_even_bits(keep));
        std::memcpy(out + 4 * h, &bits, 4);
      }
      return;
    case 4:
      for (int h = 0; h < 2; ++h) {
        constexpr uint64_t kLow = 0x0f0f0f0f0f0f0f0full, kBit4 = 0x1010101010101010ull;
        const uint64_t lo = halves[h] & kLow, hi = (halves[h] >> 4) & kLow;  // nibbles 2q and 2q + 1
        // Per byte, (nibble | 16) - level >= 16 iff nibble >= level (no borrow crosses a byte).
        const uint64_t keep_lo = ((lo | kBit4) - level * 0x0101010101010101ull) & kBit4;
        const uint64_t keep_hi = ((hi | kBit4) - level * 0x0101010101010101ull) & kBit4;
        uint64_t v = (keep_lo >> 4) | (keep_hi >> 3);  // bits 0, 1 of byte q: decisions 2q, 2q + 1
        v = (v | (v >> 6)) & 0x000f000f000f000full;
        v = (v | (v >> 12)) & 0x000000ff000000ffull;
        const auto bits = static_cast<uint16_t>(v | (v >> 24));
        std::memcpy(out + 2 * h, &bits, 2);
      }
      return;
    default:  // 8
      for (int h = 0; h < 2; ++h) {
        unsigned above = 0, equal = 0;
        for (unsigned q = 0; q < 8; ++q) {
          const uint64_t u = (halves[h] >> (8 * q)) & 0xff;
          above |= static_cast<unsigned>(u > level) << q;
          equal |= static_cast<unsigned>(u == level) << q;
        }
        if (ties != nullptr) {
          out[h] = static_cast<uint8_t>(above);
          ties[h] = static_cast<uint8_t>(equal);
        } else {
          out[h] = static_cast<uint8_t>(above | equal);
        }
      }
      return;
  }
}

// What every path writes when the draw is constant(): all kept or all dropped.
void fill_constant(const DropoutDraw& draw, int64_t n, uint8_t* out) {
  if (n > 0) std::memset(out, draw.threshold == 0 ? 0xff : 0, static_cast<std::size_t>(n) << draw.byte_shift);
}

// The paths below write block i's mask bytes from out + (i << byte_shift) and, when the draw
// refines (k = 8), its two tie bytes from ties + 2 i (ties is null otherwise); the draw is not
// constant().
void draw_scalar(uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& draw,
                 uint8_t* out, uint8_t* ties) {
  for (int64_t i = 0; i < n; ++i) {
    const core::PhiloxCounter b = core::RngKey{seed, streams.at(i)}.block(blocks[i]);
    block_mask_bytes(b[0], b[1], b[2], b[3], draw, out + (i << draw.byte_shift), ties != nullptr ? ties + 2 * i : nullptr);
  }
}

// Philox-4x32-10 on 16 blocks at once in structure-of-arrays form (core/rng.hpp's rounds), a
// shape compilers vectorise with the baseline instruction set (about twice the scalar rate on
// SSE2). The fallback where AVX2 is missing.
void draw_portable(uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& draw,
                   uint8_t* out, uint8_t* ties) {
  using namespace core::philox_detail;
  constexpr int kLanes = 16;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    std::array<uint32_t, kLanes> c0, c1, c2, c3;
    for (int l = 0; l < kLanes; ++l) {
      c0[l] = static_cast<uint32_t>(blocks[i + l]);
      c1[l] = static_cast<uint32_t>(blocks[i + l] >> 32);
      c2[l] = static_cast<uint32_t>(streams.at(i + l));
      c3[l] = static_cast<uint32_t>(streams.at(i + l) >> 32);
    }
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < kLanes; ++l) {
        const uint64_t p0 = static_cast<uint64_t>(kM0) * c0[l];
        const uint64_t p1 = static_cast<uint64_t>(kM1) * c2[l];
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
        c1[l] = static_cast<uint32_t>(p1);
        c3[l] = static_cast<uint32_t>(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
      k0 += kW0;
      k1 += kW1;
    }
    for (int l = 0; l < kLanes; ++l) {
      block_mask_bytes(c0[l], c1[l], c2[l], c3[l], draw, out + ((i + l) << draw.byte_shift),
                       ties != nullptr ? ties + 2 * (i + l) : nullptr);
    }
  }
  draw_scalar(seed, streams.from(i), blocks + i, n - i, draw, out + (i << draw.byte_shift),
              ties != nullptr ? ties + 2 * i : nullptr);
}

#if GNNPIPE_DROPOUT_AVX2

// hi:lo = a * m per 32-bit lane (Philox's mulhilo on eight lanes). Shuffles rather than 64-bit
// shifts move the odd lanes: they issue on more ports.
[[gnu::target("avx2")]] inline void mulhilo8(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_shuffle_epi32(a, 0xF5), m);
  lo = _mm256_blend_epi32(even, _mm256_shuffle_epi32(odd, 0xA0), 0xAA);
  hi = _mm256_blend_epi32(_mm256_shuffle_epi32(even, 0xF5), odd, 0xAA);
}

// Eight uint64 values -> their low and high 32-bit halves as eight lanes each.
[[gnu::target("avx2")]] inline void split_u64x8(const uint64_t* p, __m256i& lo, __m256i& hi) {
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), order);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4)), order);
  lo = _mm256_permute2x128_si256(a, b, 0x20);
  hi = _mm256_permute2x128_si256(a, b, 0x31);
}

// Even bits of each 64-bit lane packed into its low 32 bits (compact_even_bits on four lanes).
[[gnu::target("avx2")]] inline __m256i compact_even_bits4(__m256i x) {
  x = _mm256_and_si256(x, _mm256_set1_epi64x(0x5555555555555555ll));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi64(x, 1)), _mm256_set1_epi64x(0x3333333333333333ll));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi64(x, 2)), _mm256_set1_epi64x(0x0f0f0f0f0f0f0f0fll));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi64(x, 4)), _mm256_set1_epi64x(0x00ff00ff00ff00ffll));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi64(x, 8)), _mm256_set1_epi64x(0x0000ffff0000ffffll));
  return _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi64(x, 16)), _mm256_set1_epi64x(0xffffffffll));
}

// block_mask_bytes for two drawn blocks held in one vector (block A in the low 128 bits, B in the
// high): A's bytes_per_block() bytes, then B's, from `out` (and their ties from `ties`).
[[gnu::target("avx2")]] inline void pair_mask_bytes(__m256i v, const DropoutDraw& draw, uint8_t* out,
                                                    uint8_t* ties) {
  const __m256i zero = _mm256_setzero_si256();
  switch (draw.bits) {
    case 1:  // level 1: the block's bits are the keep bits
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v);
      return;
    case 2: {  // as block_mask_bytes, on four 64-bit halves at once
      const __m256i hi = _mm256_srli_epi64(v, 1);
      const __m256i keep = draw.level == 1 ? _mm256_or_si256(v, hi) : draw.level == 2 ? hi : _mm256_and_si256(v, hi);
      const __m256i packed =
          _mm256_permutevar8x32_epi32(compact_even_bits4(keep), _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
      return;
    }
    case 4: {  // nibbles compared as bytes; interleaving low/high keeps decision order 2q, 2q + 1
      const __m256i level = _mm256_set1_epi8(static_cast<char>(draw.level));
      const __m256i low4 = _mm256_set1_epi8(0x0f);
      const __m256i keep_lo = _mm256_cmpeq_epi8(_mm256_subs_epu8(level, _mm256_and_si256(v, low4)), zero);
      const __m256i keep_hi =
          _mm256_cmpeq_epi8(_mm256_subs_epu8(level, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4)), zero);
      // Per 128-bit half: unpacklo covers the block's bytes 0-7 (mask bytes 0, 1), unpackhi 8-15.
      const auto a = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_unpacklo_epi8(keep_lo, keep_hi)));
      const auto b = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_unpackhi_epi8(keep_lo, keep_hi)));
      const uint64_t bits = (a & 0xffffu) | (uint64_t{b & 0xffffu} << 16) | (uint64_t{a >> 16} << 32) |
                            (uint64_t{b >> 16} << 48);
      std::memcpy(out, &bits, 8);
      return;
    }
    default: {  // 8: one byte per decision; u > level, and u == level to the ties or kept
      const __m256i level = _mm256_set1_epi8(static_cast<char>(draw.level));
      const auto at_most = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_subs_epu8(v, level), zero)));
      const auto equal = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, level)));
      if (ties != nullptr) {
        const uint32_t above = ~at_most;
        std::memcpy(out, &above, 4);
        std::memcpy(ties, &equal, 4);
      } else {
        const uint32_t kept = ~at_most | equal;
        std::memcpy(out, &kept, 4);
      }
      return;
    }
  }
}

// G groups of eight blocks (one per lane) in flight: Philox's rounds are a dependent chain, and
// eight independent groups keep the multiplier busy (about 6 cycles a block on the dev machine's
// EPYC, near the bound of 5 that its one 256-bit integer multiplier sets). Writes 8 G blocks'
// mask bytes from out (and ties, see draw_scalar).
template <int G>
[[gnu::target("avx2")]] inline void draw_avx2_groups(const __m256i* key0, const __m256i* key1, Streams streams,
                                                     const uint64_t* blocks, const DropoutDraw& draw, uint8_t* out,
                                                     uint8_t* ties, const Interleave* interleave = nullptr) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(core::philox_detail::kM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(core::philox_detail::kM1));
  __m256i c0[G], c1[G], c2[G], c3[G];
  for (int g = 0; g < G; ++g) {
    split_u64x8(blocks + 8 * g, c0[g], c1[g]);
    if (streams.one) {
      c2[g] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(streams.ids[0])));
      c3[g] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(streams.ids[0] >> 32)));
    } else {
      split_u64x8(streams.ids + 8 * g, c2[g], c3[g]);
    }
  }
  for (int round = 0; round < 10; ++round) {
    for (int g = 0; g < G; ++g) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo8(c0[g], m0, hi0, lo0);
      mulhilo8(c2[g], m1, hi1, lo1);
      c0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[g]), key0[round]);
      c1[g] = lo1;
      c2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[g]), key1[round]);
      c3[g] = lo0;
    }
    if (interleave != nullptr && round < 8 && round % interleave->every == 0) interleave->step(interleave->context);
  }
  // Transpose each group to its blocks (lane l of c0..c3 is block l's words w0..w3): two blocks
  // per vector, then each pair's mask bytes.
  const unsigned pair_bytes = 2u << draw.byte_shift;
  for (int g = 0; g < G; ++g) {
    const __m256i a = _mm256_unpacklo_epi32(c0[g], c1[g]);  // w0 w1 of blocks 0, 1 | 4, 5
    const __m256i b = _mm256_unpackhi_epi32(c0[g], c1[g]);  // blocks 2, 3 | 6, 7
    const __m256i c = _mm256_unpacklo_epi32(c2[g], c3[g]);  // w2 w3 of blocks 0, 1 | 4, 5
    const __m256i d = _mm256_unpackhi_epi32(c2[g], c3[g]);
    const __m256i r0 = _mm256_unpacklo_epi64(a, c);  // block 0 | block 4
    const __m256i r1 = _mm256_unpackhi_epi64(a, c);  // block 1 | block 5
    const __m256i r2 = _mm256_unpacklo_epi64(b, d);  // block 2 | block 6
    const __m256i r3 = _mm256_unpackhi_epi64(b, d);  // block 3 | block 7
    uint8_t* o = out + (static_cast<std::size_t>(8 * g) << draw.byte_shift);
    uint8_t* t = ties != nullptr ? ties + 16 * g : nullptr;
    const auto tie = [&](int pair) { return t != nullptr ? t + 4 * pair : nullptr; };
    pair_mask_bytes(_mm256_permute2x128_si256(r0, r1, 0x20), draw, o, tie(0));
    pair_mask_bytes(_mm256_permute2x128_si256(r2, r3, 0x20), draw, o + pair_bytes, tie(1));
    pair_mask_bytes(_mm256_permute2x128_si256(r0, r1, 0x31), draw, o + 2 * pair_bytes, tie(2));
    pair_mask_bytes(_mm256_permute2x128_si256(r2, r3, 0x31), draw, o + 3 * pair_bytes, tie(3));
  }
}

[[gnu::target("avx2")]] void draw_avx2(uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n,
                                       const DropoutDraw& draw, uint8_t* out, uint8_t* ties,
                                       const Interleave& interleave) {
  __m256i key0[10], key1[10];
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    key0[round] = _mm256_set1_epi32(static_cast<int>(k0));
    key1[round] = _mm256_set1_epi32(static_cast<int>(k1));
    k0 += core::philox_detail::kW0;
    k1 += core::philox_detail::kW1;
  }
  const auto at = [&](int64_t i) { return out + (i << draw.byte_shift); };
  const auto ties_at = [&](int64_t i) { return ties != nullptr ? ties + 2 * i : nullptr; };
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    draw_avx2_groups<8>(key0, key1, streams.from(i), blocks + i, draw, at(i), ties_at(i),
                        interleave.step != nullptr ? &interleave : nullptr);
  }
  for (; i + 8 <= n; i += 8) draw_avx2_groups<1>(key0, key1, streams.from(i), blocks + i, draw, at(i), ties_at(i));
  draw_scalar(seed, streams.from(i), blocks + i, n - i, draw, at(i), ties_at(i));
}

#endif  // GNNPIPE_DROPOUT_AVX2

// One path's draw (see draw_scalar), the draw not constant().
void draw_path(DrawPath path, uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& d,
               uint8_t* out, uint8_t* ties, const Interleave& interleave) {
  switch (path) {
    case DrawPath::kScalar: draw_scalar(seed, streams, blocks, n, d, out, ties); return;
    case DrawPath::kPortable: draw_portable(seed, streams, blocks, n, d, out, ties); return;
    case DrawPath::kFastest: break;
  }
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) {
    draw_avx2(seed, streams, blocks, n, d, out, ties, interleave);
    return;
  }
#endif
  draw_portable(seed, streams, blocks, n, d, out, ties);
}

// The mask bytes of n blocks (every path's contract, above). A refining draw runs in chunks: the
// chunk's blocks give their u > level bits and their ties, then the blocks with a tie draw their
// refinement blocks (about one in sixteen) as a k = 8 draw at level `low` without refinement,
// whose bits (r >= low) decide the ties.
}  // namespace

void draw(DrawPath path, uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& d,
          uint8_t* out, const Interleave& interleave) {
  if (d.constant()) return fill_constant(d, n, out);  // out may be null when n == 0
  if (!d.refines()) return draw_path(path, seed, streams, blocks, n, d, out, nullptr, interleave);
  constexpr int64_t kChunk = 1024;  // blocks: about 64 of them tie, one full vector pass of refinements
  const DropoutDraw refinement{d.low << 8, 8, 1, d.low, 0};
  std::array<uint8_t, 2 * kChunk> ties, fine;
  std::array<uint64_t, kChunk> fine_blocks, fine_streams;
  std::array<int32_t, kChunk> tied;
  for (int64_t first = 0; first < n; first += kChunk) {
    const int64_t m = std::min(kChunk, n - first);
    uint8_t* o = out + 2 * first;
    draw_path(path, seed, streams.from(first), blocks + first, m, d, o, ties.data(), interleave);
    int32_t count = 0;
    for (int32_t i = 0; i < m; ++i) {  // branch-free: a block ties with probability about 1/16
      tied[static_cast<std::size_t>(count)] = i;
      count += (ties[static_cast<std::size_t>(2 * i)] | ties[static_cast<std::size_t>(2 * i + 1)]) != 0 ? 1 : 0;
    }
    for (int32_t k = 0; k < count; ++k) {
      const int64_t i = first + tied[static_cast<std::size_t>(k)];
      fine_blocks[static_cast<std::size_t>(k)] = blocks[i] ^ kDropoutRefinementBit;
      fine_streams[static_cast<std::size_t>(k)] = streams.at(i);
    }
    if (count == 0) continue;
    // Padded to whole vectors with copies of the last refinement (their bits unused).
    int32_t padded = count;
    for (; padded % 8 != 0; ++padded) {
      fine_blocks[static_cast<std::size_t>(padded)] = fine_blocks[static_cast<std::size_t>(count - 1)];
      fine_streams[static_cast<std::size_t>(padded)] = fine_streams[static_cast<std::size_t>(count - 1)];
    }
    const Streams fine_stream = streams.one ? streams : Streams{fine_streams.data(), false};
    draw_path(path, seed, fine_stream, fine_blocks.data(), padded, refinement, fine.data(), nullptr, {});
    for (int32_t k = 0; k < count; ++k) {
      const auto t = static_cast<std::size_t>(tied[static_cast<std::size_t>(k)]);
      for (std::size_t j = 0; j < 2; ++j) o[2 * t + j] |= ties[2 * t + j] & fine[2 * static_cast<std::size_t>(k) + j];
    }
  }
}

void draw_feature_blocks(uint64_t seed, uint64_t stream, const uint64_t* blocks, int64_t n,
                                 const DropoutDraw& d, uint8_t* out) {
  draw(DrawPath::kFastest, seed, Streams{&stream, true}, blocks, n, d, out);
}

}  // namespace detail

void dropout_draw_blocks(core::RngKey key, std::span<const uint64_t> blocks, uint32_t threshold, std::span<uint8_t> out,
                         DrawPath path) {
  GNNPIPE_CHECK(threshold <= kDropoutLevels, "dropout_draw_blocks: threshold {} above {}", threshold, kDropoutLevels);
  const DropoutDraw d = DropoutDraw::of(threshold);
  GNNPIPE_CHECK(out.size() == blocks.size() << d.byte_shift,
                "dropout_draw_blocks: {} output bytes for {} blocks of {} bytes", out.size(), blocks.size(),
                d.bytes_per_block());
  detail::draw(path, key.seed, detail::Streams{&key.stream, true}, blocks.data(), static_cast<int64_t>(blocks.size()),
               d, out.data());
}

bool dropout_uses_avx2() { return detail::has_avx2(); }

}  // namespace gnnpipe::models::cpu
