#pragma once
// The inner loop of the CPU's sparse-dense products (detail::weighted_rows): o[c] += w * x[c] over
// a row. The build targets baseline x86-64 at -O2, where GCC does not vectorize this loop (o and x
// may alias; its cost model adds no run-time checks), so it ran one element at a time. The AVX2
// twin takes 8 floats (4 doubles) a step, a row's last few floats under a mask (a 7-wide output
// layer's rows too), picked at run time (has_avx2). It multiplies, then adds,
// each element on its own (never a fused multiply-add): every element is rounded exactly as by the
// scalar loop, so results are bitwise the same on either path (and the CUDA kernels' mul_rn /
// add_rn). o and x must not overlap. Private to models/cpu.
#include <cstdint>
#include <type_traits>

#include "cpu/cpu_features.hpp"

namespace gnnpipe::models::cpu::detail {

template <class T>
inline void axpy_row_portable(T* o, const T* x, T w, int64_t n) {
  for (int64_t c = 0; c < n; ++c) o[c] += w * x[c];
}

#if GNNPIPE_CPU_AVX2

// Lanes 0 .. k-1 on (all bits set), the rest off, for 0 <= k <= 8: a row's last k < 8 floats
// under _mm256_maskload_ps / _mm256_maskstore_ps (lanes off are neither read nor written).
[[gnu::target("avx2")]] inline __m256i tail_mask(int64_t k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

[[gnu::target("avx2")]] inline void axpy_row_avx2(float* o, const float* x, float w, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m256 a = _mm256_add_ps(_mm256_loadu_ps(o + c), _mm256_mul_ps(wv, _mm256_loadu_ps(x + c)));
    const __m256 b = _mm256_add_ps(_mm256_loadu_ps(o + c + 8), _mm256_mul_ps(wv, _mm256_loadu_ps(x + c + 8)));
    _mm256_storeu_ps(o + c, a);
    _mm256_storeu_ps(o + c + 8, b);
  }
  for (; c + 8 <= n; c += 8) {
    _mm256_storeu_ps(o + c, _mm256_add_ps(_mm256_loadu_ps(o + c), _mm256_mul_ps(wv, _mm256_loadu_ps(x + c))));
  }
  if (c < n) {  // the last n - c < 8 elements, masked (lanes off the mask are neither read nor written)
    const __m256i mask = tail_mask(n - c);
    const __m256 sum = _mm256_add_ps(_mm256_maskload_ps(o + c, mask), _mm256_mul_ps(wv, _mm256_maskload_ps(x + c, mask)));
    _mm256_maskstore_ps(o + c, mask, sum);
  }
}

[[gnu::target("avx2")]] inline void axpy_row_avx2(double* o, const double* x, double w, int64_t n) {
  const __m256d wv = _mm256_set1_pd(w);
  int64_t c = 0;
  for (; c + 4 <= n; c += 4) {
    _mm256_storeu_pd(o + c, _mm256_add_pd(_mm256_loadu_pd(o + c), _mm256_mul_pd(wv, _mm256_loadu_pd(x + c))));
  }
  for (; c < n; ++c) o[c] += w * x[c];
}

// o[c] = x[c] * f over a row, 8 floats a step (a masked tail); o may be x (each element is read,
// then written). A product is exact IEEE either way: bitwise the scalar loop.
[[gnu::target("avx2")]] inline void scale_row_avx2(float* o, const float* x, float f, int64_t n) {
  const __m256 fv = _mm256_set1_ps(f);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) _mm256_storeu_ps(o + c, _mm256_mul_ps(_mm256_loadu_ps(x + c), fv));
  if (c < n) {
    const __m256i mask = tail_mask(n - c);
    _mm256_maskstore_ps(o + c, mask, _mm256_mul_ps(_mm256_maskload_ps(x + c, mask), fv));
  }
}

// o = sum over the entries k in [begin, end) of w(k) * x_k, x_k = in + neighbor[k] * ld: 8 * V
// floats (and a masked ninth vector of fewer than 8 when Tail) in registers, summed from +0 in
// entry order, multiply then add, and stored once: every element bitwise as by zeroing o and
// calling axpy_row per entry, without reading and writing o once per entry. Scaled: x_k's
// elements are first multiplied by scale[neighbor[k]] (rounded), bitwise as if the rows had been
// scaled in a pass of their own (scale_row) before the sum.
template <int V, bool Tail, bool Scaled, class Weight>
[[gnu::target("avx2")]] inline void weighted_block_avx2(float* o, const float* in, int64_t ld, const int32_t* neighbor,
                                                        int64_t begin, int64_t end, const Weight& weight,
                                                        const float* scale, __m256i mask) {
  constexpr int kVectors = V + (Tail ? 1 : 0);
  __m256 acc[kVectors > 0 ? kVectors : 1];  // (V = 0 without a tail is never called: width >= 1)
  for (int j = 0; j < kVectors; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t k = begin; k < end; ++k) {
    const __m256 w = _mm256_set1_ps(weight(k));
    const int64_t row = neighbor[k];
    const float* x = in + row * ld;
    // (a lambda would not inherit the avx2 target: the scaling is written out)
    const __m256 f = Scaled ? _mm256_set1_ps(scale[row]) : _mm256_setzero_ps();
    for (int j = 0; j < V; ++j) {
      __m256 v = _mm256_loadu_ps(x + 8 * j);
      if constexpr (Scaled) v = _mm256_mul_ps(v, f);
      acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(w, v));
    }
    if constexpr (Tail) {
      __m256 v = _mm256_maskload_ps(x + 8 * V, mask);
      if constexpr (Scaled) v = _mm256_mul_ps(v, f);
      acc[V] = _mm256_add_ps(acc[V], _mm256_mul_ps(w, v));
    }
  }
  for (int j = 0; j < V; ++j) _mm256_storeu_ps(o + 8 * j, acc[j]);
  if constexpr (Tail) _mm256_maskstore_ps(o + 8 * V, mask, acc[V]);
}

