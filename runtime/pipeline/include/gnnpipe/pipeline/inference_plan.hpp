#pragma once
// Sizing layer-wise full-neighbor inference to a device budget (issue #15: `gnnpipe infer`; the
// evaluation bound of training runs is the same arithmetic for fixed chunks).
//
// Layer-wise inference (layerwise_inference.hpp) runs chunks of consecutive destinations with all
// their in-edges through one layer at a time. What it holds on the device for a chunk is the
// model's grow-only inference arrays for the chunk's block shape, grown over every layer (arrays
// keep their largest size from one layer to the next), and on a GPU the packed chunk (its input rows
// at the widest input of any layer) and its output rows: inference_chunk_bytes. plan_inference_chunks
// cuts the graph's id range into chunks that each fit what the budget leaves, as large as fit (fewer,
// larger chunks run faster), and where one destination's in-edges alone do not fit, plans to cut
// that row's edges down to what does (cut_inference_chunk: the memory.cut ranking, as training's cut).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/models/gnn_model.hpp"

namespace gnnpipe::pipeline {

// The block edges of a chunk of `dst` destinations with `in_edges` in-edges: plus a self-loop per
// destination where `model` adds them (GCN, GAT).
int64_t inference_block_edges(const models::GnnModel<float>& model, int64_t dst, int64_t in_edges);

// Which of layer-wise inference's arrays take the budget.
enum class InferenceArrays {
  kModel,       // the model's alone: the CPU backend, rows gathered into host memory (a training
                // run's evaluation there)
  kCharged,     // and the packed chunk, charged to the budget as a GPU would allocate it, the rows
                // still gathered on the host (the CPU backend under `gnnpipe infer`: one budget
                // binds both backends alike)
  kDevice,      // and the packed chunk and its output rows in device arrays (a GPU)
  kDeviceOutputs,  // LayerwiseInferenceOptions::device_outputs: the packed chunk (feature rows in
                   // layer 0's only) and a later layer's input rows gathered into an array of the
                   // runner's; outputs go straight into the activation arrays (device_outputs_bytes)
};

// What layer-wise inference asks of each of its grow-only arrays (`which` of them) for a chunk of `dst` destinations and `block_edges` edges
// (sources at most min(num_nodes, dst + block_edges)) with `feature_cols` input columns, in bytes
// requested, in a fixed order (memory::GrowOnlyFootprint turns them into bytes held).
std::vector<std::size_t> inference_chunk_needs(const models::GnnModel<float>& model, int64_t feature_cols,
                                               int64_t num_nodes, int64_t dst, int64_t block_edges, InferenceArrays which);
// The device bytes those arrays hold for that chunk alone (size classes included): an upper bound
// of what the allocator gives out for it.
std::size_t inference_chunk_bytes(const models::GnnModel<float>& model, int64_t feature_cols, int64_t num_nodes,
                                  int64_t dst, int64_t block_edges, InferenceArrays which);

struct InferenceChunks {
  // Chunk c holds destinations [bounds[c], bounds[c + 1]); bounds.front() == 0, bounds.back() == n.
  std::vector<graph::NodeId> bounds;
  // Per chunk: the block edges it keeps, or -1 for all. A chunk that keeps fewer is one destination
  // whose in-edges do not fit on their own.
  std::vector<int64_t> keep_edges;
  // The bytes the arrays hold once every chunk ran (each array grown to the most a chunk asked of
  // it; they never shrink): at most the allowance.
  std::size_t largest_bytes = 0;
  int64_t largest_chunk_nodes = 0;
  int64_t rows_cut = 0;   // destinations that lose in-edges
  int64_t edges_cut = 0;  // in-edges they lose, in all (per layer: every layer runs the same cut)

  int64_t chunks() const { return static_cast<int64_t>(keep_edges.size()); }
};

// Chunks of at most `max_chunk_nodes` consecutive destinations (>= 1), each as large as fits in
// `allowance` bytes: greedy in id order, a chunk takes the next destination while the arrays,
// grown for the chunk on top of what the chunks before it grew them to, still fit. A destination whose in-edges do not fit even alone is a chunk of its own
// that keeps the most edges that fit. OutOfBudget when one destination does not fit even with no
// in-edge but its self-loop (the allowance is below the model's arrays for a single row).
InferenceChunks plan_inference_chunks(const models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      int64_t feature_cols, std::size_t allowance, int max_chunk_nodes,
                                      InferenceArrays which);

// How a cut chunk loses edges: the ranking of graph::EdgeCutPlan with these scores and weights,
// keyed by (seed, chunk index), so every layer cuts the same edges.
struct InferenceCut {
  const graph::NodeScores* scores = nullptr;  // memory.cut's node values; required when a chunk is cut
  graph::CutWeights weights = graph::CutWeights::kKeep;
  uint64_t seed = 0;
};

// `chunk` (a single-block inference chunk) with its lowest-ranked edges removed down to
// `keep_edges` block edges (self-loops are never removed) and the sources no kept edge reads
// dropped (so a layer's arrays over sources shrink with the cut); nothing when it has no more
// edges (or keep_edges < 0): the chunk runs as it is.
std::optional<graph::MiniBatch> cut_inference_chunk(const graph::MiniBatch& chunk, int64_t keep_edges,
                                                    const InferenceCut& cut);

}  // namespace gnnpipe::pipeline
