#pragma once
// Layer-wise full-neighbor inference: the whole graph through layer 0 in chunks of destination
// nodes (each with all its in-neighbors, from samplers::make_inference_sampler), then layer 1 over
// layer 0's outputs, and so on. It computes the same logits as a full-graph forward without
// dropout (up to the order of floating-point sums), while holding only one chunk's block and two
// [nodes x width] activation matrices, never an [edges x width] intermediate of the whole graph.
// Chunks of a window are sampled in parallel; each chunk's layer runs with its ops' own threads.
#include <cstdint>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/matrix.hpp"

namespace gnnpipe::pipeline {

struct LayerwiseInferenceOptions {
  int chunk_nodes = 8192;   // destinations per chunk, >= 1
  int parallel_chunks = 2;  // chunks sampled concurrently, >= 1
};

// The logits of every node of `graph` [num_nodes x out_dim] under `model` in inference mode.
// `features` has one row per node of `graph`.
models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options);

}  // namespace gnnpipe::pipeline
