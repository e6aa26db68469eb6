#include "gnnpipe/models/ops/dropout.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "ops/parallel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GNNPIPE_DROPOUT_AVX2 1
#else
#define GNNPIPE_DROPOUT_AVX2 0
#endif

namespace gnnpipe::models::cpu {
namespace {

// --- drawing keep bits, eight per Philox block ---------------------------------------------------
// Every path computes out[i] = dropout_block_bits(RngKey{seed, streams[i]}.block(blocks[i]), t)
// (dropout_mask.hpp); they differ only in speed. The lists are arbitrary, so one call can draw the
// blocks of many short rows (or edges, each with its own stream) as well as a long row's run.

void draw_scalar(uint64_t seed, const uint64_t* streams, const uint64_t* blocks, int64_t n, uint32_t t, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<uint8_t>(dropout_block_bits(core::RngKey{seed, streams[i]}.block(blocks[i]), t));
  }
}

// Philox-4x32-10 on 16 blocks at once in structure-of-arrays form (core/rng.hpp's rounds), a
// shape compilers vectorise with the baseline instruction set (about twice the scalar rate on
// SSE2). The fallback where AVX2 is missing.
void draw_portable(uint64_t seed, const uint64_t* streams, const uint64_t* blocks, int64_t n, uint32_t t,
                   uint8_t* out) {
  using namespace core::philox_detail;
  constexpr int kLanes = 16;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    std::array<uint32_t, kLanes> c0, c1, c2, c3;
    for (int l = 0; l < kLanes; ++l) {
      c0[l] = static_cast<uint32_t>(blocks[i + l]);
      c1[l] = static_cast<uint32_t>(blocks[i + l] >> 32);
      c2[l] = static_cast<uint32_t>(streams[i + l]);
      c3[l] = static_cast<uint32_t>(streams[i + l] >> 32);
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
      out[i + l] = static_cast<uint8_t>(dropout_block_bits(core::PhiloxCounter{c0[l], c1[l], c2[l], c3[l]}, t));
    }
  }
  draw_scalar(seed, streams + i, blocks + i, n - i, t, out + i);
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

#if GNNPIPE_DROPOUT_AVX2

// hi:lo = a * m per 32-bit lane (Philox's mulhilo on eight lanes).
[[gnu::target("avx2")]] inline void mulhilo8(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// Eight uint64 values -> their low and high 32-bit halves as eight lanes each.
[[gnu::target("avx2")]] inline void split_u64x8(const uint64_t* p, __m256i& lo, __m256i& hi) {
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), order);
  const __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4)), order);
  lo = _mm256_permute2x128_si256(a, b, 0x20);
  hi = _mm256_permute2x128_si256(a, b, 0x31);
}

// G groups of eight blocks in flight: independent chains hide the multiplier's latency.
template <int G>
[[gnu::target("avx2")]] inline void draw_avx2_groups(const __m256i* key0, const __m256i* key1, const uint64_t* streams,
                                                     const uint64_t* blocks, uint32_t t, uint8_t* out) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(core::philox_detail::kM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(core::philox_detail::kM1));
  __m256i c0[G], c1[G], c2[G], c3[G];
  for (int g = 0; g < G; ++g) {
    split_u64x8(blocks + 8 * g, c0[g], c1[g]);
    split_u64x8(streams + 8 * g, c2[g], c3[g]);
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
  }
  // Lane j of a block is the 16-bit half j % 2 of word j / 2; kept iff u >= t, i.e. u > t - 1 as
  // signed 32-bit values (u < 2^16, t <= 2^16).
  const __m256i below = _mm256_set1_epi32(static_cast<int>(t) - 1);
  const __m256i low16 = _mm256_set1_epi32(0xffff);
  for (int g = 0; g < G; ++g) {
    const __m256i words[4] = {c0[g], c1[g], c2[g], c3[g]};
    __m256i bits = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i u = (j & 1) != 0 ? _mm256_srli_epi32(words[j >> 1], 16) : _mm256_and_si256(words[j >> 1], low16);
      bits = _mm256_or_si256(bits, _mm256_and_si256(_mm256_cmpgt_epi32(u, below), _mm256_set1_epi32(1 << j)));
    }
    const __m128i words16 = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 8 * g), _mm_packus_epi16(words16, words16));
  }
}

[[gnu::target("avx2")]] void draw_avx2(uint64_t seed, const uint64_t* streams, const uint64_t* blocks, int64_t n,
                                       uint32_t t, uint8_t* out) {
  __m256i key0[10], key1[10];
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    key0[round] = _mm256_set1_epi32(static_cast<int>(k0));
    key1[round] = _mm256_set1_epi32(static_cast<int>(k1));
    k0 += core::philox_detail::kW0;
    k1 += core::philox_detail::kW1;
  }
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) draw_avx2_groups<4>(key0, key1, streams + i, blocks + i, t, out + i);
  for (; i + 8 <= n; i += 8) draw_avx2_groups<1>(key0, key1, streams + i, blocks + i, t, out + i);
  draw_scalar(seed, streams + i, blocks + i, n - i, t, out + i);
}