template <bool Tail, bool Scaled, class Weight>
[[gnu::target("avx2")]] inline void weighted_block_avx2(int vectors, float* o, const float* in, int64_t ld,
                                                        const int32_t* neighbor, int64_t begin, int64_t end,
                                                        const Weight& weight, const float* scale, __m256i mask) {
  switch (vectors) {
    case 0: return weighted_block_avx2<0, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 1: return weighted_block_avx2<1, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 2: return weighted_block_avx2<2, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 3: return weighted_block_avx2<3, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 4: return weighted_block_avx2<4, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 5: return weighted_block_avx2<5, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 6: return weighted_block_avx2<6, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    case 7: return weighted_block_avx2<7, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
    default: return weighted_block_avx2<8, Tail, Scaled>(o, in, ld, neighbor, begin, end, weight, scale, mask);
  }
}

// o[c] = sum over the entries k in [begin, end) of weight(k) * in[neighbor[k]][c] for c < n (each
// source element times scale[neighbor[k]] first when Scaled), in blocks of 64 columns (eight
// registers), each summed over the entries in order: bitwise what zeroing o and calling
// axpy_row_avx2 once per entry (on the scaled rows) gives. o must not overlap in's rows.
template <bool Scaled = false, class Weight>
[[gnu::target("avx2")]] inline void weighted_row_avx2(float* o, const float* in, int64_t ld, const int32_t* neighbor,
                                                      int64_t begin, int64_t end, const Weight& weight, int64_t n,
                                                      const float* scale = nullptr) {
  for (int64_t c = 0; c < n; c += 64) {
    const int64_t width = n - c < 64 ? n - c : 64;
    const int vectors = static_cast<int>(width / 8);
    const int tail = static_cast<int>(width % 8);
    if (tail == 0) {
      weighted_block_avx2<false, Scaled>(vectors, o + c, in + c, ld, neighbor, begin, end, weight, scale,
                                         _mm256_setzero_si256());
    } else {
      weighted_block_avx2<true, Scaled>(vectors, o + c, in + c, ld, neighbor, begin, end, weight, scale,
                                        tail_mask(tail));
    }
  }
}

// o[c] = o[c] + bias[c], then (relu) o[c] > 0 ? o[c] : 0: _mm256_max_ps(v, 0) returns its second
// operand where v is NaN or either zero, so it is that expression bit for bit (-0 and NaN give +0).
[[gnu::target("avx2")]] inline void bias_relu_row_avx2(float* o, const float* bias, int64_t n, bool relu) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(o + c), _mm256_loadu_ps(bias + c));
    if (relu) v = _mm256_max_ps(v, zero);
    _mm256_storeu_ps(o + c, v);
  }
  if (c < n) {
    const __m256i mask = tail_mask(n - c);
    __m256 v = _mm256_add_ps(_mm256_maskload_ps(o + c, mask), _mm256_maskload_ps(bias + c, mask));
    if (relu) v = _mm256_max_ps(v, zero);
    _mm256_maskstore_ps(o + c, mask, v);
  }
}

#endif

template <class T>
inline void bias_relu_row(T* o, const T* bias, int64_t n, bool relu) {
#if GNNPIPE_CPU_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (has_avx2()) {
      bias_relu_row_avx2(o, bias, n, relu);
      return;
    }
  }
#endif
  for (int64_t c = 0; c < n; ++c) o[c] += bias[c];
  if (relu) {
    for (int64_t c = 0; c < n; ++c) o[c] = o[c] > T{0} ? o[c] : T{0};
  }
}

template <class T>
inline void scale_row(T* o, const T* x, T f, int64_t n) {
#if GNNPIPE_CPU_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (has_avx2()) {
      scale_row_avx2(o, x, f, n);
      return;
    }
  }
#endif
  for (int64_t c = 0; c < n; ++c) o[c] = x[c] * f;
}

template <class T>
inline void axpy_row(T* o, const T* x, T w, int64_t n) {
#if GNNPIPE_CPU_AVX2
  if (has_avx2()) {
    axpy_row_avx2(o, x, w, n);
    return;
  }
#endif
  axpy_row_portable(o, x, w, n);
}

}  // namespace gnnpipe::models::cpu::detail
