#pragma once
// Inverted dropout with counter-based randomness keyed by GLOBAL node ids, so that a node's mask
// does not depend on where it sits in a batch: the same node in two batches, or in the
// micro-batches a split batch becomes (the memory governor, DESIGN §4), draws the same bits, and
// k micro-batches accumulate the unsplit step's gradient. Masks depend only on the key (seed,
// epoch, batch, layer) and the ids, never on threads, and the CUDA twins draw the same bits.
// Kept values are scaled by 1 / (1 - p).
//
// Row ids: `row_ids[r]` is the global id of row r (non-negative), given in the memory of the op's
// context (host here). An empty `row_ids` means row r is node r (the identity numbering: full-graph
// training, tests); with it the position of (r, c) is the flat index r * cols + c.
#include <cstdint>
#include <span>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// Feature dropout: element (r, c) of x is kept iff key.uniform_at(uint64_t(row_ids[r]) * cols + c)
// >= p. y = x * mask / (1 - p), mask[r * cols + c] = 1 if kept else 0. p must be in [0, 1); p == 0
// is the identity (y = x, every mask byte 1, ids unused). y may be the same matrix as x;
// mask.size() must be x.size(); row_ids has x.rows entries or is empty (see above).
template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask);

// GAT attention dropout over the edge matrix alpha [E x H] of `block` (edge e is the forward edge
// id, from local source u = block.indices[e] into the destination v whose CSR row holds e):
// (e, h) is kept iff key.with(row_ids[v]).uniform_at(uint64_t(row_ids[u]) * H + h) >= p, i.e. the
// mask is keyed by (global destination, global source, head) alone, independent of edge order and
// local numbering. An edge sampled twice (sampling with replacement repeats (u -> v)) therefore
// draws one mask bit for both copies. row_ids: the global ids of the block's sources (num_src
// entries; destinations are the first num_dst), or empty (local ids are global). y = alpha * mask /
// (1 - p), y may be alpha; mask has E * H bytes. p == 0 is the identity. The backward is
// dropout_backward with this mask.
template <class T>
void edge_dropout_forward(core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y,
                          std::span<uint8_t> mask);

// dx = dy * mask / (1 - p), with the mask and p of the forward (either op above). dx may be the
// same matrix as dy.
template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx);

}  // namespace gnnpipe::models::cpu
