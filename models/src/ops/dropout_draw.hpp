#pragma once
// Private to the CPU dropout ops (dropout.cpp, sparse_input.cpp): the keep-bit draw and the
// non-zero scan, on the fastest path this CPU has (AVX2 where present).
#include <cstdint>

#include "gnnpipe/models/ops/dropout_mask.hpp"

namespace gnnpipe::models::cpu::detail {

// The mask bytes of blocks blocks[0 .. n) of stream RngKey{seed, stream}: block i's
// draw.bytes_per_block() bytes from out + (i << draw.byte_shift), byte j being dropout_byte_bits
// (dropout_mask.hpp) of stream byte (blocks[i] << draw.byte_shift) + j.
void draw_feature_blocks(uint64_t seed, uint64_t stream, const uint64_t* blocks, int64_t n, const DropoutDraw& draw,
                         uint8_t* out);

// Writes the columns c < n whose value in `row` has any bit set (anything but +0) to out, in
// ascending order, and returns their count; stops and returns limit + 1 once more than `limit`
// are found (out then holds `limit` of them).
template <class T>
int64_t nonzero_columns(const T* row, int64_t n, int64_t limit, int32_t* out);

}  // namespace gnnpipe::models::cpu::detail
