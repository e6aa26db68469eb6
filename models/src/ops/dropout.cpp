#include "gnnpipe/models/ops/dropout.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/dropout_draw.hpp"
#include "ops/parallel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GNNPIPE_DROPOUT_AVX2 1
#else
#define GNNPIPE_DROPOUT_AVX2 0
#endif

namespace gnnpipe::models::cpu {
namespace {

// --- drawing keep bits ----------------------------------------------------------------------------
// Every path computes, for each i < n, the draw.bytes_per_block() mask bytes of block blocks[i] of
// stream(i) (byte j as dropout_mask.hpp's dropout_byte_bits gives it for stream byte
// (blocks[i] << draw.byte_shift) + j) into out[i << draw.byte_shift ..],
// stream(i) = streams.ids[0] for all i when streams.one (feature dropout: one key per layer), else
// streams.ids[i] (edge dropout: a stream per destination); they differ only in speed. The lists are
// arbitrary, so one call can draw the blocks of many short rows (or edges) as well as a long row's
// run.
struct Streams {
  const uint64_t* ids;
  bool one;
  uint64_t at(int64_t i) const { return ids[one ? 0 : i]; }
  Streams from(int64_t i) const { return Streams{one ? ids : ids + i, one}; }
};

// Work for the core to overlap with the draw's arithmetic: the vector path calls step(context)
// 8 / every times for every 64 blocks it draws, between Philox rounds (RowDropper applies a slice
// of the previous batch there, memory-bound work, so loads and stores are in flight while the
// multipliers run; eight slices per 64 blocks took the 64 M-element pass at p = 0.5 from 33.5 to
// 25.3 ms). `every` is 1, 2, 4 or 8 (see RowDropper's slices).
struct Interleave {
  void (*step)(void*) = nullptr;
  void* context = nullptr;
  int every = 1;
};

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

// y[c] = bit c of `bits` ? x[c] * scale : 0 for c in [0, n) (bits least significant first).
template <class T>
void apply_portable(const uint8_t* bits, const T* x, T* y, int64_t n, T scale) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const unsigned byte = bits[c >> 3];
    for (int j = 0; j < 8; ++j) y[c + j] = (byte >> j) & 1u ? x[c + j] * scale : T{0};
  }
  for (; c < n; ++c) y[c] = (bits[c >> 3] >> (c & 7)) & 1u ? x[c] * scale : T{0};
}

// Writes the columns c < n whose value in `row` has any bit set (anything but +0) to out, in order,
// and returns their count, or stops and returns limit + 1 once more than `limit` are found.
template <class T>
int64_t nonzero_columns_portable(const T* row, int64_t n, int64_t limit, int32_t* out) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  int64_t count = 0;
  for (int64_t c = 0; c < n; ++c) {
    Bits bits;
    std::memcpy(&bits, row + c, sizeof(T));
    if (bits != 0) {
      if (count == limit) return limit + 1;
      out[count++] = static_cast<int32_t>(c);
    }
  }
  return count;
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

template <bool kStream>
[[gnu::target("avx2")]] inline void store(float* to, const __m256& v) {
  if constexpr (kStream) {
    _mm256_stream_ps(to, v);
  } else {
    _mm256_storeu_ps(to, v);
  }
}

template <bool kStream>
[[gnu::target("avx2")]] inline void store(double* to, const __m256d& v) {
  if constexpr (kStream) {
    _mm256_stream_pd(to, v);
  } else {
    _mm256_storeu_pd(to, v);
  }
}

// y[c] = bit c of `bits` ? x[c] * scale : 0 over [0, n); streaming stores (y 32-byte aligned) or
// plain ones. Four mask bytes (32 elements) per step.
template <bool kStream>
[[gnu::target("avx2")]] void apply_avx2(const uint8_t* bits, const float* x, float* y, int64_t n, float scale) {
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 s = _mm256_set1_ps(scale);
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    uint32_t word;
    std::memcpy(&word, bits + (c >> 3), 4);
    const __m256i all = _mm256_set1_epi32(static_cast<int>(word));
    for (int b = 0; b < 4; ++b) {
      const __m256i sel = _mm256_slli_epi32(select, 8 * b);
      const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(all, sel), sel));
      store<kStream>(y + c + 8 * b, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c + 8 * b), s), keep));
    }
  }
  for (; c + 8 <= n; c += 8) {
    const __m256i lane = _mm256_and_si256(_mm256_set1_epi32(bits[c >> 3]), select);
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(lane, select));
    store<kStream>(y + c, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), s), keep));
  }
  apply_portable(bits + (c >> 3), x + c, y + c, n - c, scale);
}

