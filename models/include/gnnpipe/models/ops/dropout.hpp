#pragma once
// Inverted dropout with counter-based randomness keyed by GLOBAL node ids, so that a node's mask
// does not depend on where it sits in a batch: the same node in two batches, or in the
// micro-batches a split batch becomes (the memory governor, docs/DESIGN.md §4), draws the same bits, and
// k micro-batches accumulate the unsplit step's gradient. Masks depend only on the key (seed,
// epoch, batch, layer) and the ids, never on threads, and the CUDA twins draw the same bits.
// Kept values are scaled by 1 / (1 - p).
//
// Bits and masks (ops/dropout_mask.hpp): a position of the key's stream is kept iff its uniform
// 16-bit value is >= round(p * 65536) (p resolved to 1/65536), the value read lazily (a Philox
// block gives 16 to 128 decisions: one bit each at p = 0.5), and a mask holds one bit per element,
// each row padded to whole bytes: dropout_mask_bytes(rows, cols) bytes.
//
// Row ids: `row_ids[r]` is the global id of row r (non-negative), given in the memory of the op's
// context (host here). An empty `row_ids` means row r is node r (the identity numbering: full-graph
// training, tests); with it the position of (r, c) is the flat index r * cols + c.
#include <cstdint>
#include <span>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/dropout_mask.hpp"

namespace gnnpipe::models::cpu {

// Feature dropout: element (r, c) of x sits at position uint64_t(row_ids[r]) * cols + c of the
// key's stream and is kept iff that position's draw keeps it (dropout_mask.hpp: its 16-bit value
// >= dropout_threshold(p)). y = kept ? x * (1 / (1 - p)) : 0, and the element's mask bit is 1 iff kept
// (layout in dropout_mask.hpp). p must be in [0, 1); p == 0 is the identity (y = x, every mask bit
// 1, ids unused). y may be the same matrix as x; mask.size() must be
// dropout_mask_bytes(x.rows, x.cols), or 0 when no backward will read the mask (a model's first
// layer: its input gradient is never formed). Without a mask, the +0 inputs (every bit zero) of
// mostly-zero stretches of a row, as in sparse features, are not drawn: their outputs are zero
// whether kept or not, so y is bitwise the same. row_ids has x.rows entries or is empty (see
// above). One pass over x:
// rows are drawn a batch of blocks at a time (16 to 128 elements per Philox block, AVX2 where the
// CPU has it) and the previous batch applied in between, so memory traffic overlaps the arithmetic.
template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask);

// GAT attention dropout over the edge matrix alpha [E x H] of `block` (edge e is the forward edge
// id, from local source u = block.indices[e] into the destination v whose CSR row holds e):
// (e, h) takes position uint64_t(row_ids[u]) * H + h of the stream key.with(row_ids[v]) and is kept
// iff that position's draw keeps it (as above), i.e. the mask is keyed by (global
// destination, global source, head) alone, independent of edge order and local numbering. An edge
// sampled twice (sampling with replacement repeats (u -> v)) therefore draws the same bits for both
// copies. row_ids: the global ids of the block's sources (num_src entries; destinations are the
// first num_dst), or empty (local ids are global). y = kept ? alpha / (1 - p) : 0, y may be alpha;
// the mask is that of an [E x H] matrix: dropout_mask_bytes(E, H) bytes, edge e's heads in its own
// ceil(H / 8) bytes. p == 0 is the identity. The backward is dropout_backward with this mask.
template <class T>
void edge_dropout_forward(core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y,
                          std::span<uint8_t> mask);

// dx = bit ? dy * (1 / (1 - p)) : 0, with the mask (dropout_mask_bytes(dy.rows, dy.cols) bytes)
// and p of the forward (either op above). dx may be the same matrix as dy.
template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx);

// The draw underneath, exposed for tests and benchmarks: the keep bits of whole Philox blocks, block
// blocks[i]'s d.bytes_per_block() mask bytes (d = DropoutDraw::of(threshold), threshold <= 65536;
// byte j is dropout_byte_bits(key, (blocks[i] << d.byte_shift) + j, d), dropout_mask.hpp) from
// out[i << d.byte_shift]; out.size() must be blocks.size() << d.byte_shift. The ops use
// kFastest: AVX2 (eight blocks per vector, eight vectors in flight) where the CPU has it, else
// kPortable (sixteen blocks in structure-of-arrays form, left to the compiler's vectoriser);
// kScalar is one block at a time. All three give the same bytes.
enum class DrawPath { kFastest, kPortable, kScalar };
void dropout_draw_blocks(core::RngKey key, std::span<const uint64_t> blocks, uint32_t threshold, std::span<uint8_t> out,
                         DrawPath path = DrawPath::kFastest);
// Whether kFastest is the AVX2 path on this CPU.
bool dropout_uses_avx2();

}  // namespace gnnpipe::models::cpu
