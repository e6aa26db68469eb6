#pragma once
// The edge-score pieces of GAT attention (Velickovic et al.; PyG's GATConv conventions, checked against
// PyG's outputs in tests/unit/models): scores = a_src[u] + a_dst[v] per head (sddmm_add), then
// LeakyReLU (elementwise.hpp, on the E x H score matrix), then a softmax over the incoming edges of
// each destination (edge_softmax); the aggregation itself is spmm_edge_weighted (spmm.hpp).
// Edge e is the forward edge id (position in block.indices). Parallel over destination (or source)
// rows with a fixed order per output element: deterministic, no atomics. T is float or double.
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::models::cpu {

// scores[e, h] = a_src[u, h] + a_dst[v, h] for every edge e = (u -> v).
// a_src: num_src x H, a_dst: num_dst x H, scores: E x H (overwritten).
template <class T>
void sddmm_add(const graph::Block& block, ConstView<T> a_src, ConstView<T> a_dst, MatrixView<T> scores);

// Its gradients (overwritten): da_src[u, h] = sum over edges e = (u -> v) of dscores[e, h] (through
// the transpose), da_dst[v, h] = sum over edges e into v of dscores[e, h].
template <class T>
void sddmm_add_backward(const graph::Block& block, ConstView<T> dscores, MatrixView<T> da_src, MatrixView<T> da_dst);

// In place, per destination v and head h: scores[e, h] <- softmax over the edges e into v, computed
// as exp(s - max) / sum exp(s - max). Destinations without edges have nothing to normalise.
template <class T>
void edge_softmax(const graph::Block& block, MatrixView<T> scores_to_alpha);

// Gradient of edge_softmax given its output alpha: for e into v,
// dscores[e, h] = alpha[e, h] * (dalpha[e, h] - sum over e' into v of alpha[e', h] * dalpha[e', h]).
// dscores may be the same matrix as dalpha (in place); it must not overlap alpha.
template <class T>
void edge_softmax_backward(const graph::Block& block, ConstView<T> alpha, ConstView<T> dalpha, MatrixView<T> dscores);

// Per-head attention logits: a[n, h] = sum over c (increasing) of m[n, h*C+c] * att[h, c] for the
// first a.rows rows of m (m: >= a.rows x H*C, att: H x C, a overwritten).
template <class T>
void head_dot(ConstView<T> m, ConstView<T> att, MatrixView<T> a);

// Its backward, accumulating over the first da.rows rows: dm[n, h*C+c] += da[n, h] * att[h, c];
// datt[h, c] += sum over n (increasing) of da[n, h] * m[n, h*C+c].
template <class T>
void head_dot_backward(ConstView<T> m, ConstView<T> att, ConstView<T> da, MatrixView<T> dm, MatrixView<T> datt);

// Mean over heads: y[v, c] = (sum over h (increasing) of x[v, h*C+c]) / H, x: rows x H*C, y: rows x C.
template <class T>
void head_mean(ConstView<T> x, MatrixView<T> y);
// dx[v, h*C+c] = dy[v, c] / H (overwritten).
template <class T>
void head_mean_backward(ConstView<T> dy, MatrixView<T> dx);

}  // namespace gnnpipe::models::cpu