template <bool kStream>
[[gnu::target("avx2")]] void apply_avx2(const uint8_t* bits, const double* x, double* y, int64_t n, double scale) {
  const __m256i select_lo = _mm256_setr_epi64x(1, 2, 4, 8);
  const __m256i select_hi = _mm256_setr_epi64x(16, 32, 64, 128);
  const __m256d s = _mm256_set1_pd(scale);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i byte = _mm256_set1_epi64x(bits[c >> 3]);
    const __m256d keep_lo = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(byte, select_lo), select_lo));
    const __m256d keep_hi = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(byte, select_hi), select_hi));
    store<kStream>(y + c, _mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + c), s), keep_lo));
    store<kStream>(y + c + 4, _mm256_and_pd(_mm256_mul_pd(_mm256_loadu_pd(x + c + 4), s), keep_hi));
  }
  apply_portable(bits + (c >> 3), x + c, y + c, n - c, scale);
}

[[gnu::target("avx2,bmi")]] int64_t nonzero_columns_avx2(const float* row, int64_t n, int64_t limit, int32_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  int64_t count = 0;
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + c));
    auto set = static_cast<unsigned>(~_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, zero))) & 0xff);
    if (set == 0) continue;
    if (count + std::popcount(set) > limit) return limit + 1;
    for (; set != 0; set &= set - 1) out[count++] = static_cast<int32_t>(c + std::countr_zero(set));
  }
  const int64_t rest = nonzero_columns_portable(row + c, n - c, limit - count, out + count);
  if (rest > limit - count) return limit + 1;
  for (int64_t k = count; k < count + rest; ++k) out[k] += static_cast<int32_t>(c);
  return count + rest;
}

int64_t nonzero_columns_avx2(const double* row, int64_t n, int64_t limit, int32_t* out) {
  return nonzero_columns_portable(row, n, limit, out);
}

// out[k] = base + k for k < n.
[[gnu::target("avx2")]] void iota_avx2(uint64_t* out, uint64_t base, int64_t n) {
  __m256i v = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(base)), _mm256_setr_epi64x(0, 1, 2, 3));
  const __m256i four = _mm256_set1_epi64x(4);
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), v);
    v = _mm256_add_epi64(v, four);
  }
  for (; k < n; ++k) out[k] = base + static_cast<uint64_t>(k);
}

bool has_avx2() {
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}

#else

bool has_avx2() { return false; }

#endif

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
void draw(DrawPath path, uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& d,
          uint8_t* out, const Interleave& interleave = {}) {
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

template <class T>
int64_t nonzero_columns(const T* row, int64_t n, int64_t limit, int32_t* out) {
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) return nonzero_columns_avx2(row, n, limit, out);
#endif
  return nonzero_columns_portable(row, n, limit, out);
}

void iota(uint64_t* out, uint64_t base, int64_t n) {
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) {
    iota_avx2(out, base, n);
    return;
  }
#endif
  for (int64_t k = 0; k < n; ++k) out[k] = base + static_cast<uint64_t>(k);
}

// apply_portable, or its AVX2 twin; `stream`: streaming stores where y is 32-byte aligned.
template <class T>
void apply(const uint8_t* bits, const T* x, T* y, int64_t n, T scale, bool stream = false) {
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) {
    if (stream && reinterpret_cast<uintptr_t>(y) % 32 == 0) {
      apply_avx2<true>(bits, x, y, n, scale);
    } else {
      apply_avx2<false>(bits, x, y, n, scale);
    }
    return;
  }
#endif
  (void)stream;
  apply_portable(bits, x, y, n, scale);
}

