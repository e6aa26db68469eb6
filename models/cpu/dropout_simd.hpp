#pragma once
// Private to the CPU dropout ops (dropout_draw.cpp, dropout_forward.cpp, dropout_backward.cpp,
// sparse_input.cpp): the element loops that apply a drawn mask, scan for non-zeros and build block
// lists, each with an AVX2 twin picked at run time (has_avx2). Inline, so the per-row calls of the
// row droppers stay as cheap as when all of this lived in one translation unit.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/cpu_features.hpp"

#define GNNPIPE_DROPOUT_AVX2 GNNPIPE_CPU_AVX2

namespace gnnpipe::models::cpu::detail {

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

[[gnu::target("avx2,bmi")]] inline int64_t nonzero_columns_avx2(const float* row, int64_t n, int64_t limit,
                                                                int32_t* out) {
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

inline int64_t nonzero_columns_avx2(const double* row, int64_t n, int64_t limit, int32_t* out) {
  return nonzero_columns_portable(row, n, limit, out);
}

// out[k] = base + k for k < n.
[[gnu::target("avx2")]] inline void iota_avx2(uint64_t* out, uint64_t base, int64_t n) {
  __m256i v = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(base)), _mm256_setr_epi64x(0, 1, 2, 3));
  const __m256i four = _mm256_set1_epi64x(4);
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), v);
    v = _mm256_add_epi64(v, four);
  }
  for (; k < n; ++k) out[k] = base + static_cast<uint64_t>(k);
}

#endif

template <class T>
int64_t nonzero_columns(const T* row, int64_t n, int64_t limit, int32_t* out) {
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) return nonzero_columns_avx2(row, n, limit, out);
#endif
  return nonzero_columns_portable(row, n, limit, out);
}

inline void iota(uint64_t* out, uint64_t base, int64_t n) {
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
inline void shift_bytes(const uint8_t* in, int64_t n, unsigned shift, uint8_t* out) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    uint64_t word;
    std::memcpy(&word, in + k, 8);  // little-endian: byte k is the least significant
    word = (word >> shift) | (static_cast<uint64_t>(in[k + 8]) << (64 - shift));
    std::memcpy(out + k, &word, 8);
  }
  for (; k < n; ++k) out[k] = static_cast<uint8_t>((in[k] >> shift) | (in[k + 1] << (8 - shift)));
}

}  // namespace gnnpipe::models::cpu::detail