[[gnu::target("avx2")]] void apply_avx2(const uint8_t* bits, const float* x, float* y, int64_t n, float scale) {
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 s = _mm256_set1_ps(scale);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i lane = _mm256_and_si256(_mm256_set1_epi32(bits[c >> 3]), select);
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(lane, select));
    _mm256_storeu_ps(y + c, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), s), keep));
  }
  apply_portable(bits + (c >> 3), x + c, y + c, n - c, scale);
}

[[gnu::target("avx2")]] void apply_avx2(const uint8_t* bits, const double* x, double* y, int64_t n, double scale) {
  const __m256i select_lo = _mm256_setr_epi64x(1, 2, 4, 8);
  const __m256i select_hi = _mm256_setr_epi64x(16, 32, 64, 128);
  const __m256d s = _mm256_set1_pd(scale);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256i byte = _mm256_set1_epi64x(bits[c >> 3]);
    const __m256d keep_lo = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(byte, select_lo), select_lo));
    const __m256d keep_hi = _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(byte, select_hi), select_hi));
    const __m256d lo = _mm256_mul_pd(_mm256_loadu_pd(x + c), s);
    const __m256d hi = _mm256_mul_pd(_mm256_loadu_pd(x + c + 4), s);
    _mm256_storeu_pd(y + c, _mm256_and_pd(lo, keep_lo));
    _mm256_storeu_pd(y + c + 4, _mm256_and_pd(hi, keep_hi));
  }
  apply_portable(bits + (c >> 3), x + c, y + c, n - c, scale);
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

void draw(DrawPath path, uint64_t seed, const uint64_t* streams, const uint64_t* blocks, int64_t n, uint32_t t,
          uint8_t* out) {
  switch (path) {
    case DrawPath::kScalar: draw_scalar(seed, streams, blocks, n, t, out); return;
    case DrawPath::kPortable: draw_portable(seed, streams, blocks, n, t, out); return;
    case DrawPath::kFastest: break;
  }
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) {
    draw_avx2(seed, streams, blocks, n, t, out);
    return;
  }
#endif
  draw_portable(seed, streams, blocks, n, t, out);
}

template <class T>
void apply(const uint8_t* bits, const T* x, T* y, int64_t n, T scale) {
#if GNNPIPE_DROPOUT_AVX2
  if (has_avx2()) {
    apply_avx2(bits, x, y, n, scale);
    return;
  }
#endif
  apply_portable(bits, x, y, n, scale);
}

// Draws and applies dropout row by row: rows are queued (add), their Philox blocks collected into
// one list of up to kCapacity blocks, drawn together (so short rows and edges use the vector path
// too), and each row's mask bytes assembled from its blocks and applied to its elements while
// they are in cache. A long row is split into pieces of whole mask bytes. One per task: it holds
// the lists (about 33 KiB). Writes only the queued rows' outputs and mask bytes.
template <class T>
class RowDropper {
 public:
  RowDropper(uint64_t seed, uint32_t threshold, T scale, const T* x, T* y, uint8_t* mask)
      : seed_(seed), threshold_(threshold), scale_(scale), x_(x), y_(y), mask_(mask) {}
  RowDropper(const RowDropper&) = delete;
  RowDropper& operator=(const RowDropper&) = delete;
  ~RowDropper() = default;

  // A row of `cols` elements at positions [first, first + cols) of stream `stream`: input x + offset,
  // output y + offset, mask bytes from mask + mask_offset.
  void add(uint64_t stream, uint64_t first, int64_t cols, int64_t offset, int64_t mask_offset) {
    const auto shift = static_cast<unsigned>(first & 7u);
    const int64_t extra = shift != 0 ? 1 : 0;  // an unaligned byte straddles two blocks
    const uint64_t block0 = first >> 3;
    const int64_t row_bytes = dropout_mask_row_bytes(cols);
    for (int64_t j = 0; j < row_bytes;) {
      if (blocks_ + 1 + extra > kCapacity) flush();
      const int64_t bytes = std::min(row_bytes - j, kCapacity - blocks_ - extra);
      for (int64_t k = 0; k < bytes + extra; ++k) {
        index_[static_cast<std::size_t>(blocks_ + k)] = block0 + static_cast<uint64_t>(j + k);
        stream_[static_cast<std::size_t>(blocks_ + k)] = stream;
      }
      pieces_[static_cast<std::size_t>(pieces_count_++)] =
          Piece{offset + 8 * j, mask_offset + j, std::min(8 * bytes, cols - 8 * j), blocks_, bytes, shift};
      blocks_ += bytes + extra;
      j += bytes;
    }
  }

