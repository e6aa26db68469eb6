#include "gnnpipe/pipeline/inference_plan.hpp"

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"

namespace gnnpipe::pipeline {
namespace {

bool adds_self_loops(const models::GnnModel<float>& model) {
  const graph::BlockNorm norm = model.block_norm();
  return norm == graph::BlockNorm::kGcn || norm == graph::BlockNorm::kSelfLoops;
}

// `chunk` without the sources no edge reads any more (a cut leaves node lists as they were): the
// destinations stay the first sources, the others keep their order, so rows stay sorted and sum
// in the same order. What the layer computes is unchanged; its arrays over sources shrink.
graph::MiniBatch compact_sources(graph::MiniBatch chunk) {
  const graph::Block& b = chunk.blocks.front();
  std::vector<graph::NodeId> new_id(static_cast<std::size_t>(b.num_src), -1);
  for (graph::NodeId v = 0; v < b.num_dst; ++v) new_id[static_cast<std::size_t>(v)] = v;
  for (const graph::NodeId u : b.indices.span()) new_id[static_cast<std::size_t>(u)] = 0;  // used
  std::vector<graph::NodeId> inputs(chunk.input_nodes.span().begin(),
                                    chunk.input_nodes.span().begin() + b.num_dst);
  for (graph::NodeId u = b.num_dst; u < b.num_src; ++u) {
    if (new_id[static_cast<std::size_t>(u)] < 0) continue;
    new_id[static_cast<std::size_t>(u)] = static_cast<graph::NodeId>(inputs.size());
    inputs.push_back(chunk.input_nodes[static_cast<std::size_t>(u)]);
  }
  std::vector<graph::NodeId> indices(b.indices.size());
  for (std::size_t e = 0; e < indices.size(); ++e) indices[e] = new_id[static_cast<std::size_t>(b.indices[e])];
  std::vector<graph::EdgeOffset> offsets(b.offsets.span().begin(), b.offsets.span().end());
  std::vector<float> weights(b.weights.span().begin(), b.weights.span().end());
  const auto num_src = static_cast<graph::NodeId>(inputs.size());
  graph::Block compacted = graph::Block::from_csr(b.num_dst, num_src, graph::HostArray<graph::EdgeOffset>(std::move(offsets)),
                                                  graph::HostArray<graph::NodeId>(std::move(indices)),
                                                  graph::HostArray<float>(std::move(weights)), "cut inference chunk",
                                                  graph::Block::RowOrder::kKeep);
  chunk.blocks.front() = std::move(compacted);
  chunk.input_nodes = graph::HostArray<graph::NodeId>(std::move(inputs));
  chunk.compute_shape(chunk.shape.feature_dim, 1);
  return chunk;
}

}  // namespace

int64_t inference_block_edges(const models::GnnModel<float>& model, int64_t dst, int64_t in_edges) {
  return in_edges + (adds_self_loops(model) ? dst : 0);
}

std::vector<std::size_t> inference_chunk_needs(const models::GnnModel<float>& model, int64_t feature_cols,
                                               int64_t num_nodes, int64_t dst, int64_t block_edges, InferenceArrays which) {
  const models::BlockShape shape{dst, std::min(num_nodes, dst + block_edges), block_edges};
  // Every layer runs on the same arrays, one after another: each array needs the most any layer asks.
  std::vector<std::size_t> needs;
  int64_t widest_in = feature_cols, widest_out = 0;
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    const std::vector<std::size_t> layer = model.inference_arrays(l, shape, true);
    if (needs.size() < layer.size()) needs.resize(layer.size(), 0);
    for (std::size_t i = 0; i < layer.size(); ++i) needs[i] = std::max(needs[i], layer[i]);
    if (l > 0) widest_in = std::max(widest_in, model.layer_out_dim(l - 1));
    widest_out = std::max(widest_out, model.layer_out_dim(l));
  }
  if (which == InferenceArrays::kModel) return needs;
  if (which == InferenceArrays::kDeviceOutputs) {
    // Layer 0's packed chunk carries its feature rows; a later layer's only its block and ids, and
    // its rows (at the widest hidden width) are gathered into an array of their own.
    int64_t widest_hidden = 0;
    for (std::size_t l = 0; l + 1 < model.num_layers(); ++l) widest_hidden = std::max(widest_hidden, model.layer_out_dim(l));
    needs.push_back(packed_block_batch_bytes(shape.num_src, dst, block_edges, feature_cols));
    needs.push_back(static_cast<std::size_t>(shape.num_src * widest_hidden) * sizeof(float));
    return needs;
  }
  // The packed chunk (at the widest input of any layer), a grow-only array of the GPU's chunk
  // runner, which the CPU backend charges alike (layerwise_inference.cpp).
  needs.push_back(packed_block_batch_bytes(shape.num_src, dst, block_edges, widest_in));
  // The output rows come back from a device array of their own on a GPU (the CPU writes in place).
  if (which == InferenceArrays::kDevice) needs.push_back(static_cast<std::size_t>(dst * widest_out) * sizeof(float));
  return needs;
}

