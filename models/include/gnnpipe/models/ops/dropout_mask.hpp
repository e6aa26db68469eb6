#pragma once
// Dropout's bit mask and how its bits are drawn: the one definition that the CPU ops
// (models/src/ops/dropout.cpp), the CUDA kernels (models/cuda/) and the model's memory arithmetic
// (GnnModel/GatLayer::training_arrays) share, so both backends draw the same bits into the same
// layout and a mask is sized by the same function that the ops check it against. Free of CUDA,
// oneTBB and spdlog headers (the .cu files include it).
//
// Draw. A dropout stream (a core::RngKey) is read as 16-bit values: Philox block b (key.block(b),
// words w0..w3) holds positions 8b .. 8b + 7, position 8b + j being
//   u_j = (w[j / 2] >> (16 * (j % 2))) & 0xffff
// (the block's 16 bytes read as eight little-endian uint16). Position i is kept iff
// u_i >= threshold, threshold = dropout_threshold(p) = p * 65536 rounded to nearest: p is resolved
// to 1/65536, the keep probability being exactly (65536 - threshold) / 65536 (p < 2^-17 keeps
// everything, p >= 1 - 2^-17 drops everything). One Philox block thus gives eight decisions.
//
// Layout. The mask of a [rows x cols] matrix stores each row in whole bytes: row r occupies the
// dropout_mask_row_bytes(cols) = ceil(cols / 8) bytes from r * dropout_mask_row_bytes(cols);
// element (r, c) is bit c % 8 (least significant first) of byte c / 8 of its row, 1 = kept. The
// unused high bits of a row's last byte are 0. Rows never share a byte, so rows, and 8-column
// groups within a row, are written independently (by CPU tasks or CUDA threads).
#include <cstddef>
#include <cstdint>

#include "gnnpipe/core/host_device.hpp"
#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::models {

// The number of levels a 16-bit draw resolves p to.
inline constexpr uint32_t kDropoutLevels = 65536;

// Bytes of one mask row of `cols` elements, and of a whole [rows x cols] mask (the size that
// dropout_forward, edge_dropout_forward and dropout_backward expect, and that the model allocates).
GNNPIPE_HD int64_t dropout_mask_row_bytes(int64_t cols) { return (cols + 7) / 8; }
GNNPIPE_HD std::size_t dropout_mask_bytes(int64_t rows, int64_t cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(dropout_mask_row_bytes(cols));
}

// round(p * 65536) for p in [0, 1) (callers check the range): in [0, 65536].
GNNPIPE_HD uint32_t dropout_threshold(double p) { return static_cast<uint32_t>(p * 65536.0 + 0.5); }

// The keep bits of one Philox block: bit j set iff position 8b + j is kept (see "Draw" above).
GNNPIPE_HD uint32_t dropout_block_bits(const core::PhiloxCounter& block, uint32_t threshold) {
  uint32_t bits = 0;
  for (unsigned j = 0; j < 8; ++j) {
    const uint32_t u = (block[j >> 1] >> (16 * (j & 1))) & 0xffffu;
    bits |= static_cast<uint32_t>(u >= threshold) << j;
  }
  return bits;
}

// The keep bits of positions [first, first + n) of the stream, n in [1, 8]: bit k set iff position
// first + k is kept (one or two Philox blocks). The reference draw: a mask byte is
// dropout_bits_at(key, row_first + 8 * k, min(8, cols - 8 * k), threshold).
GNNPIPE_HD uint32_t dropout_bits_at(core::RngKey key, uint64_t first, unsigned n, uint32_t threshold) {
  const unsigned shift = static_cast<unsigned>(first & 7u);
  uint32_t bits = dropout_block_bits(key.block(first >> 3), threshold) >> shift;
  if (shift + n > 8) bits |= dropout_block_bits(key.block((first >> 3) + 1), threshold) << (8 - shift);
  return bits & ((1u << n) - 1u);
}

}  // namespace gnnpipe::models