// The bytes of a bit stream shifted right by `shift` in [1, 7] bits: out[k] = (in[k] >> shift) |
// (in[k + 1] << (8 - shift)) for k < n (reads in[0 .. n]), eight bytes at a time.
void shift_bytes(const uint8_t* in, int64_t n, unsigned shift, uint8_t* out) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    uint64_t word;
    std::memcpy(&word, in + k, 8);  // little-endian: byte k is the least significant
    word = (word >> shift) | (static_cast<uint64_t>(in[k + 8]) << (64 - shift));
    std::memcpy(out + k, &word, 8);
  }
  for (; k < n; ++k) out[k] = static_cast<uint8_t>((in[k] >> shift) | (in[k + 1] << (8 - shift)));
}

// Draws and applies dropout row by row. Rows are queued (add) and their Philox blocks collected
// into one list of up to kCapacity blocks, drawn together so that short rows and edges use the
// vector path too; each row's mask bytes are then assembled from its blocks' bytes (a block gives
// draw.bytes_per_block() of them; consecutive rows of one stream share the block they meet in).
// The mask is applied to the elements one batch late: while batch k is drawn (arithmetic), batch
// k - 1's elements are applied in slices between groups of blocks (memory traffic), so the two
// overlap on one core; finish() draws and applies what is left. With `streaming`, outputs are
// written with streaming stores (large matrices: no read for ownership, no cache pollution). A
// long row is split into pieces of whole mask bytes. Without a mask (mask == nullptr: no backward
// will read it) a segment of a row that is mostly +0 (sparse features) draws only the blocks of
// its other elements, each applied on its own, and writes zeros elsewhere (the output is zero
// there, kept or not); denser segments go the usual way with their bits in a scratch buffer. One
// per task: it holds the lists (about 48 KiB, left uninitialised). Writes only the queued rows'
// outputs and mask bytes.
template <class T>
class RowDropper {
 public:
  // `one_stream`: the stream of every row (feature dropout), or nullopt when add() names each
  // row's (edge dropout).
  RowDropper(uint64_t seed, std::optional<uint64_t> one_stream, const DropoutDraw& draw, T scale, const T* x, T* y,
             uint8_t* mask, bool streaming)
      : seed_(seed),
        one_stream_(one_stream),
        draw_(draw),
        scale_(scale),
        x_(x),
        y_(y),
        mask_(mask),
        streaming_(streaming),
        every_(slice_every(draw)),
        slice_((kSlice << draw.byte_shift) / (8 / every_)) {}
  RowDropper(const RowDropper&) = delete;
  RowDropper& operator=(const RowDropper&) = delete;
  ~RowDropper() = default;

  // A row of `cols` elements at positions [first, first + cols) of its stream (`stream`, ignored
  // with one_stream): input x + offset, output y + offset, mask bytes from mask + mask_offset.
  void add(uint64_t stream, uint64_t first, int64_t cols, int64_t offset, int64_t mask_offset) {
    const int64_t row_bytes = dropout_mask_row_bytes(cols);
    if (mask_ != nullptr) {
      queue(stream, first, cols, offset, mask_offset, 0, row_bytes);
      return;
    }
    // Segments of whole mask bytes; sparse when at most a quarter of the elements are not +0.
    for (int64_t begin = 0; begin < cols; begin += kSegment) {
      const int64_t n = std::min(kSegment, cols - begin);
      const int64_t nonzero = nonzero_columns(x_ + offset + begin, n, n / 4, columns_.data());
      if (nonzero > n / 4) {
        queue(stream, first, cols, offset, 0, begin / 8, (begin + n + 7) / 8);
        continue;
      }
      if (y_ != x_) std::fill_n(y_ + offset + begin, n, T{0});  // in place, those elements are +0 already
      for (int64_t k = 0; k < nonzero; ++k) {
        const int64_t c = begin + columns_[static_cast<std::size_t>(k)];
        const uint64_t position = first + static_cast<uint64_t>(c);
        // Consecutive elements of one block share its draw.
        if (!last_block_is(stream, position >> (3 + draw_.byte_shift)) || singles_ == kCapacity) {
          if (blocks_ == kCapacity || singles_ == kCapacity) draw_batch();
          append_blocks(stream, position >> (3 + draw_.byte_shift), 1);
        }
        const auto lane = static_cast<uint32_t>(position & ((uint64_t{8} << draw_.byte_shift) - 1u));
        single_[static_cast<std::size_t>(singles_++)] = Single{offset + c, static_cast<int32_t>(blocks_ - 1), lane};
      }
    }
  }

