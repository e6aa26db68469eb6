#pragma once
// Private to the CPU dropout ops (dropout_draw.cpp, dropout_forward.cpp, sparse_input.cpp): the
// keep-bit draw, on the fastest path this CPU has (AVX2 where present).
#include <cstdint>

#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/dropout_mask.hpp"

namespace gnnpipe::models::cpu::detail {

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

// The mask bytes of n blocks: for each i < n, the draw.bytes_per_block() mask bytes of block
// blocks[i] of stream streams.at(i) into out[i << d.byte_shift ..] (every path's contract, in
// dropout_draw.cpp), calling interleave.step between groups of blocks on the vector path.
void draw(DrawPath path, uint64_t seed, Streams streams, const uint64_t* blocks, int64_t n, const DropoutDraw& d,
          uint8_t* out, const Interleave& interleave = {});

// The mask bytes of blocks blocks[0 .. n) of stream RngKey{seed, stream}: block i's
// draw.bytes_per_block() bytes from out + (i << draw.byte_shift), byte j being dropout_byte_bits
// (dropout_mask.hpp) of stream byte (blocks[i] << draw.byte_shift) + j.
void draw_feature_blocks(uint64_t seed, uint64_t stream, const uint64_t* blocks, int64_t n, const DropoutDraw& draw,
                         uint8_t* out);

}  // namespace gnnpipe::models::cpu::detail
