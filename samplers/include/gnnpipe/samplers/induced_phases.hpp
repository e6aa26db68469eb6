#pragma once
// The subgraph induced by a node set, as data-parallel phases (issue #40): GraphSAINT's and
// Cluster-GCN's batches on the GPU and in their CPU twins. The node set is ascending (local id i
// is the i-th smallest global id); row i lists, in the full row's order, every chosen in-neighbor,
// with one self-loop (edge id -1) where the norm adds them, placed before the first in-neighbor
// >= the node (so a sorted row stays sorted), the graph's own self-loops then dropped: the rows
// the CPU samplers build (induced_subgraph.cpp).
//   1 row length (node i)   lengths[i]
//   -  scan                  lengths -> row_start
//   2 write row  (node i)   row_indices (local ids), edge_ids (full-graph CSR positions)
// GraphSAINT's edge weights and loss weights are element functions here too, so the CPU sampler
// and its twins compute them with the same expressions, bit for bit.
#include <cmath>
#include <cstdint>

#include "gnnpipe/core/host_device.hpp"

namespace gnnpipe::samplers::induced {

struct InducedView {
  const int64_t* graph_offsets;
  const int32_t* graph_indices;
  const int32_t* nodes;    // the node set, ascending global ids
  const int32_t* local_of; // global -> local id, -1 outside the set
  bool self_loops;
  int64_t* lengths;        // [set size]
  const int64_t* row_start;  // [set size + 1]
  int32_t* row_indices;
  int64_t* edge_ids;       // may be null (not needed)
};

// Calls emit(local source, full-graph edge position or -1) for row i's entries in order.
template <class Emit>
GNNPIPE_HD void for_each_entry(const InducedView& g, int64_t i, Emit&& emit) {
  const int32_t v = g.nodes[i];
  bool placed = !g.self_loops;
  for (int64_t e = g.graph_offsets[v]; e < g.graph_offsets[v + 1]; ++e) {
    const int32_t u = g.graph_indices[e];
    if (!placed && u >= v) {
      emit(static_cast<int32_t>(i), int64_t{-1});
      placed = true;
    }
    const int32_t local_u = g.local_of[u];
    if (local_u < 0 || (g.self_loops && u == v)) continue;
    emit(local_u, e);
  }
  if (!placed) emit(static_cast<int32_t>(i), int64_t{-1});
}

// 1. Row i's length.
GNNPIPE_HD void row_length(const InducedView& g, int64_t i) {
  int64_t n = 0;
  for_each_entry(g, i, [&](int32_t, int64_t) { ++n; });
  g.lengths[i] = n;
}

// 2. Row i's entries at row_start[i].
GNNPIPE_HD void write_row(const InducedView& g, int64_t i) {
  int64_t out = g.row_start[i];
  for_each_entry(g, i, [&](int32_t local, int64_t e) {
    g.row_indices[out] = local;
    if (g.edge_ids != nullptr) g.edge_ids[out] = e;
    ++out;
  });
}

// GraphSAINT's normalisation (saint_sampler.hpp): a pre-sample count as the norms read it (zero
// becomes 0.1, as in PyG), and the clamp of alpha^-1.
GNNPIPE_HD double count_or_floor(uint32_t count) { return count == 0 ? 0.1 : static_cast<double>(count); }
inline constexpr double kMaxAlphaInv = 1e4;

// What GraphSAINT's weights read, beside the rows.
struct SaintWeightView {
  bool normalize;
  bool gcn;                        // kGcn, else kMean
  const int64_t* graph_offsets;    // full in-degrees
  const int32_t* nodes;
  const int64_t* row_start;        // the subgraph's rows
  const int32_t* row_indices;
  const int64_t* edge_ids;
  const uint32_t* node_counts;     // C_v (normalize)
  const uint32_t* edge_counts;     // C_{u,v} by full-graph position (normalize)
  const double* full_inv_sqrt;     // kGcn with normalize: per global node
  double* inv_sqrt;                // kGcn: per local node (inv_sqrt_of)
};

// kGcn: local node i's (d + 1)^-1/2, of the full graph with normalize, else gcn_norm's on the
// subgraph (its row length counts the self-loop).
GNNPIPE_HD void inv_sqrt_of(const SaintWeightView& w, int64_t i) {
  w.inv_sqrt[i] = w.normalize ? w.full_inv_sqrt[w.nodes[i]]
                              : 1.0 / sqrt(static_cast<double>(w.row_start[i + 1] - w.row_start[i]));
}

// Row i's terms of its weights: the full-graph (normalize) or subgraph mean weight, and C_v.
struct SaintRowTerms {
  double mean_base;
  double c_v;
};
GNNPIPE_HD SaintRowTerms saint_row_terms(const SaintWeightView& w, int64_t i) {
  const int32_t v = w.nodes[i];
  return {1.0 / static_cast<double>(w.normalize ? w.graph_offsets[v + 1] - w.graph_offsets[v]
                                                : w.row_start[i + 1] - w.row_start[i]),
          w.normalize ? count_or_floor(w.node_counts[v]) : 0.0};
}

// The weight of entry e of row i (terms: saint_row_terms(w, i)): the base weight (kMean: the mean
// weight; kGcn: (d_u d_v)^-1/2) times alpha^-1 = C_v / C_{u,v} (1 for an added self-loop or
// without normalize).
GNNPIPE_HD float saint_weight(const SaintWeightView& w, const SaintRowTerms& row, int64_t i, int64_t e) {
  const double base = w.gcn ? w.inv_sqrt[w.row_indices[e]] * w.inv_sqrt[i] : row.mean_base;
  const int64_t full = w.edge_ids[e];
  double alpha_inv = 1.0;
  if (w.normalize && full >= 0) {
    alpha_inv = row.c_v / count_or_floor(w.edge_counts[full]);
    alpha_inv = alpha_inv < kMaxAlphaInv ? alpha_inv : kMaxAlphaInv;
  }
  return static_cast<float>(base * alpha_inv);
}

// Row i's weights into weights[row_start[i]..row_start[i + 1]).
GNNPIPE_HD void saint_row_weights(const SaintWeightView& w, int64_t i, float* weights) {
  const SaintRowTerms row = saint_row_terms(w, i);
  for (int64_t e = w.row_start[i]; e < w.row_start[i + 1]; ++e) weights[e] = saint_weight(w, row, i, e);
}

// The loss weight of training node v: N / (C_v |train|), so the expected batch loss is the mean
// training loss.
GNNPIPE_HD float saint_loss_weight(int norm_samples, uint32_t node_count, double num_train) {
  return static_cast<float>(norm_samples / (count_or_floor(node_count) * num_train));
}

// Cluster-GCN's weights (cluster_sampler.hpp), from the batch's rows alone: kMean 1 / d_v;
// kGcn (D^-1/2 (A + I) D^-1/2 with the self-loops counted in d), or with diag_lambda > 0 the
// diagonal enhancement (D + I)^-1 (A + I), its diagonal times (1 + lambda).
struct ClusterWeightView {
  bool gcn;                   // kGcn, else kMean
  float diag_lambda;
  const int64_t* row_start;
  const int32_t* row_indices;
  double* inv_sqrt;           // kGcn without diag_lambda: per local node (cluster_inv_sqrt_of)
};

GNNPIPE_HD double row_degree(const int64_t* row_start, int64_t i) {
  return static_cast<double>(row_start[i + 1] - row_start[i]);
}
GNNPIPE_HD void cluster_inv_sqrt_of(const ClusterWeightView& w, int64_t i) {
  w.inv_sqrt[i] = 1.0 / sqrt(row_degree(w.row_start, i));  // >= 1: the self-loop
}
// Row i's weights into weights[row_start[i]..row_start[i + 1]).
GNNPIPE_HD void cluster_row_weights(const ClusterWeightView& w, int64_t i, float* weights) {
  for (int64_t e = w.row_start[i]; e < w.row_start[i + 1]; ++e) {
    const int64_t u = w.row_indices[e];
    double x = 0.0;
    if (!w.gcn) {
      x = 1.0 / row_degree(w.row_start, i);
    } else if (w.diag_lambda > 0.0f) {
      x = (u == i ? 1.0 + static_cast<double>(w.diag_lambda) : 1.0) / row_degree(w.row_start, i);
    } else {
      x = w.inv_sqrt[u] * w.inv_sqrt[i];
    }
    weights[e] = static_cast<float>(x);
  }
}

}  // namespace gnnpipe::samplers::induced