  // Draws the queued rows and applies everything still pending.
  void finish() {
    draw_batch();
    apply_pending(std::numeric_limits<int64_t>::max());
#if GNNPIPE_DROPOUT_AVX2
    if (streaming_) _mm_sfence();  // order the streaming stores before the task ends
#endif
  }

 private:
  static constexpr int64_t kCapacity = 256;  // blocks per batch: 4,096 to 32,768 decisions
  static constexpr int64_t kBytes = kCapacity * 16;  // their mask bytes at most (one bit a decision)
  static constexpr int64_t kSlice = 512;  // elements applied per 64 blocks drawn, times bytes_per_block()
  static constexpr int64_t kMinSlice = 512;  // elements applied per step at least

  // Philox rounds between the apply's steps: eight steps per 64 blocks drawn, fewer where a step
  // would apply under kMinSlice elements (one or two bits a decision: eight steps of 1,024 or 512;
  // four bits: four of 512; eight bits: two of 512). Each step has a fixed cost (the pending pieces
  // walked, a call per piece), which at a step per 128 elements (the eight-bit draw's) took about a
  // tenth of the pass and bought no overlap (Cora's 2,708 x 1,433 at p = 0.3: 3.3-3.7 ms with
  // eight steps, 3.0-3.3 ms with two).
  static int slice_every(const DropoutDraw& draw) {
    const int64_t steps = std::clamp<int64_t>((kSlice << draw.byte_shift) / kMinSlice, 1, 8);  // a power of 2
    return static_cast<int>(8 / steps);
  }
  static constexpr int64_t kSegment = 2048;  // columns scanned at once without a mask (a multiple of 8)

  // An element of a sparse segment: its own bit of a drawn block's mask bytes.
  struct Single {
    int64_t offset;  // element (x, y)
    int32_t block;   // slot in index_
    uint32_t lane;   // bit of the block's mask bytes, < 8 * bytes_per_block()
  };

  struct Piece {
    int64_t offset;      // first element (x, y)
    uint8_t* mask;       // first mask byte (in the mask, or in scratch_ without one)
    int64_t elements;    // elements in the piece (8 * bytes, less at a row's end)
    int64_t first_byte;  // into bits_: the stream byte holding the piece's first element
    int64_t bytes;       // mask bytes
    unsigned shift;      // position of the piece's first element in that byte
  };

  // Whether the batch's last block is block `block` of `stream`.
  bool last_block_is(uint64_t stream, uint64_t block) const {
    const auto last = static_cast<std::size_t>(blocks_ - 1);
    return blocks_ > 0 && index_[last] == block && (one_stream_ || stream_[last] == stream);
  }

  void append_blocks(uint64_t stream, uint64_t first_block, int64_t n) {
    iota(index_.data() + blocks_, first_block, n);
    if (!one_stream_) std::fill_n(stream_.data() + blocks_, n, stream);
    blocks_ += n;
  }

  // Queues mask bytes [j_begin, j_end) of a row (see add), in pieces that fit the batches.
  void queue(uint64_t stream, uint64_t first, int64_t cols, int64_t offset, int64_t mask_offset, int64_t j_begin,
             int64_t j_end) {
    const auto shift = static_cast<unsigned>(first & 7u);
    const int64_t extra = shift != 0 ? 1 : 0;  // an unaligned mask byte straddles two stream bytes
    const uint64_t byte0 = first >> 3;          // mask byte j's elements start in stream byte byte0 + j
    const unsigned s = draw_.byte_shift;
    const uint64_t in_block = (uint64_t{1} << s) - 1u;
    for (int64_t j = j_begin; j < j_end;) {
      const uint64_t byte = byte0 + static_cast<uint64_t>(j);
      const uint64_t block = byte >> s;
      const bool reuse = last_block_is(stream, block);
      // Stream bytes the batch holds from `byte` on: to the end of its last free block.
      const int64_t room = ((kCapacity - blocks_ + (reuse ? 1 : 0)) << s) - static_cast<int64_t>(byte & in_block) - extra;
      const int64_t scratch_room = mask_ != nullptr ? kBytes : kBytes - scratch_used_;
      if (room < 1 || scratch_room < 1 || count_[current_] == kCapacity) {
        draw_batch();
        continue;
      }
      const int64_t bytes = std::min({j_end - j, room, scratch_room});
      const int64_t slot = reuse ? blocks_ - 1 : blocks_;
      const uint64_t last_block = (byte + static_cast<uint64_t>(bytes + extra) - 1u) >> s;
      uint8_t* m = mask_ != nullptr ? mask_ + mask_offset + j : scratch_[current_].data() + scratch_used_;
      pieces_[current_][static_cast<std::size_t>(count_[current_]++)] =
          Piece{offset + 8 * j, m, std::min(8 * bytes, cols - 8 * j),
                (slot << s) + static_cast<int64_t>(byte & in_block), bytes, shift};
      append_blocks(stream, reuse ? block + 1 : block, static_cast<int64_t>(last_block - block) + (reuse ? 0 : 1));
      if (mask_ == nullptr) scratch_used_ += bytes;
      j += bytes;
    }
  }

