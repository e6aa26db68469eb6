#pragma once
// Layer-wise full-neighbor inference: the whole graph through layer 0 in chunks of destination
// nodes (each with all its in-neighbors, from samplers::make_inference_sampler), then layer 1 over
// layer 0's outputs, and so on. It computes the same logits as a full-graph forward without
// dropout (up to the order of floating-point sums), while holding only one chunk's block and two
// [nodes x width] activation matrices, never an [edges x width] intermediate of the whole graph.
// Chunks of a window are sampled in parallel; each chunk's layer runs with its ops' own threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gnnpipe/core/stream.hpp"

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/sparse_rows.hpp"
#include "gnnpipe/pipeline/inference_plan.hpp"

namespace gnnpipe::pipeline {

struct LayerwiseInferenceOptions {
  int chunk_nodes = 8192;   // destinations per chunk, >= 1 (unless `chunks` is given)
  int parallel_chunks = 2;  // chunks sampled concurrently, >= 1
  // Chunks of their own (plan_inference_chunks: sized to a budget, rows whose edges are cut):
  // replaces chunk_nodes; must cover the graph's nodes. Edges of a chunk that keeps fewer are cut
  // with `cut` (the same edges in every layer).
  const InferenceChunks* chunks = nullptr;
  InferenceCut cut;
  // CPU backend: charge each chunk's packed bytes to the model's allocator as a GPU allocates them
  // (InferenceArrays::kCharged), so that a budget binds both backends alike.
  bool charge_packed = false;
  // Bytes the call may take beside `chunks`' plan for a second packed chunk: on a GPU, chunk k + 1
  // is then copied (on a copy stream of its own) into the other of two device arrays while chunk
  // k's layer runs. The second array is used while its size class fits here, and given up for the
  // rest of the call by the first chunk it would outgrow; with 0 every chunk uses one array, and
  // its copy waits for the previous chunk's layer. With charge_packed, the CPU backend charges the
  // second array alike.
  std::size_t overlap_bytes = 0;
  // Keep every layer's outputs in the model context's memory (two [nodes x widest output] arrays
  // of the workspace, kept across calls; device_outputs_bytes) instead of the host's: every chunk
  // then goes through the chunk runner on either backend, a later layer's chunk carries its block
  // and input ids only and gathers its rows from the previous layer's outputs there
  // (ops::copy_rows), and only the last layer's outputs come back. On a GPU this takes the host
  // gather and both copies of every hidden row out of the loop (products-size graphs: 18 s of
  // host-bound evaluation on the H200). `charge_packed` does not apply (the runner allocates).
  bool device_outputs = false;
  // Sharded between data-parallel ranks (issue #42; host outputs on the CPU backend only): this
  // process computes shard `shard` of `shards` contiguous runs of the plan's chunks, and after each
  // layer share_rows(outputs, row_offsets) fills in the other shards' rows (shard r's rows are
  // [row_offsets[r], row_offsets[r + 1])) before the next layer reads them. The outputs are those
  // of one process, bit for bit: a chunk's rows do not depend on who computes them.
  int shard = 0;
  int shards = 1;
  std::function<void(models::Matrix<float>& outputs, std::span<const int64_t> row_offsets)> share_rows = nullptr;
  // CPU backend, host outputs: the features' CSR form (rows by node id; ops/sparse_input.hpp
  // sparse_rows), where the model infers its first layer through x W (infers_sparse_input): a
  // layer-0 chunk then gathers its rows' non-zeros instead of dense rows, and its x W costs them
  // (GnnModel::infer_first_layer). The same logits up to the order of each element's sum.
  const models::SparseRowsView<float>* sparse_features = nullptr;
  // Called after each layer with its outputs for every node (embeddings of a hidden layer).
  std::function<void(std::size_t layer, const models::Matrix<float>& outputs)> on_layer;
  // Host bytes of sampled chunks (their blocks and ids, after any cut) the workspace may keep: a
  // kept chunk serves every later layer of the call and later calls with the same chunks (the
  // same graph, chunk plan, edge cuts and block weighting; any other clears what is kept), which
  // then neither sample nor transpose it again. Chunks are kept in plan order until the next
  // would pass this; the rest are sampled where they are needed, as with 0 (none kept). The
  // outputs are the same bit for bit either way.
  std::size_t cache_bytes = 0;
};

// What layer-wise inference on a GPU keeps from one call to the next: a ring of pinned staging
// buffers (a packed chunk going in, its outputs coming back) and the chunk's device arrays. A run
// keeps one for all its evaluations, so that once its largest chunk was seen an evaluation
// allocates no pinned memory (cudaHostAlloc and cudaFreeHost synchronise the whole device).
// Unused on the CPU backend unless device_outputs is set (then it also keeps the two activation
// arrays). Move-only; one call at a time.
class InferenceWorkspace {
 public:
  InferenceWorkspace();
  ~InferenceWorkspace();
  InferenceWorkspace(InferenceWorkspace&&) noexcept;
  InferenceWorkspace& operator=(InferenceWorkspace&&) noexcept;
  // Pinned bytes held (0 before a GPU call).
  std::size_t pinned_bytes() const;
  // How many times a pinned buffer was (re)allocated: stays flat once the largest chunk was seen.
  int64_t pinned_allocations() const;
  // LayerwiseInferenceOptions::cache_bytes: the chunks kept now and their host bytes, and how many
  // chunks the calls with this workspace have sampled in all.
  std::size_t cached_chunks() const;
  std::size_t cached_bytes() const;
  int64_t sampled_chunks() const;