  void flush() {
    draw(DrawPath::kFastest, seed_, stream_.data(), index_.data(), blocks_, threshold_, bits_.data());
    for (int64_t p = 0; p < pieces_count_; ++p) {
      const Piece& piece = pieces_[static_cast<std::size_t>(p)];
      const uint8_t* b = bits_.data() + piece.first_block;
      uint8_t* m = mask_ + piece.mask_offset;
      if (piece.shift == 0) {
        std::memcpy(m, b, static_cast<std::size_t>(piece.bytes));
      } else {
        for (int64_t k = 0; k < piece.bytes; ++k) {
          m[k] = static_cast<uint8_t>((b[k] >> piece.shift) | (b[k + 1] << (8 - piece.shift)));
        }
      }
      if (const int64_t tail = piece.elements & 7; tail != 0) m[piece.bytes - 1] &= static_cast<uint8_t>((1u << tail) - 1u);
      apply(m, x_ + piece.offset, y_ + piece.offset, piece.elements, scale_);
    }
    blocks_ = 0;
    pieces_count_ = 0;
  }

 private:
  static constexpr int64_t kCapacity = 512;  // blocks per draw: 4,096 decisions

  struct Piece {
    int64_t offset;       // first element (x, y)
    int64_t mask_offset;  // first mask byte
    int64_t elements;     // elements in the piece (8 * bytes, less at a row's end)
    int64_t first_block;  // into bits_
    int64_t bytes;        // mask bytes
    unsigned shift;       // position of the piece's first element in its block
  };

  uint64_t seed_;
  uint32_t threshold_;
  T scale_;
  const T* x_;
  T* y_;
  uint8_t* mask_;
  std::array<uint64_t, kCapacity> index_{};
  std::array<uint64_t, kCapacity> stream_{};
  std::array<uint8_t, kCapacity> bits_{};
  std::array<Piece, kCapacity> pieces_{};
  int64_t blocks_ = 0;
  int64_t pieces_count_ = 0;
};

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

void dropout_draw_blocks(core::RngKey key, std::span<const uint64_t> blocks, uint32_t threshold, std::span<uint8_t> out,
                         DrawPath path) {
  GNNPIPE_CHECK(out.size() == blocks.size(), "dropout_draw_blocks: {} outputs for {} blocks", out.size(),
                blocks.size());
  GNNPIPE_CHECK(threshold <= kDropoutLevels, "dropout_draw_blocks: threshold {} above {}", threshold, kDropoutLevels);
  const std::vector<uint64_t> streams(blocks.size(), key.stream);
  draw(path, key.seed, streams.data(), blocks.data(), static_cast<int64_t>(blocks.size()), threshold, out.data());
}

bool dropout_uses_avx2() { return has_avx2(); }

template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "dropout: input {} and output {} differ in shape",
                shape_str(x), shape_str(y));
  GNNPIPE_CHECK(mask.size() == dropout_mask_bytes(x.rows, x.cols), "dropout: mask of {} bytes for x {} (needs {})",
                mask.size(), shape_str(x), dropout_mask_bytes(x.rows, x.cols));
  check_row_ids(row_ids, x.rows, "dropout");
  const int64_t cols = x.cols;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  if (p == T{0}) {
    detail::parallel_rows(x.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) set_row_bits(mask.data() + r * row_bytes, cols);
      if (y.data != x.data) std::copy(x.data + begin * cols, x.data + end * cols, y.data + begin * cols);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const uint32_t threshold = dropout_threshold(static_cast<double>(p));
  detail::parallel_rows(x.rows, detail::grain_for(2 * cols), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, threshold, scale, x.data, y.data, mask.data());
    for (int64_t r = begin; r < end; ++r) {
      dropper.add(key.stream, global_id(row_ids, r) * static_cast<uint64_t>(cols), cols, r * cols, r * row_bytes);
    }
    dropper.flush();
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
  const int64_t avg = block.num_dst > 0 ? block.num_edges() / block.num_dst + 1 : 1;
  if (p == T{0}) {
    detail::parallel_rows(block.num_dst, detail::grain_for(avg * heads), [&](int64_t begin, int64_t end) {
      const int64_t first = block.offsets[begin], last = block.offsets[end];
      for (int64_t e = first; e < last; ++e) set_row_bits(mask.data() + e * row_bytes, heads);
      if (y.data != alpha.data) std::copy(alpha.data + first * heads, alpha.data + last * heads, y.data + first * heads);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const uint32_t threshold = dropout_threshold(static_cast<double>(p));
  detail::parallel_rows(block.num_dst, detail::grain_for(4 * avg * heads), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, threshold, scale, alpha.data, y.data, mask.data());
    for (int64_t v = begin; v < end; ++v) {
      const uint64_t stream = key.with(global_id(row_ids, v)).stream;
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        dropper.add(stream, global_id(row_ids, block.indices[e]) * static_cast<uint64_t>(heads), heads, e * heads,
                    e * row_bytes);
      }
    }
    dropper.flush();
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