  // Draws the queued batch (applying the pending one in slices meanwhile), writes its mask bytes
  // and makes it the pending batch.
  void draw_batch() {
    const std::size_t now = current_;
    const Piece* pieces = pieces_[now].data();
    const Interleave interleave{[](void* self) {
                                  auto* d = static_cast<RowDropper*>(self);
                                  d->apply_pending(d->slice_);
                                },
                                this, every_};
    const Streams streams = one_stream_ ? Streams{&*one_stream_, true} : Streams{stream_.data(), false};
    draw(DrawPath::kFastest, seed_, streams, index_.data(), blocks_, draw_, bits_.data(), interleave);
    for (int64_t p = 0; p < count_[now]; ++p) {
      const Piece& piece = pieces[p];
      const uint8_t* b = bits_.data() + piece.first_byte;
      uint8_t* m = piece.mask;
      if (piece.shift == 0) {
        std::memcpy(m, b, static_cast<std::size_t>(piece.bytes));
      } else {
        shift_bytes(b, piece.bytes, piece.shift, m);
      }
      if (const int64_t tail = piece.elements & 7; tail != 0) m[piece.bytes - 1] &= static_cast<uint8_t>((1u << tail) - 1u);
    }
    for (int64_t k = 0; k < singles_; ++k) {
      const Single& e = single_[static_cast<std::size_t>(k)];
      const uint8_t byte = bits_[(static_cast<std::size_t>(e.block) << draw_.byte_shift) + (e.lane >> 3)];
      y_[e.offset] = (byte >> (e.lane & 7u)) & 1u ? x_[e.offset] * scale_ : T{0};
    }
    singles_ = 0;
    apply_pending(std::numeric_limits<int64_t>::max());  // what the draw left of the previous batch
    current_ ^= 1;                                         // the drawn batch becomes the pending one
    count_[current_] = 0;
    next_piece_ = 0;
    next_element_ = 0;
    blocks_ = 0;
    scratch_used_ = 0;
  }

  // Applies up to `budget` elements of the pending batch, in order, splitting a piece only at whole
  // mask bytes.
  void apply_pending(int64_t budget) {
    const std::size_t pending = current_ ^ 1;
    while (next_piece_ < count_[pending]) {
      const Piece& piece = pieces_[pending][static_cast<std::size_t>(next_piece_)];
      const int64_t left = piece.elements - next_element_;
      const int64_t n = budget >= left ? left : budget / 8 * 8;
      if (n == 0) return;
      apply(piece.mask + next_element_ / 8, x_ + piece.offset + next_element_,
            y_ + piece.offset + next_element_, n, scale_, streaming_);
      budget -= n;
      next_element_ += n;
      if (next_element_ == piece.elements) {
        ++next_piece_;
        next_element_ = 0;
      }
    }
  }

  uint64_t seed_;
  std::optional<uint64_t> one_stream_;
  DropoutDraw draw_;
  T scale_;
  const T* x_;
  T* y_;
  uint8_t* mask_;
  bool streaming_;
  int every_;       // Interleave::every of the batches' draws
  int64_t slice_;  // elements applied per Interleave step (8 / every_ steps per 64 blocks)
  std::array<uint64_t, kCapacity> index_;
  std::array<uint64_t, kCapacity> stream_;
  std::array<uint8_t, kBytes> bits_;
  std::array<std::array<Piece, kCapacity>, 2> pieces_;  // [current_]: being queued; the other: pending
  std::array<std::array<uint8_t, kBytes>, 2> scratch_;  // mask bytes of the batches without a mask
  std::array<int64_t, 2> count_{0, 0};
  int64_t scratch_used_ = 0;
  std::array<Single, kCapacity> single_;
  int64_t singles_ = 0;
  std::array<int32_t, kSegment / 4 + 1> columns_;  // a sparse segment's non-zero columns
  std::size_t current_ = 0;
  int64_t next_piece_ = 0;    // of the pending batch
  int64_t next_element_ = 0;  // within that piece
  int64_t blocks_ = 0;
};