std::size_t inference_chunk_bytes(const models::GnnModel<float>& model, int64_t feature_cols, int64_t num_nodes,
                                  int64_t dst, int64_t block_edges, InferenceArrays which) {
  return memory::GrowOnlyFootprint{}.bytes_after(
      inference_chunk_needs(model, feature_cols, num_nodes, dst, block_edges, which));
}

InferenceChunks plan_inference_chunks(const models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      int64_t feature_cols, std::size_t allowance, int max_chunk_nodes,
                                      InferenceArrays which) {
  GNNPIPE_CHECK_CONFIG(max_chunk_nodes >= 1, "sampler.eval_chunk_nodes: must be >= 1, got {}", max_chunk_nodes);
  const int64_t n = graph.num_nodes();
  const auto offsets = graph.offsets();
  const auto in_edges = [&](int64_t begin, int64_t end) {
    return static_cast<int64_t>(offsets[static_cast<std::size_t>(end)] - offsets[static_cast<std::size_t>(begin)]);
  };
  // The arrays grow to the most any chunk so far asked of each (they never shrink), so a chunk
  // fits when the arrays, grown for it on top of the chunks before it, fit.
  memory::GrowOnlyFootprint arrays;
  const auto needs = [&](int64_t begin, int64_t end) {
    return inference_chunk_needs(model, feature_cols, n, end - begin,
                                 inference_block_edges(model, end - begin, in_edges(begin, end)), which);
  };
  const auto fits = [&](const std::vector<std::size_t>& need) { return arrays.bytes_after(need) <= allowance; };
  InferenceChunks plan;
  plan.bounds.push_back(0);
  const auto close = [&](int64_t end, int64_t keep, const std::vector<std::size_t>& need) {
    const int64_t begin = plan.bounds.back();
    arrays.grow(need);
    plan.bounds.push_back(static_cast<graph::NodeId>(end));
    plan.keep_edges.push_back(keep);
    plan.largest_chunk_nodes = std::max(plan.largest_chunk_nodes, end - begin);
  };
  int64_t begin = 0;
  while (begin < n) {
    const int64_t cap = std::min<int64_t>(n, begin + max_chunk_nodes);
    // The common case first: the whole window fits (needs grow with destinations and edges).
    if (const auto whole = needs(begin, cap); fits(whole)) {
      close(cap, -1, whole);
      begin = cap;
      continue;
    }
    // The largest end in (begin, cap) that fits, by binary search (monotone in end).
    int64_t lo = begin, hi = cap;  // [begin, lo) fits (lo == begin: empty), [begin, hi) does not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(needs(begin, mid)) ? lo : hi) = mid;
    }
    if (lo > begin) {
      close(lo, -1, needs(begin, lo));
      begin = lo;
      continue;
    }
    // One destination whose in-edges do not fit: keep the most block edges that do.
    const int64_t all = inference_block_edges(model, 1, in_edges(begin, begin + 1));
    const int64_t loops = inference_block_edges(model, 1, 0);
    const auto row = [&](int64_t edges) { return inference_chunk_needs(model, feature_cols, n, 1, edges, which); };
    GNNPIPE_CHECK_AS(OutOfBudget, fits(row(loops)),
                     "memory.limit: inference needs {} for one destination row of the model's layers, and the budget "
                     "leaves {} after the model",
                     core::format_bytes(arrays.bytes_after(row(loops))), core::format_bytes(allowance));
    int64_t keep = loops, over = all;  // row(keep) fits, row(over) does not
    while (over - keep > 1) {
      const int64_t mid = keep + (over - keep) / 2;
      (fits(row(mid)) ? keep : over) = mid;
    }
    close(begin + 1, keep, row(keep));
    ++plan.rows_cut;
    plan.edges_cut += all - keep;
    ++begin;
  }
  plan.largest_bytes = arrays.bytes();
  return plan;
}

std::optional<graph::MiniBatch> cut_inference_chunk(const graph::MiniBatch& chunk, int64_t keep_edges,
                                                    const InferenceCut& cut) {
  GNNPIPE_CHECK(chunk.blocks.size() == 1, "inference: a chunk has one block, not {}", chunk.blocks.size());
  const int64_t edges = chunk.blocks.front().num_edges();
  if (keep_edges < 0 || edges <= keep_edges) return std::nullopt;
  GNNPIPE_CHECK(cut.scores != nullptr, "inference: chunk {} must lose edges but no cut scores were given", chunk.index);
  graph::EdgeCut result = graph::cut_edges(chunk, edges - keep_edges, *cut.scores,
                                           {.key = graph::cut_rng_key(cut.seed, 0, chunk.index), .weights = cut.weights});
  return compact_sources(std::move(result.batch));
}

}  // namespace gnnpipe::pipeline
