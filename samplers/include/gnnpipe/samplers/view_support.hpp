#pragma once
// What MH-Aug's views need to know of a sampler's batches (mh_views.hpp; Sampler::augment_support).
#include <cstdint>
#include <span>

#include "gnnpipe/graph/block.hpp"

namespace gnnpipe::samplers::mh {

// What the sampler's degrees in its weights count.
enum class ViewDegrees {
  kBatchRows,  // the row lengths of the batch's block (self-loop included): full batch, Cluster-GCN,
               // GraphSAINT without normalisation
  kFullGraph,  // the full graph's in-degrees: GraphSAINT with normalisation (kGcn: without
               // self-loops, + 1; kMean: the row length)
};

// How a sampler's shared block is weighted (Sampler::augment_support).
struct ViewSupport {
  graph::BlockNorm norm = graph::BlockNorm::kNone;  // kGcn / kMean re-weight; others only filter
  ViewDegrees degrees = ViewDegrees::kBatchRows;
  std::span<const uint32_t> node_counts{};  // GraphSAINT's C_v with normalisation; else empty
  int norm_samples = 0;                     // its N_pre
  // kFullGraph with kGcn: whether d counts the graph's own self-loops (neighbor sampling: the raw
  // in-degree + 1) or not (GraphSAINT: without them, + 1).
  bool counts_self_loops = false;
};

}  // namespace gnnpipe::samplers::mh
