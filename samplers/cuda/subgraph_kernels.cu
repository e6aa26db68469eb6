// The GPU subgraph samplers' kernels: each a grid-stride loop over its elements calling the same
// element functions as the twins (saint_twin.cpp, cluster_twin.cpp, subgraph_twin.cpp). A node
// reached by several draws is marked by several threads with the same value: a plain store.
#include "cuda_check.hpp"
#include "grid_loop.cuh"
#include "subgraph_kernels.hpp"

namespace gnnpipe::samplers::kernels {
namespace {

using core::cuda::blocks_for;
using core::cuda::first_index;
using core::cuda::grid_stride;
constexpr unsigned kThreads = core::cuda::kGridThreads;

__global__ void saint_mark_kernel(SaintDraws d, int32_t* mark) {
  for (int64_t i = first_index(); i < d.budget; i += grid_stride()) {
    if (d.mode == 2) {
      saint::random_walk(d.key, i, d.offsets, d.indices, d.num_nodes, d.walk_length, [&](int32_t v) { mark[v] = 1; });
      continue;
    }
    DrawCursor draws = saint::draw_cursor(d.key, i);
    const uint32_t x = saint::alias_draw(d.alias, d.alias_size, draws);
    if (d.mode == 0) {
      mark[x] = 1;
    } else {
      mark[d.indices[x]] = 1;
      mark[saint::row_of_position(d.offsets, d.row_of_block, d.num_blocks, d.num_nodes, x, d.row_block_shift)] = 1;
    }
  }
}

__global__ void parts_mark_kernel(const int32_t* parts, const int64_t* member_start, int64_t num_parts, int64_t members,
                                  const int32_t* part_offsets, const int32_t* part_nodes, int32_t* mark) {
  for (int64_t m = first_index(); m < members; m += grid_stride()) {
    int64_t lo = 0, hi = num_parts;  // the last q with member_start[q] <= m
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (member_start[mid] <= m) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    mark[part_nodes[part_offsets[parts[lo]] + (m - member_start[lo])]] = 1;
  }
}

__global__ void compact_kernel(const int32_t* mark, const int32_t* rank, int64_t n, int32_t* nodes) {
  for (int64_t v = first_index(); v < n; v += grid_stride()) {
    if (mark[v] != 0) nodes[rank[v]] = static_cast<int32_t>(v);
  }
}

__global__ void clear_set_kernel(const int32_t* nodes, int64_t k, int32_t* mark, int32_t* local_of) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) {
    mark[nodes[i]] = 0;
    local_of[nodes[i]] = -1;
  }
}

template <InducedPhase P>
__global__ void induced_kernel(induced::InducedView view, int64_t k) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) {
    if constexpr (P == InducedPhase::kRowLength) induced::row_length(view, i);
    if constexpr (P == InducedPhase::kWriteRow) induced::write_row(view, i);
  }
}

__global__ void saint_inv_sqrt_kernel(induced::SaintWeightView w, int64_t k) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) induced::inv_sqrt_of(w, i);
}
__global__ void saint_weights_kernel(induced::SaintWeightView w, int64_t k, float* weights) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) induced::saint_row_weights(w, i, weights);
}
__global__ void cluster_inv_sqrt_kernel(induced::ClusterWeightView w, int64_t k) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) induced::cluster_inv_sqrt_of(w, i);
}
__global__ void cluster_weights_kernel(induced::ClusterWeightView w, int64_t k, float* weights) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) induced::cluster_row_weights(w, i, weights);
}

__global__ void loss_flags_kernel(const int32_t* nodes, int64_t k, const uint8_t* is_train, int32_t* is_loss) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) is_loss[i] = is_train[nodes[i]];
}
__global__ void loss_rows_kernel(const int32_t* is_loss, const int32_t* loss_start, const int32_t* nodes, int64_t k,
                                 int32_t* loss_rows, float* loss_weights, int norm_samples, const uint32_t* node_counts,
                                 double num_train) {
  for (int64_t i = first_index(); i < k; i += grid_stride()) {
    if (is_loss[i] == 0) continue;
    loss_rows[loss_start[i]] = static_cast<int32_t>(i);
    if (loss_weights != nullptr) loss_weights[loss_start[i]] = induced::saint_loss_weight(norm_samples, node_counts[nodes[i]], num_train);
  }
}

}  // namespace

#define GNNPIPE_LAUNCH(kernel, n, ...)                                                            \
  do {                                                                                          \
    if ((n) > 0) {                                                                              \
      kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__);   \
      GNNPIPE_CUDA_CHECK(cudaGetLastError());                                                   \
    }                                                                                           \
  } while (0)

void launch_saint_mark(const SaintDraws& draws, int32_t* mark, void* stream) {
  GNNPIPE_LAUNCH(saint_mark_kernel, draws.budget, draws, mark);
}
void launch_parts_mark(const int32_t* parts, const int64_t* member_start, int64_t num_parts, int64_t members,
                       const int32_t* part_offsets, const int32_t* part_nodes, int32_t* mark, void* stream) {
  GNNPIPE_LAUNCH(parts_mark_kernel, members, parts, member_start, num_parts, members, part_offsets, part_nodes, mark);
}
void launch_compact(const int32_t* mark, const int32_t* rank, int64_t n, int32_t* nodes, void* stream) {
  GNNPIPE_LAUNCH(compact_kernel, n, mark, rank, n, nodes);
}
void launch_clear_set(const int32_t* nodes, int64_t k, int32_t* mark, int32_t* local_of, void* stream) {
  GNNPIPE_LAUNCH(clear_set_kernel, k, nodes, k, mark, local_of);
}
void launch_induced(InducedPhase phase, const induced::InducedView& view, int64_t k, void* stream) {
  if (phase == InducedPhase::kRowLength) {
    GNNPIPE_LAUNCH(induced_kernel<InducedPhase::kRowLength>, k, view, k);
  } else {
    GNNPIPE_LAUNCH(induced_kernel<InducedPhase::kWriteRow>, k, view, k);
  }
}
void launch_saint_weights(const induced::SaintWeightView& w, int64_t k, float* weights, void* stream) {
  if (w.gcn) GNNPIPE_LAUNCH(saint_inv_sqrt_kernel, k, w, k);
  GNNPIPE_LAUNCH(saint_weights_kernel, k, w, k, weights);
}
void launch_cluster_weights(const induced::ClusterWeightView& w, int64_t k, float* weights, void* stream) {
  if (w.gcn && w.diag_lambda == 0.0f) GNNPIPE_LAUNCH(cluster_inv_sqrt_kernel, k, w, k);
  GNNPIPE_LAUNCH(cluster_weights_kernel, k, w, k, weights);
}
void launch_loss_flags(const int32_t* nodes, int64_t k, const uint8_t* is_train, int32_t* is_loss, void* stream) {
  GNNPIPE_LAUNCH(loss_flags_kernel, k, nodes, k, is_train, is_loss);
}
void launch_loss_rows(const int32_t* is_loss, const int32_t* loss_start, const int32_t* nodes, int64_t k, int32_t* loss_rows,
                      float* loss_weights, int norm_samples, const uint32_t* node_counts, double num_train, void* stream) {
  GNNPIPE_LAUNCH(loss_rows_kernel, k, is_loss, loss_start, nodes, k, loss_rows, loss_weights, norm_samples, node_counts, num_train);
}

}  // namespace gnnpipe::samplers::kernels
