#pragma once
// The dropout tests' own statement of the draw and the mask layout (test_dropout.cpp,
// test_edge_dropout.cpp): a reference written from Philox directly, and helpers reading masks.
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/dropout.hpp"

namespace gnnpipe::test::dropout_reference {

using graph::NodeId;
using models::Matrix;

using Ids = std::vector<NodeId>;

// `count` distinct ids from [0, n) in random order.
inline Ids distinct_ids(core::Rng& rng, NodeId n, NodeId count) {
  Ids ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  for (NodeId i = 0; i < count; ++i) {
    const auto j = i + static_cast<NodeId>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(j)]);
  }
  ids.resize(static_cast<std::size_t>(count));
  return ids;
}

// The test's own statement of the draw (ops/dropout_mask.hpp), written from Philox directly: with
// t = round(p * 65536) and k the fewest of 1, 2, 4 bits with t a multiple of 2^(16 - k), else 8,
// position i of the stream reads u = bits [k m, k m + k) (m = i % (128 / k)) of Philox block
// b = i / (128 / k) read as one 128-bit little-endian string. For k < 8 it is kept iff
// u >= t / 2^(16 - k); for k = 8 iff the 16-bit value 256 u + r >= t, r being byte m of block
// b ^ 2^63 (the refinement block, which the library reads only when u alone cannot decide).
inline uint32_t reference_threshold(double p) { return static_cast<uint32_t>(std::lround(p * 65536.0)); }

inline unsigned reference_bits(uint32_t t) {
  unsigned k = 1;
  while (k < 8 && t % (65536u >> k) != 0) k *= 2;
  return k;
}

// Decision m (< 128 / k) of Philox block `block` of the key's stream.
inline bool reference_decision(core::RngKey key, uint64_t block, unsigned m, uint32_t t) {
  const unsigned k = reference_bits(t);
  const core::PhiloxCounter words = key.block(block);
  const unsigned bit = k * m;
  const uint32_t u = (words[bit / 32] >> (bit % 32)) & ((1u << k) - 1u);
  if (k < 8) return u >= (t >> (16 - k));
  const core::PhiloxCounter refinement = key.block(block ^ (uint64_t{1} << 63));
  const uint32_t r = (refinement[m / 4] >> (8 * (m % 4))) & 0xffu;
  return 256 * u + r >= t;
}

inline bool reference_keep_at(core::RngKey key, uint64_t i, uint32_t t) {
  const uint64_t per_block = 128 / reference_bits(t);
  return reference_decision(key, i / per_block, static_cast<unsigned>(i % per_block), t);
}

inline bool reference_keep(core::RngKey key, uint64_t i, double p) { return reference_keep_at(key, i, reference_threshold(p)); }

// Bit (r, c) of a [rows x cols] mask: bit c % 8 of byte c / 8 of row r's ceil(cols / 8) bytes.
inline bool bit_of(const std::vector<uint8_t>& mask, int64_t cols, int64_t r, int64_t c) {
  const int64_t row_bytes = (cols + 7) / 8;
  return ((mask[static_cast<std::size_t>(r * row_bytes + c / 8)] >> (c % 8)) & 1) != 0;
}

inline std::size_t mask_bytes(int64_t rows, int64_t cols) { return static_cast<std::size_t>(rows * ((cols + 7) / 8)); }

// The mask of dropout over a rows x cols matrix of ones with the given row ids.
inline std::vector<uint8_t> feature_mask(core::RngKey key, float p, int64_t rows, int64_t cols, const Ids& ids) {
  Matrix<float> x(rows, cols);
  x.fill(1.0f);
  Matrix<float> y(rows, cols);
  std::vector<uint8_t> mask(mask_bytes(rows, cols), 7);
  models::cpu::dropout_forward<float>(key, p, x.view(), ids, y.view(), mask);
  return mask;
}

inline std::vector<uint8_t> row_of(const std::vector<uint8_t>& mask, int64_t cols, int64_t r) {
  const int64_t row_bytes = (cols + 7) / 8;
  const auto first = mask.begin() + r * row_bytes;
  return {first, first + row_bytes};
}

// True iff every bit of the [rows x cols] mask past column cols - 1 (a row's padding) is 0.
inline bool padding_clear(const std::vector<uint8_t>& mask, int64_t rows, int64_t cols) {
  const int64_t row_bytes = (cols + 7) / 8;
  if (cols % 8 == 0) return true;
  for (int64_t r = 0; r < rows; ++r) {
    if ((mask[static_cast<std::size_t>(r * row_bytes + row_bytes - 1)] >> (cols % 8)) != 0) return false;
  }
  return true;
}


}  // namespace gnnpipe::test::dropout_reference
