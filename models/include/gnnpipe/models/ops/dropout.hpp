#pragma once
// Inverted dropout with counter-based randomness: element i (row-major index r * cols + c) is kept
// iff key.uniform_at(i) >= p, so the mask depends only on the key (seed, epoch, batch, layer), never
// on threads, and a CUDA twin draws the same bits. Kept values are scaled by 1 / (1 - p).
#include <cstdint>
#include <span>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// y = x * mask / (1 - p), mask[i] = 1 if kept else 0. p must be in [0, 1); p == 0 is the identity
// (y = x, every mask byte 1). y may be the same matrix as x; mask.size() must be x.size().
template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x, MatrixView<T> y,
                     std::span<uint8_t> mask);

// dx = dy * mask / (1 - p), with the mask and p of the forward. dx may be the same matrix as dy.
template <class T>
void dropout_backward(std::span<const uint8_t> mask, std::type_identity_t<T> p, ConstView<T> dy, MatrixView<T> dx);

}  // namespace gnnpipe::models::cpu
