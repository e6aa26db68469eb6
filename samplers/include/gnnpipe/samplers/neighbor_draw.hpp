#pragma once
// One node's neighbor draws in one hop (issue #40): which of its in-neighbors a node gets, as
// offsets into its CSR row. The draws are positional: node v's come from its own range of the
// hop's Philox stream (blocks v * 2^32 onwards: DrawCursor::at), so they do not depend on which
// nodes were expanded before it, on the thread that expands it, or on the device. The CPU sampler
// (neighbor_sampler.cpp), its data-parallel twin (neighbor_twin.hpp) and the CUDA kernels all
// call these functions, so the three draw the same bits.
#include <cstddef>
#include <cstdint>

#include "gnnpipe/core/host_device.hpp"
#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::samplers {

// A sequential cursor over one Philox stream that a kernel can hold (core::Rng is host-only; the
// values and below() are the same as core::Rng's over the same key).
struct DrawCursor {
  core::RngKey key;
  uint64_t block = 0;
  core::PhiloxCounter buffer{};
  unsigned lane = 4;

  GNNPIPE_HD explicit DrawCursor(core::RngKey k, uint64_t first_block = 0) : key(k), block(first_block) {}
  // The cursor of item `i` of a positional draw: blocks [i * 2^32, (i + 1) * 2^32) of the stream
  // are item i's (2^34 values, more than any item reads), so items need no key of their own: a
  // counter-based stream is addressed, not derived (no hashing per item).
  GNNPIPE_HD static DrawCursor at(core::RngKey key, uint64_t i) { return DrawCursor(key, i << 32); }

  GNNPIPE_HD uint32_t next_u32() {
    if (lane == 4) {
      buffer = key.block(block++);
      lane = 0;
    }
    return buffer[lane++];
  }
  // Unbiased integer in [0, n) for 0 < n < 2^32 (Lemire's multiply-and-reject).
  GNNPIPE_HD uint32_t below(uint32_t n) {
    uint64_t m = static_cast<uint64_t>(next_u32()) * n;
    if (static_cast<uint32_t>(m) < n) {
      const uint32_t threshold = static_cast<uint32_t>(0u - n) % n;
      while (static_cast<uint32_t>(m) < threshold) m = static_cast<uint64_t>(next_u32()) * n;
    }
    return static_cast<uint32_t>(m >> 32);
  }
};

// The largest in-degree the draws support (below() takes 32-bit bounds); the samplers refuse a
// graph with a larger one.
inline constexpr int64_t kMaxDrawDegree = 0xFFFFFFFFll;

// How many picks a node with `degree` in-neighbors gets: all of them when fanout is -1 or (without
// replacement) at least the degree, else fanout; none without in-neighbors.
GNNPIPE_HD int64_t neighbor_pick_count(int64_t degree, int fanout, bool replace) {
  if (degree == 0) return 0;
  if (fanout < 0 || (!replace && degree <= fanout)) return degree;
  return fanout;
}

// The stream of hop `hop` of batch `index` of `epoch` ("samp", a batch's attempt > 0 appended: a
// resampled batch draws anew while the plan's batch keeps its stream). Host code: the kernels
// receive the key.
inline core::RngKey neighbor_hop_key(uint64_t seed, int64_t epoch, int64_t index, std::size_t hop, int attempt) {
  constexpr uint64_t kSampleStream = 0x73616d70;  // "samp"
  core::RngKey key = core::rng_key(seed, {kSampleStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index), hop});
  return attempt > 0 ? key.with(static_cast<uint64_t>(attempt)) : key;
}

// Writes node v's picks, neighbor_pick_count(degree, fanout, replace) of them, as offsets in
// [0, degree) into out[0..count): every offset in order when it takes the whole row; else
// independent uniform draws with replacement, or a uniform fanout-subset by Floyd's algorithm
// (each pick checked against the row's earlier ones: O(fanout^2), fanouts are small).
GNNPIPE_HD void neighbor_picks(core::RngKey hop, int64_t v, int64_t degree, int fanout, bool replace, int64_t* out) {
  const int64_t count = neighbor_pick_count(degree, fanout, replace);
  if (count == 0) return;
  if (fanout < 0 || (!replace && degree <= fanout)) {
    for (int64_t k = 0; k < degree; ++k) out[k] = k;
    return;
  }
  DrawCursor draws = DrawCursor::at(hop, static_cast<uint64_t>(v));
  const auto n = static_cast<uint32_t>(degree);
  if (replace) {
    for (int64_t k = 0; k < count; ++k) out[k] = draws.below(n);
    return;
  }
  int64_t k = 0;
  for (int64_t j = degree - fanout; j < degree; ++j, ++k) {
    const int64_t t = draws.below(static_cast<uint32_t>(j + 1));
    bool seen = false;
    for (int64_t i = 0; i < k; ++i) seen = seen || out[i] == t;
    out[k] = seen ? j : t;
  }
}

}  // namespace gnnpipe::samplers
