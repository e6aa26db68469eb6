#pragma once
// The ops GGNN (PyG's GatedGraphConv) and GaAN (the seed's GaANConv) add to the GAT pieces: a GRU
// cell's gates, a max and a mean over each destination's in-edges, per-head scaling, and y += a x.
// Every output element is computed by one task in a fixed order: no atomics, results independent
// of the thread count. T is float or double.
#include <cstdint>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// One torch.nn.GRUCell step from its two pre-activations, C = h_new.cols:
//   gi = m W_ih + b_ih, gh = h W_hh + b_hh (both N x 3C, column blocks r, z, n as torch's rows);
//   r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n),
//   h_new = (1 - z) * n + z * h.
// h is N x Ch with Ch <= C: columns Ch..C-1 of the hidden state are zeros (GGNN pads its input on
// the right). h_new is overwritten.
template <class T>
void gru_cell(ConstView<T> gi, ConstView<T> gh, ConstView<T> h, MatrixView<T> h_new);

// Its backward from the forward's inputs (the gates are recomputed): with dh_new N x C,
//   dgi, dgh (N x 3C, overwritten): the gradients of gi and gh (equal in the r and z blocks);
//   dh (N x Ch, overwritten): the direct part z * dh_new (the part through gh is the caller's gemm).
template <class T>
void gru_cell_backward(ConstView<T> gi, ConstView<T> gh, ConstView<T> h, ConstView<T> dh_new, MatrixView<T> dgi,
                       MatrixView<T> dgh, MatrixView<T> dh);

// Elementwise max over the in-edges of each destination (the block's weights are ignored):
// y[v, c] = max over edges e = (u -> v) of x[u, c], the first such edge (edge order) on ties
// recorded in argmax[v, c] (a forward edge id; -1 and y = 0 for a destination without edges, as
// torch_scatter's scatter_max). x: num_src x F; y, argmax: num_dst x F (overwritten).
template <class T>
void segment_max(const graph::Block& block, ConstView<T> x, MatrixView<T> y, MatrixView<int64_t> argmax);
// dx[u, c] = sum over edges e = (u -> v) (transpose order) with argmax[v, c] == e of dy[v, c]
// (overwritten; 0 where u is no maximum).
template <class T>
void segment_max_backward(const graph::Block& block, MatrixView<const int64_t> argmax, ConstView<T> dy,
                          MatrixView<T> dx);

// Mean over the in-edges of each destination (the block's weights are ignored):
// y[v, :] = (sum over e = (u -> v), in edge order, of x[u, :]) / in-degree(v), 0 without edges.
template <class T>
void spmm_mean(const graph::Block& block, ConstView<T> x, MatrixView<T> y);
// dx[u, :] = sum over e = (u -> v) (transpose order) of dy[v, :] / in-degree(v) (overwritten).
template <class T>
void spmm_mean_backward(const graph::Block& block, ConstView<T> dy, MatrixView<T> dx);

// Per-head scaling, H = gate.cols, C = x.cols / H: y[n, h*C+c] = gate[n, h] * x[n, h*C+c].
template <class T>
void head_scale(ConstView<T> gate, ConstView<T> x, MatrixView<T> y);
// Its backward (both overwritten): dx[n, h*C+c] = gate[n, h] * dy[n, h*C+c];
// dgate[n, h] = sum over c (increasing) of dy[n, h*C+c] * x[n, h*C+c].
template <class T>
void head_scale_backward(ConstView<T> gate, ConstView<T> x, ConstView<T> dy, MatrixView<T> dx, MatrixView<T> dgate);

// y += a x over equally shaped matrices.
template <class T>
void axpy(std::type_identity_t<T> a, ConstView<T> x, MatrixView<T> y);

}  // namespace gnnpipe::models::cpu