  struct State;  // defined in layerwise_inference.cpp
  State& state();

 private:
  std::unique_ptr<State> state_;
};

// The layer-0 input of layer-wise inference under `model`: `features`, or, when the model learned
// an embedding of every node (model.embedding), the table itself as a host store: read in place
// when the model lives in host memory, else copied into `host_copy` (ordered after the work queued
// on `stream`, the model's). Valid while the model (or host_copy) is.
graph::FeatureStore layerwise_input(const models::GnnModel<float>& model, const graph::FeatureStore& features,
                                    const core::Stream& stream, std::vector<float>& host_copy);

// The non-zeros of `features` where layer 0 of `model` may read them in CSR form
// (LayerwiseInferenceOptions::sparse_features; DECISIONS.md 2026-12-02): the CPU backend with
// OpOptions::sparse_input, a first layer that infers through x W (GnnModel::infers_sparse_input:
// no learned embedding), float32 features held whole (not a rank's partition) and sparse by
// cpu::sparse_nonzeros' rule; nullopt otherwise.
std::optional<int64_t> csr_feature_nonzeros(const models::GnnModel<float>& model, const graph::FeatureStore& features);
// Their CSR form (nnz from csr_feature_nonzeros) in `buffer`, in the memory of `ctx` (the budget
// counts it): cpu::sparse_rows_bytes(rows, nnz) bytes. `who` names the reader in a debug line.
models::SparseRowsView<float> build_csr_features(const models::OpContext& ctx, const graph::FeatureStore& features,
                                                 int64_t nnz, models::DeviceArray<std::byte>& buffer, const char* who);

// What LayerwiseInferenceOptions::device_outputs adds in the model context's memory for `num_nodes`
// nodes: the two activation arrays (each at the widest layer output), as the caching allocator
// rounds them.
std::size_t device_outputs_bytes(const models::GnnModel<float>& model, int64_t num_nodes);

// The logits of every node of `graph` [num_nodes x out_dim] under `model` in inference mode.
// `features` has one row per node of `graph`. On a GPU, a chunk's outputs come back through the
// pinned ring while the next chunk is packed; the call returns when every output is in place.
models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options,
                                      InferenceWorkspace& workspace);
// The same with a workspace of its own (allocated and freed by this call).
models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options);

}  // namespace gnnpipe::pipeline
