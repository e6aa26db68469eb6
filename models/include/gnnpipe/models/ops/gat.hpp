#pragma once
// The edge-score pieces of GAT attention (Velickovic et al.; PyG's GATConv conventions, see
// ../shared/reference/README.md): scores = a_src[u] + a_dst[v] per head (sddmm_add), then
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

}  // namespace gnnpipe::models::cpu
