#pragma once
// Sparse-dense products over a Block (docs/DESIGN.md §2): the forward aggregation runs over the CSR of
// destinations, the backward over the transpose, so every output row is written by one task in a
// fixed order: no atomics, and results are bitwise identical for any thread count.
// All outputs are overwritten (not accumulated into). T is float or double; block weights (float)
// are converted to T.
#include <span>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// y[v] = sum over edges e = (u -> v) of w_e * x[u] (w_e = 1 when the block is unweighted).
// x: num_src x F, y: num_dst x F. Mean or GCN aggregation is a weighted block (graph side).
template <class T>
void spmm(const graph::Block& block, ConstView<T> x, MatrixView<T> y);

// spmm with a GCN layer's epilogue in the same pass: y[v] = sum (as spmm) + bias, then
// max(y[v], 0) elementwise (as relu: v > 0 ? v : 0) when `relu`. Bitwise spmm, bias_add and relu
// in turn: the additions and the comparison are the same, only y is walked once. bias: F values.
template <class T>
void spmm_bias(const graph::Block& block, ConstView<T> x, std::span<const T> bias, bool relu, MatrixView<T> y);

// spmm_bias over diag(factors) x, x's rows scaled inside the product (MH-Aug's views of one shared
// x W; models/layers/layer_input.hpp): y[v] = sum over edges e = (u -> v) of w_e * (x[u] *
// factors[u]) + bias, then ReLU. Bitwise scale_rows(x, factors, s) followed by spmm_bias(s), without
// forming s. factors: num_src values (empty: spmm_bias).
template <class T>
void spmm_bias_scaled(const graph::Block& block, ConstView<T> x, std::span<const float> factors,
                      std::span<const T> bias, bool relu, MatrixView<T> y);

// g[u] = factors[u] * dx[u] for spmm_backward's dx (accumulate: g[u] += factors[u] * dx[u]),
// without forming dx: bitwise spmm_backward into dx followed by scale_rows(dx, factors, g)
// (accumulate: add_scaled_rows(dx, factors, g)). Empty factors: every factor 1 (bitwise copy, or
// axpy(1, dx, g)). dy: num_dst x F, g: num_src x F.
template <class T>
void spmm_backward_scaled(const graph::Block& block, ConstView<T> dy, std::span<const float> factors, bool accumulate,
                          MatrixView<T> g);

// The gradient of spmm with respect to x: dx[u] = sum over edges e = (u -> v) of w_e * dy[v],
// walked through the transpose (t_offsets, t_indices, t_edges). dy: num_dst x F, dx: num_src x F.
template <class T>
void spmm_backward(const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);

// Per-head edge-weighted aggregation (GAT): with H = alpha.cols and C = x.cols / H,
// y[v, h*C + c] = sum over edges e = (u -> v) of alpha[e, h] * x[u, h*C + c].
// alpha: E x H, x: num_src x (H*C), y: num_dst x (H*C). The block's own weights are ignored.
template <class T>
void spmm_edge_weighted(const graph::Block& block, ConstView<T> alpha, ConstView<T> x, MatrixView<T> y);

// Its gradient with respect to x (through the transpose):
// dx[u, h*C + c] = sum over edges e = (u -> v) of alpha[e, h] * dy[v, h*C + c].
template <class T>
void spmm_edge_weighted_backward_x(const graph::Block& block, ConstView<T> alpha, ConstView<T> dy,
                                   MatrixView<T> dx);

// Its gradient with respect to alpha: dalpha[e, h] = <dy[v, h*C .. h*C+C), x[u, h*C .. h*C+C)> for
// e = (u -> v), summed over c in increasing order.
template <class T>
void spmm_edge_weighted_backward_alpha(const graph::Block& block, ConstView<T> x, ConstView<T> dy,
                                       MatrixView<T> dalpha);

}  // namespace gnnpipe::models::cpu
