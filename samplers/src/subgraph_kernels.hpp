#pragma once
// Launches of the GPU subgraph samplers' kernels (samplers/cuda/subgraph_kernels.cu): GraphSAINT's
// draws marking a node set, Cluster-GCN's parts marking theirs, the set compacted in ascending
// order, and the induced rows, weights and loss rows of induced_phases.hpp. Asynchronous on
// `stream` (a cudaStream_t); CUDA-free; a build without CUDA links no_cuda_kernels.cpp.
#include <cstdint>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/samplers/induced_phases.hpp"
#include "gnnpipe/samplers/saint_draw.hpp"

namespace gnnpipe::samplers::kernels {

// GraphSAINT's draws of one batch (`budget` draws or walks), each marking the nodes it reaches.
struct SaintDraws {
  int mode;                      // SaintMode as int: 0 node, 1 edge, 2 random walk
  core::RngKey key;
  int64_t budget;
  const saint::AliasEntry* alias;
  uint32_t alias_size;
  const int32_t* row_of_block;
  int64_t num_blocks;
  int row_block_shift;
  const int64_t* offsets;
  const int32_t* indices;
  int32_t num_nodes;
  int walk_length;
};
void launch_saint_mark(const SaintDraws& draws, int32_t* mark, void* stream);

// Marks the members of the batch's parts: member m in [0, members) of part q is
// part_nodes[part_offsets[parts[q]] + m - member_start[q]].
void launch_parts_mark(const int32_t* parts, const int64_t* member_start, int64_t num_parts, int64_t members,
                       const int32_t* part_offsets, const int32_t* part_nodes, int32_t* mark, void* stream);

// nodes[rank[v]] = v for every marked v < n (rank: the exclusive scan of the marks).
void launch_compact(const int32_t* mark, const int32_t* rank, int64_t n, int32_t* nodes, void* stream);
// mark[nodes[i]] = 0 and local_of[nodes[i]] = -1 for i < k: a finished batch's per-node arrays.
void launch_clear_set(const int32_t* nodes, int64_t k, int32_t* mark, int32_t* local_of, void* stream);

enum class InducedPhase { kRowLength, kWriteRow };
void launch_induced(InducedPhase phase, const induced::InducedView& view, int64_t k, void* stream);

// GraphSAINT's weights (kGcn: the per-node terms first) and Cluster-GCN's, rows [0, k).
void launch_saint_weights(const induced::SaintWeightView& w, int64_t k, float* weights, void* stream);
void launch_cluster_weights(const induced::ClusterWeightView& w, int64_t k, float* weights, void* stream);

// is_loss[i] = is_train[nodes[i]]; after its scan (loss_start), the loss rows and (normalised
// GraphSAINT, when loss_weights is not null) their weights.
void launch_loss_flags(const int32_t* nodes, int64_t k, const uint8_t* is_train, int32_t* is_loss, void* stream);
void launch_loss_rows(const int32_t* is_loss, const int32_t* loss_start, const int32_t* nodes, int64_t k, int32_t* loss_rows,
                      float* loss_weights, int norm_samples, const uint32_t* node_counts, double num_train, void* stream);

}  // namespace gnnpipe::samplers::kernels