// Streaming stores for outputs of at least this many bytes: above the caches (the dev machine's L3
// is 32 MiB), where the consumer reads y back from memory anyway, they save the read for
// ownership; below it, y stays in cache for the op that consumes it. Never in place (x's lines are
// in cache already).
constexpr int64_t kStreamingBytes = int64_t{64} << 20;

bool use_streaming_stores(const void* x, const void* y, int64_t bytes) {
  return x != y && bytes >= kStreamingBytes;
}

// p == 0: y = x and every mask bit of the row set (the padding bits stay 0).
void set_row_bits(uint8_t* mask_row, int64_t cols) {
  const int64_t full = cols / 8;
  std::memset(mask_row, 0xff, static_cast<std::size_t>(full));
  if (cols % 8 != 0) mask_row[full] = static_cast<uint8_t>((1u << (cols % 8)) - 1u);
}

// The global id of local row r (the identity numbering when `ids` is empty).
inline uint64_t global_id(std::span<const graph::NodeId> ids, int64_t r) {
  return ids.empty() ? static_cast<uint64_t>(r) : static_cast<uint64_t>(ids[static_cast<std::size_t>(r)]);
}

void check_row_ids(std::span<const graph::NodeId> ids, int64_t rows, const char* what) {
  GNNPIPE_CHECK(ids.empty() || static_cast<int64_t>(ids.size()) == rows, "{}: {} row ids for {} rows", what, ids.size(),
                rows);
  GNNPIPE_CHECK(std::none_of(ids.begin(), ids.end(), [](graph::NodeId id) { return id < 0; }), "{}: negative row id",
                what);
}

}  // namespace

void detail::draw_feature_blocks(uint64_t seed, uint64_t stream, const uint64_t* blocks, int64_t n,
                                 const DropoutDraw& d, uint8_t* out) {
  draw(DrawPath::kFastest, seed, Streams{&stream, true}, blocks, n, d, out);
}

template <class T>
int64_t detail::nonzero_columns(const T* row, int64_t n, int64_t limit, int32_t* out) {
  return cpu::nonzero_columns(row, n, limit, out);
}
template int64_t detail::nonzero_columns<float>(const float*, int64_t, int64_t, int32_t*);
template int64_t detail::nonzero_columns<double>(const double*, int64_t, int64_t, int32_t*);

void dropout_draw_blocks(core::RngKey key, std::span<const uint64_t> blocks, uint32_t threshold, std::span<uint8_t> out,
                         DrawPath path) {
  GNNPIPE_CHECK(threshold <= kDropoutLevels, "dropout_draw_blocks: threshold {} above {}", threshold, kDropoutLevels);
  const DropoutDraw d = DropoutDraw::of(threshold);
  GNNPIPE_CHECK(out.size() == blocks.size() << d.byte_shift,
                "dropout_draw_blocks: {} output bytes for {} blocks of {} bytes", out.size(), blocks.size(),
                d.bytes_per_block());
  draw(path, key.seed, Streams{&key.stream, true}, blocks.data(), static_cast<int64_t>(blocks.size()), d, out.data());
}

bool dropout_uses_avx2() { return has_avx2(); }

