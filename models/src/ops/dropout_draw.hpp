#pragma once
// Private to the CPU dropout ops (dropout.cpp, sparse_input.cpp): the keep-bit draw and the
// non-zero scan, on the fastest path this CPU has (AVX2 where present).
#include <cstdint>

namespace gnnpipe::models::cpu::detail {

// out[i] = dropout_block_bits(RngKey{seed, stream}.block(blocks[i]), threshold) for i < n
// (dropout_mask.hpp): eight keep decisions per block, threshold <= 65536.
void draw_feature_blocks(uint64_t seed, uint64_t stream, const uint64_t* blocks, int64_t n, uint32_t threshold,
                         uint8_t* out);

// Writes the columns c < n whose value in `row` has any bit set (anything but +0) to out, in
// ascending order, and returns their count; stops and returns limit + 1 once more than `limit`
// are found (out then holds `limit` of them).
template <class T>
int64_t nonzero_columns(const T* row, int64_t n, int64_t limit, int32_t* out);

}  // namespace gnnpipe::models::cpu::detail
