#pragma once
// Dropout's bit mask and how its bits are drawn: the one definition that the CPU ops
// (models/cpu/dropout_*.cpp), the CUDA kernels (models/cuda/) and the model's memory arithmetic
// (GnnModel/GatLayer::training_arrays) share, so both backends draw the same bits into the same
// layout and a mask is sized by the same function that the ops check it against. Free of CUDA,
// oneTBB and spdlog headers (the .cu files include it).
//
// Draw. A position is kept iff a uniform 16-bit value U is >= threshold = dropout_threshold(p)
// = p * 65536 rounded to nearest: p is resolved to 1/65536, the keep probability being exactly
// (65536 - threshold) / 65536 (p < 2^-17 keeps everything, p >= 1 - 2^-17 drops everything). U is
// read from the key's stream (a core::RngKey) lazily, in as few bits as the comparison needs. The
// stream is read in Philox blocks (key.block(b), words w0..w3 read as one 128-bit little-endian
// string: bit i of the block is bit i % 32 of w[i / 32]) of 128 / k positions each, k =
// DropoutDraw::of(threshold).bits, the fewest of 1, 2, 4, 8 bits with threshold a multiple of
// 2^(16 - k) where there is one, else 8: position (128 / k) b + m reads u = bits [k m, k m + k)
// of block b, the leading k bits of its U, and is kept iff u > level = threshold >> (16 - k), or
// u == level and the rest of U reaches the rest of the threshold. For a dyadic p (threshold a
// multiple of 256) the rest is 0 >= 0 and u >= level decides alone: p = 0.5 reads one bit a
// decision (128 per block), 0.25 and 0.75 two. Otherwise (k = 8, sixteen positions a block, p = 0.1
// or 0.6 say) a tie (u == level, one decision in 256) reads U's low byte r from byte m of the
// refinement block b ^ 2^63 of the same stream, and is kept iff r >= low = threshold & 255. Block
// indices stay below 2^60 (positions are below 2^64), so refinement blocks never serve positions.
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

// The number of levels p is resolved to.
inline constexpr uint32_t kDropoutLevels = 65536;

// Bytes of one mask row of `cols` elements, and of a whole [rows x cols] mask (the size that
// dropout_forward, edge_dropout_forward and dropout_backward expect, and that the model allocates).
GNNPIPE_HD int64_t dropout_mask_row_bytes(int64_t cols) { return (cols + 7) / 8; }
GNNPIPE_HD std::size_t dropout_mask_bytes(int64_t rows, int64_t cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(dropout_mask_row_bytes(cols));
}

// round(p * 65536) for p in [0, 1) (callers check the range): in [0, 65536].
GNNPIPE_HD uint32_t dropout_threshold(double p) { return static_cast<uint32_t>(p * 65536.0 + 0.5); }

// The bit that turns block b's index into its refinement block's (see "Draw" above).
inline constexpr uint64_t kDropoutRefinementBit = uint64_t{1} << 63;

// How a threshold is drawn (see "Draw" above). Mask bytes map to blocks simply: byte B of the
// stream (positions 8B .. 8B + 7) is byte B % bytes_per_block() of block B >> byte_shift's keep
// bits, made from the block's bytes [k j, k j + k), j = B % bytes_per_block().
struct DropoutDraw {
  uint32_t threshold;   // in [0, 65536]
  unsigned bits;        // k: bits per decision, 1, 2, 4 or 8
  unsigned byte_shift;  // log2 of the mask bytes a block gives: 4, 3, 2 or 1 (16 / k bytes)
  uint32_t level;       // threshold >> (16 - k): kept iff u > level, or u == level and the rest decides
  uint32_t low;         // threshold & 255 when k = 8 (a tie is kept iff its refinement byte >= low), else 0

  GNNPIPE_HD static DropoutDraw of(uint32_t threshold) {
    unsigned bits = 1, shift = 4;
    while (bits < 8 && (threshold & ((kDropoutLevels >> bits) - 1u)) != 0) {
      bits *= 2;
      --shift;
    }
    return DropoutDraw{threshold, bits, shift, threshold >> (16 - bits), bits == 8 ? threshold & 255u : 0u};
  }
  // The draw of dropout probability p in [0, 1) (callers check the range).
  GNNPIPE_HD static DropoutDraw for_p(double p) { return of(dropout_threshold(p)); }
  // Every position kept (threshold 0) or none (65536): nothing needs drawing.
  GNNPIPE_HD bool constant() const { return threshold == 0 || threshold >= kDropoutLevels; }
  // Whether ties read a refinement block (threshold not a multiple of 256).
  GNNPIPE_HD bool refines() const { return low != 0; }
  GNNPIPE_HD unsigned bytes_per_block() const { return 1u << byte_shift; }
};

// Value m (< 128 / bits) of a block: bits [bits m, bits m + bits) of its 128-bit string (a value
// never straddles two words).
GNNPIPE_HD uint32_t dropout_block_value(const core::PhiloxCounter& block, unsigned bits, unsigned m) {
  const unsigned bit = bits * m;
  return (block[bit >> 5] >> (bit & 31u)) & ((1u << bits) - 1u);
}

// The keep bits of stream byte `byte` (positions 8 byte .. 8 byte + 7): bit q set iff position
// 8 byte + q is kept. The reference every faster path is tested against (and the CUDA kernels'
// draw): one Philox block, two when a tie needs the refinement block.
GNNPIPE_HD uint32_t dropout_byte_bits(core::RngKey key, uint64_t byte, const DropoutDraw& draw) {
  const uint64_t b = byte >> draw.byte_shift;
  const unsigned first = 8 * static_cast<unsigned>(byte & (draw.bytes_per_block() - 1u));  // decision of bit 0
  const core::PhiloxCounter block = key.block(b);
  uint32_t keep = 0, ties = 0;
  for (unsigned q = 0; q < 8; ++q) {
    const uint32_t u = dropout_block_value(block, draw.bits, first + q);
    keep |= static_cast<uint32_t>(u > draw.level) << q;
    ties |= static_cast<uint32_t>(u == draw.level) << q;
  }
  if (ties == 0 || !draw.refines()) return keep | ties;
  const core::PhiloxCounter refinement = key.block(b ^ kDropoutRefinementBit);
  for (unsigned q = 0; q < 8; ++q) {
    if (((ties >> q) & 1u) != 0) keep |= static_cast<uint32_t>(dropout_block_value(refinement, 8, first + q) >= draw.low) << q;
  }
  return keep;
}

// The keep bits of positions [first, first + n) of the stream, n in [1, 8]: bit k set iff position
// first + k is kept (one or two Philox blocks). The reference draw: a mask byte is
// dropout_bits_at(key, row_first + 8 * k, min(8, cols - 8 * k), threshold).
GNNPIPE_HD uint32_t dropout_bits_at(core::RngKey key, uint64_t first, unsigned n, uint32_t threshold) {
  const DropoutDraw draw = DropoutDraw::of(threshold);
  const unsigned shift = static_cast<unsigned>(first & 7u);
  uint32_t bits = dropout_byte_bits(key, first >> 3, draw) >> shift;
  if (shift + n > 8) bits |= dropout_byte_bits(key, (first >> 3) + 1, draw) << (8 - shift);
  return bits & ((1u << n) - 1u);
}

}  // namespace gnnpipe::models