template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "dropout: input {} and output {} differ in shape",
                shape_str(x), shape_str(y));
  GNNPIPE_CHECK(mask.empty() || mask.size() == dropout_mask_bytes(x.rows, x.cols),
                "dropout: mask of {} bytes for x {} (needs {}, or none)", mask.size(), shape_str(x),
                dropout_mask_bytes(x.rows, x.cols));
  check_row_ids(row_ids, x.rows, "dropout");
  const int64_t cols = x.cols;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  uint8_t* const mask_data = mask.empty() ? nullptr : mask.data();
  if (p == T{0}) {
    detail::parallel_rows(x.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
      if (mask_data != nullptr) {
        for (int64_t r = begin; r < end; ++r) set_row_bits(mask_data + r * row_bytes, cols);
      }
      if (y.data != x.data) std::copy(x.data + begin * cols, x.data + end * cols, y.data + begin * cols);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  const bool streaming = use_streaming_stores(x.data, y.data, x.size() * static_cast<int64_t>(sizeof(T)));
  detail::parallel_rows(x.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, key.stream, draw, scale, x.data, y.data, mask_data, streaming);
    for (int64_t r = begin; r < end; ++r) {
      dropper.add(key.stream, global_id(row_ids, r) * static_cast<uint64_t>(cols), cols, r * cols, r * row_bytes);
    }
    dropper.finish();
  });
}

template <class T>
void edge_dropout_forward(core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y,
                          std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "edge_dropout: p must be in [0, 1), got {}", p);
  const int64_t heads = alpha.cols;
  check_shape(alpha, block.num_edges(), heads, "edge_dropout: alpha (E x H)");
  check_shape(y, block.num_edges(), heads, "edge_dropout: y (E x H)");
  GNNPIPE_CHECK(mask.size() == dropout_mask_bytes(alpha.rows, heads),
                "edge_dropout: mask of {} bytes for alpha {} (needs {})", mask.size(), shape_str(alpha),
                dropout_mask_bytes(alpha.rows, heads));
  check_row_ids(row_ids, block.num_src, "edge_dropout");
  const int64_t row_bytes = dropout_mask_row_bytes(heads);
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  if (p == T{0}) {
    detail::parallel_rows(block.num_dst, detail::grain_for(avg * heads), [&](int64_t begin, int64_t end) {
      const int64_t first = block.offsets[begin], last = block.offsets[end];
      for (int64_t e = first; e < last; ++e) set_row_bits(mask.data() + e * row_bytes, heads);
      if (y.data != alpha.data) std::copy(alpha.data + first * heads, alpha.data + last * heads, y.data + first * heads);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  const bool streaming = use_streaming_stores(alpha.data, y.data, alpha.size() * static_cast<int64_t>(sizeof(T)));
  detail::parallel_rows(block.num_dst, detail::grain_for(4 * avg * heads), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, std::nullopt, draw, scale, alpha.data, y.data, mask.data(), streaming);
    for (int64_t v = begin; v < end; ++v) {
      const uint64_t stream = key.with(global_id(row_ids, v)).stream;
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        dropper.add(stream, global_id(row_ids, block.indices[e]) * static_cast<uint64_t>(heads), heads, e * heads,
                    e * row_bytes);
      }
    }
    dropper.finish();
  });
}

template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout_backward: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(dy.rows == dx.rows && dy.cols == dx.cols, "dropout_backward: dy {} and dx {} differ in shape",
                shape_str(dy), shape_str(dx));
  GNNPIPE_CHECK(mask.size() == dropout_mask_bytes(dy.rows, dy.cols),
                "dropout_backward: mask of {} bytes for dy {} (needs {})", mask.size(), shape_str(dy),
                dropout_mask_bytes(dy.rows, dy.cols));
  const T scale = T{1} / (T{1} - p);
  const int64_t cols = dy.cols;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  detail::parallel_rows(dy.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
    if (cols % 8 == 0) {  // no padding bits: the rows' bits are contiguous
      apply(mask.data() + begin * row_bytes, dy.data + begin * cols, dx.data + begin * cols, (end - begin) * cols,
            scale);
      return;
    }
    for (int64_t r = begin; r < end; ++r) {
      apply(mask.data() + r * row_bytes, dy.data + r * cols, dx.data + r * cols, cols, scale);
    }
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                   \
  template void dropout_forward<T>(core::RngKey, T, ConstView<T>, std::span<const graph::NodeId>, MatrixView<T>, \
                                   std::span<uint8_t>);                                                          \
  template void edge_dropout_forward<T>(core::RngKey, T, const graph::Block&, std::span<const graph::NodeId>,    \
                                        ConstView<T>, MatrixView<T>, std::span<uint8_t>);                        \
  template void dropout_backward<T>(std::span<const uint8_t>, T, ConstView<T>, MatrixView<T>);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cpu
