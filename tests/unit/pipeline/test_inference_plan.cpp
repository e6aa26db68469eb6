// Issue #15: layer-wise inference sized to a budget (plan_inference_chunks) and the rows it cuts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/pipeline/inference_plan.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "relative_difference.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;

namespace {

constexpr int64_t kCols = 6;
// The arrays `gnnpipe infer` budgets on the CPU backend: the model's and the packed chunk's charge.
constexpr auto kCharged = pipeline::InferenceArrays::kCharged;

models::ModelOptions sage(int layers = 2) {
  models::ModelOptions o;
  o.type = models::ModelType::kSage;
  o.layers = layers;
  o.hidden = 8;
  return o;
}

graph::FeatureStore features_for(NodeId n) {
  core::Rng rng(5, {});
  std::vector<float> x(static_cast<std::size_t>(n) * kCols);
  for (float& v : x) v = static_cast<float>(2 * rng.uniform() - 1);
  return graph::FeatureStore(graph::HostArray<float>(x), n, kCols);
}

// A sparse random graph where node 7 also receives an edge from every other node.
graph::CsrGraph hub_graph(NodeId n) {
  core::Rng rng(3, {});
  std::vector<NodeId> src, dst;
  for (NodeId v = 0; v < n; ++v) {
    if (v != 7) {
      src.push_back(v);
      dst.push_back(7);
    }
    src.push_back(static_cast<NodeId>(rng.below(static_cast<uint64_t>(n))));
    dst.push_back(v);
  }
  return graph::CsrGraph::from_coo(n, src, dst, {.symmetrize = false, .dedupe = true, .self_loops = graph::SelfLoops::kRemove});
}

int64_t in_edges(const graph::CsrGraph& g, int64_t begin, int64_t end) {
  return g.offsets()[static_cast<std::size_t>(end)] - g.offsets()[static_cast<std::size_t>(begin)];
}

}  // namespace

TEST_CASE("inference chunks cover the graph, each fits the allowance and none could take its next node",
          "[pipeline][inference][infer]") {
  const graph::CsrGraph g = test::random_graph(900, 5000, 4);
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat}) {
    models::ModelOptions o = sage();
    o.type = type;
    o.heads = 2;
    const models::GnnModel<float> model(o, kCols, 3, 1);
    INFO("model " << models::to_string(type));
    const auto bytes = [&](int64_t begin, int64_t end) {
      return pipeline::inference_chunk_bytes(model, kCols, g.num_nodes(), end - begin,
                                             pipeline::inference_block_edges(model, end - begin, in_edges(g, begin, end)),
                                             pipeline::InferenceArrays::kCharged);
    };
    // Unlimited: chunks of max_chunk_nodes.
    const auto wide = pipeline::plan_inference_chunks(model, g, kCols, std::size_t{1} << 40, 256, kCharged);
    CHECK(wide.bounds == std::vector<NodeId>{0, 256, 512, 768, 900});
    CHECK(wide.rows_cut == 0);
    // A tight allowance: about 40 destinations a chunk.
    const std::size_t allowance = bytes(0, 40);
    const auto plan = pipeline::plan_inference_chunks(model, g, kCols, allowance, 256, kCharged);
    REQUIRE(plan.bounds.front() == 0);
    REQUIRE(plan.bounds.back() == 900);
    REQUIRE(plan.keep_edges.size() + 1 == plan.bounds.size());
    CHECK(plan.chunks() > 900 / 256 + 1);
    CHECK(plan.rows_cut == 0);
    // Arrays keep the most any chunk asked of each: a chunk fits on top of the chunks before it.
    memory::GrowOnlyFootprint arrays;
    const auto needs = [&](int64_t begin, int64_t end) {
      return pipeline::inference_chunk_needs(model, kCols, g.num_nodes(), end - begin,
                                             pipeline::inference_block_edges(model, end - begin, in_edges(g, begin, end)),
                                             pipeline::InferenceArrays::kCharged);
    };
    for (std::size_t c = 0; c + 1 < plan.bounds.size(); ++c) {
      const int64_t begin = plan.bounds[c], end = plan.bounds[c + 1];
      REQUIRE(end > begin);
      CHECK(plan.keep_edges[c] == -1);
      CHECK(arrays.bytes_after(needs(begin, end)) <= allowance);
      if (end < 900) CHECK(arrays.bytes_after(needs(begin, end + 1)) > allowance);  // greedy: as large as fits
      arrays.grow(needs(begin, end));
    }
    CHECK(plan.largest_bytes == arrays.bytes());
    // The packed chunk's need (the last array) holds every planned chunk's packed layout, at the
    // widest input of any layer.
    const auto sampler = samplers::make_inference_sampler(g, model.block_norm(), 1);
    const auto ws = sampler->make_workspace();
    int64_t widest = kCols;
    for (std::size_t l = 0; l < model.num_layers(); ++l) widest = std::max(widest, model.layer_out_dim(l));
    for (std::size_t c = 0; c + 1 < plan.bounds.size(); ++c) {
      samplers::BatchSpec spec;
      spec.index = static_cast<int64_t>(c);
      for (NodeId v = plan.bounds[c]; v < plan.bounds[c + 1]; ++v) spec.seeds.push_back(v);
      const graph::MiniBatch chunk = sampler->sample(spec, *ws);
      CHECK(pipeline::BatchLayout::of(chunk, widest).total_bytes <= needs(plan.bounds[c], plan.bounds[c + 1]).back());
    }
  }
}

TEST_CASE("inference in budgeted chunks computes the fixed chunks' logits and stays under the allocator's budget",
          "[pipeline][inference][infer]") {
  const NodeId n = 3000;
  const graph::CsrGraph g = test::random_graph(n, 6000, 9);
  const graph::FeatureStore features = features_for(n);
  const core::Stream stream(core::Device::cpu());
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat}) {
    INFO("model " << models::to_string(type));
    models::ModelOptions o = sage(3);
    o.type = type;
    o.heads = 2;
    const models::GnnModel<float> reference(o, kCols, 4, 2);
    const auto expected = pipeline::infer_layerwise(const_cast<models::GnnModel<float>&>(reference), g, features, {});
    // The budget: the model, plus what a 50-node chunk of this graph needs at most.
    const int64_t biggest50 = [&] {
      int64_t e = 0;
      for (int64_t b = 0; b + 50 <= n; ++b) e = std::max(e, in_edges(g, b, b + 50));
      return e;
    }();
    const std::size_t chunk_bytes = pipeline::inference_chunk_bytes(
        reference, kCols, n, 50, pipeline::inference_block_edges(reference, 50, biggest50), kCharged);
    memory::CachingAllocator allocator(core::Device::cpu(), std::size_t{1} << 30);
    const models::OpContext ctx(stream, {}, &allocator);
    models::GnnModel<float> model(o, kCols, 4, 2, ctx);
    const std::size_t budget = allocator.stats().in_use_bytes + chunk_bytes;
    memory::CachingAllocator tight(core::Device::cpu(), budget);
    const models::OpContext tight_ctx(stream, {}, &tight);
    models::GnnModel<float> bounded(o, kCols, 4, 2, tight_ctx);
    const std::size_t allowance = budget - tight.stats().in_use_bytes;
    // Chunks of 1000 nodes do not fit this budget: the allocator refuses.
    CHECK_THROWS_AS(pipeline::infer_layerwise(bounded, g, features, {.chunk_nodes = 1000, .parallel_chunks = 2,
                                                                     .chunks = nullptr, .cut = {}, .charge_packed = true, .overlap_bytes = 0, .on_layer = {}}),
                    core::OutOfBudget);
    bounded.release_arrays();  // what the refused call grew
    const auto chunks = pipeline::plan_inference_chunks(bounded, g, kCols, allowance, 8192, kCharged);
    CHECK(chunks.rows_cut == 0);
    CHECK(chunks.largest_chunk_nodes >= 50);
    std::vector<std::size_t> layers_seen;
    const auto got = pipeline::infer_layerwise(
        bounded, g, features,
        {.chunk_nodes = 1, .parallel_chunks = 2, .chunks = &chunks, .cut = {}, .charge_packed = true, .overlap_bytes = 0, .on_layer = [&](std::size_t l, const models::Matrix<float>& y) {
           CHECK(y.rows() == n);
           layers_seen.push_back(l);
         }});
    // (The allocator refuses anything over its budget: that the call returned is the check.)
    CHECK(layers_seen == std::vector<std::size_t>{0, 1, 2});
    REQUIRE(got.size() == expected.size());
    double worst = 0;
    for (int64_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(got.flat()[i] - expected.flat()[i])) / (1 + std::abs(expected.flat()[i])));
    }
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("a destination whose in-edges do not fit keeps the most that do, cut by the memory.cut ranking",
          "[pipeline][inference][infer]") {
  const NodeId n = 400;
  const graph::CsrGraph g = hub_graph(n);
  const int64_t hub_edges = in_edges(g, 7, 8);
  REQUIRE(hub_edges >= n - 1);
  // GAT: its attention arrays grow with a row's edges (SAGE's CPU arrays hold rows, not edges).
  models::ModelOptions gat = sage();
  gat.type = models::ModelType::kGat;
  gat.heads = 2;
  const models::GnnModel<float> model(gat, kCols, 3, 1);
  const auto row = [&](int64_t edges) { return pipeline::inference_chunk_bytes(model, kCols, n, 1, edges, kCharged); };
  // Room for a row with about 100 in-edges, not the hub's.
  const std::size_t allowance = row(100);
  const int64_t hub_block_edges = pipeline::inference_block_edges(model, 1, hub_edges);
  REQUIRE(row(hub_block_edges) > allowance);
  const auto plan = pipeline::plan_inference_chunks(model, g, kCols, allowance, 64, kCharged);
  CHECK(plan.rows_cut == 1);
  // SAGE's own CPU arrays hold rows, not edges; the packed chunk's charge (its sources' rows and its
  // edges) grows with the row's edges, as a GPU's device array does, so SAGE's rows are cut too.
  const models::GnnModel<float> rows_only(sage(), kCols, 3, 1);
  const auto sage_row = [&](int64_t edges, pipeline::InferenceArrays which) {
    return pipeline::inference_chunk_bytes(rows_only, kCols, n, 1, edges, which);
  };
  CHECK(sage_row(hub_edges, pipeline::InferenceArrays::kModel) == sage_row(1, pipeline::InferenceArrays::kModel));
  CHECK(sage_row(hub_edges, kCharged) > sage_row(1, kCharged));
  CHECK(sage_row(hub_edges, pipeline::InferenceArrays::kDevice) > sage_row(hub_edges, kCharged));
  int64_t hub_chunk = -1;
  for (std::size_t c = 0; c + 1 < plan.bounds.size(); ++c) {
    if (plan.keep_edges[c] >= 0) hub_chunk = static_cast<int64_t>(c);
  }
  REQUIRE(hub_chunk >= 0);
  const auto c = static_cast<std::size_t>(hub_chunk);
  CHECK(plan.bounds[c] == 7);
  CHECK(plan.bounds[c + 1] == 8);
  const int64_t keep = plan.keep_edges[c];
  CHECK(row(keep) <= allowance);
  CHECK(row(keep + 1) > allowance);
  CHECK(plan.edges_cut == hub_block_edges - keep);

  // The cut keeps the highest-ranked edges: under degree_sum (1 / (d_u + d_v), lowest first) the
  // edges from the best-connected sources go first. (Shown on SAGE's chunk, whose mean weights are
  // redone over the edges left; GAT's has no self-loop to keep there.)
  const models::GnnModel<float> mean_model(sage(), kCols, 3, 1);
  const auto sampler = samplers::make_inference_sampler(g, mean_model.block_norm(), 1);
  samplers::BatchSpec spec;
  spec.index = hub_chunk;
  spec.seeds = {7};
  const auto ws = sampler->make_workspace();
  const graph::MiniBatch chunk = sampler->sample(spec, *ws);
  const graph::NodeScores scores = graph::node_scores(g, graph::CutStrategy::kDegreeSum);
  const pipeline::InferenceCut cut{&scores, graph::CutWeights::kRowMean, 3};
  const auto was_cut = pipeline::cut_inference_chunk(chunk, keep, cut);
  REQUIRE(was_cut.has_value());
  const graph::Block& kept = was_cut->blocks.front();
  CHECK(kept.num_edges() == keep);
  CHECK(kept.num_src == 1 + keep);  // the sources of removed edges are gone from the chunk
  CHECK(was_cut->input_nodes.size() == static_cast<std::size_t>(kept.num_src));
  CHECK_FALSE(pipeline::cut_inference_chunk(chunk, -1, cut).has_value());
  CHECK_FALSE(pipeline::cut_inference_chunk(chunk, hub_edges, cut).has_value());
  // Mean weights over what is left.
  for (int64_t e = 0; e < keep; ++e) CHECK(kept.weights[static_cast<std::size_t>(e)] == 1.0f / static_cast<float>(keep));
  // Every removed source has a degree no lower than any kept one.
  double highest_kept = 0;
  std::vector<bool> is_kept(static_cast<std::size_t>(n), false);
  for (int64_t e = 0; e < keep; ++e) {
    const NodeId u = was_cut->input_nodes[static_cast<std::size_t>(kept.indices[static_cast<std::size_t>(e)])];
    is_kept[static_cast<std::size_t>(u)] = true;
    highest_kept = std::max(highest_kept, (*scores.values)[static_cast<std::size_t>(u)]);
  }
  for (int64_t e = g.offsets()[7]; e < g.offsets()[8]; ++e) {
    const NodeId u = g.indices()[static_cast<std::size_t>(e)];
    if (!is_kept[static_cast<std::size_t>(u)]) CHECK((*scores.values)[static_cast<std::size_t>(u)] >= highest_kept);
  }

  // The whole graph runs with the hub cut, in memory bounded by the allowance.
  const core::Stream stream(core::Device::cpu());
  memory::CachingAllocator probe(core::Device::cpu(), std::size_t{1} << 30);
  const models::OpContext probe_ctx(stream, {}, &probe);
  const models::GnnModel<float> sized(gat, kCols, 3, 1, probe_ctx);
  const std::size_t budget = probe.stats().in_use_bytes + allowance;
  memory::CachingAllocator tight(core::Device::cpu(), budget);
  const models::OpContext ctx(stream, {}, &tight);
  models::GnnModel<float> bounded(gat, kCols, 3, 1, ctx);
  const graph::FeatureStore features = features_for(n);
  CHECK_THROWS_AS(pipeline::infer_layerwise(bounded, g, features, {.chunk_nodes = 1, .parallel_chunks = 1,
                                                                   .chunks = nullptr, .cut = {}, .charge_packed = true, .overlap_bytes = 0, .on_layer = {}}),
                  core::OutOfBudget);
  bounded.release_arrays();
  const pipeline::InferenceCut gat_cut{&scores, graph::CutWeights::kKeep, 3};
  const auto logits = pipeline::infer_layerwise(bounded, g, features,
                                                {.chunk_nodes = 1, .parallel_chunks = 2, .chunks = &plan, .cut = gat_cut, .charge_packed = true, .overlap_bytes = 0, .on_layer = {}});
  CHECK(logits.rows() == n);  // the allocator refused nothing over its budget
  for (float v : logits.flat()) REQUIRE(std::isfinite(v));
}

TEST_CASE("an allowance below one destination row is an OutOfBudget naming memory.limit", "[pipeline][inference][infer]") {
  const graph::CsrGraph g = test::random_graph(100, 300, 2);
  const models::GnnModel<float> model(sage(), kCols, 3, 1);
  const std::size_t one_row = pipeline::inference_chunk_bytes(model, kCols, 100, 1, 0, kCharged);
  REQUIRE(one_row > 0);
  try {
    (void)pipeline::plan_inference_chunks(model, g, kCols, one_row - 1, 64, kCharged);
    FAIL("no error");
  } catch (const core::OutOfBudget& e) {
    CHECK_THAT(e.message(), Catch::Contains("memory.limit") && Catch::Contains("one destination row"));
  }
}

TEST_CASE("a second packed chunk is charged while it fits overlap_bytes and given up once it would not",
          "[pipeline][inference][infer]") {
  const NodeId n = 2000;
  const graph::CsrGraph g = test::random_graph(n, 5000, 4);
  const graph::FeatureStore features = features_for(n);
  const core::Stream stream(core::Device::cpu());
  models::ModelOptions o = sage(2);
  o.hidden = 64;  // layer 1's chunks (64 columns) pack far larger than layer 0's (6)
  constexpr int kChunk = 100;
  // The packed bytes' size class of every chunk of layer 0 (the widest of that layer).
  const auto sampler = samplers::make_inference_sampler(g, graph::BlockNorm::kMean, kChunk);
  const auto workspace = sampler->make_workspace();
  std::size_t layer0_class = 0;
  for (const auto& spec : sampler->plan_epoch(0)) {
    const graph::MiniBatch chunk = sampler->sample(spec, *workspace);
    layer0_class = std::max(layer0_class, memory::CachingAllocator::size_class(pipeline::BatchLayout::of(chunk, kCols).total_bytes));
  }
  struct Result {
    models::Matrix<float> logits;
    std::size_t peak = 0;
  };
  const auto infer = [&](bool charge, std::size_t overlap) {
    memory::CachingAllocator allocator(core::Device::cpu(), std::size_t{1} << 30);
    const models::OpContext ctx(stream, {}, &allocator);
    models::GnnModel<float> model(o, kCols, 4, 2, ctx);
    Result r;
    r.logits = pipeline::infer_layerwise(model, g, features,
                                         {.chunk_nodes = kChunk, .parallel_chunks = 2, .chunks = nullptr, .cut = {},
                                          .charge_packed = charge, .overlap_bytes = overlap, .on_layer = {}});
    r.peak = allocator.stats().peak_in_use_bytes;
    return r;
  };
  const Result none = infer(false, 0), one = infer(true, 0);
  const std::size_t packed_max = one.peak - none.peak;  // the one array, grown to the largest chunk
  REQUIRE(packed_max > layer0_class);
  const Result below = infer(true, 1), all = infer(true, std::size_t{1} << 40), mid = infer(true, layer0_class);
  // Which array a chunk is packed into changes memory, never results.
  for (const Result* r : {&one, &below, &all, &mid}) CHECK(std::ranges::equal(r->logits.flat(), none.logits.flat()));
  CHECK(below.peak == one.peak);  // no chunk fits 1 byte: the second array is never taken
  CHECK(all.peak > one.peak);     // the odd chunks' array beside the even chunks'
  CHECK(all.peak - one.peak <= packed_max);
  // Layer 0's odd chunks fit the second array; layer 1's first odd chunk gives it up.
  CHECK(mid.peak > one.peak);
  CHECK(mid.peak <= one.peak + layer0_class);
}

TEST_CASE("layer-wise inference with the outputs in the model's memory gives the host path's logits bitwise",
          "[pipeline][inference]") {
  // device_outputs: every chunk through the chunk runner (here on the CPU backend, whose device
  // memory is the host's, charged to the allocator), layers after the first gathering their rows
  // from the previous layer's outputs there. The same rows and the same layer arithmetic: the
  // same logits, for float32 and float16 features, on a budget of exactly what it plans. GAT's host
  // path transforms each row once (its first chunk's fresh rows in one product), the device path
  // every chunk's sources: the products group rows otherwise, so their last bits may differ.
  const NodeId n = 900;
  const graph::CsrGraph g = test::random_graph(n, 4000, 6);
  const core::Stream stream(core::Device::cpu());
  for (const graph::FeatureStore& features : {features_for(n), features_for(n).converted(graph::FeatureDType::kFloat16)}) {
    for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat}) {
      INFO("model " << models::to_string(type) << ", features " << graph::to_string(features.dtype()));
      models::ModelOptions o = sage(3);
      o.type = type;
      o.hidden = 16;
      o.heads = 2;
      const models::GnnModel<float> host_model(o, kCols, 4, 3);
      models::GnnModel<float> reference(o, kCols, 4, 3);
      std::vector<std::vector<float>> host_layers;
      const auto expected = pipeline::infer_layerwise(
          reference, g, features,
          {.chunk_nodes = 64, .parallel_chunks = 2, .chunks = nullptr, .cut = {}, .charge_packed = false,
           .overlap_bytes = 0, .device_outputs = false,
           .on_layer = [&](std::size_t, const models::Matrix<float>& y) {
             host_layers.emplace_back(y.flat().begin(), y.flat().end());
           }});
      // The allocator's budget: what the model holds, the activation arrays and the chunk arrays
      // of the largest chunk, nothing more.
      memory::CachingAllocator probe(core::Device::cpu(), std::size_t{1} << 30);
      const models::OpContext probe_ctx(stream, {}, &probe);
      const models::GnnModel<float> sized(o, kCols, 4, 3, probe_ctx);
      const auto offsets = g.offsets();
      int64_t widest_chunk_edges = 0;
      for (NodeId b = 0; b < n; b += 64) {
        const NodeId e = std::min<NodeId>(n, b + 64);
        widest_chunk_edges = std::max<int64_t>(widest_chunk_edges, offsets[static_cast<std::size_t>(e)] -
                                                                       offsets[static_cast<std::size_t>(b)]);
      }
      const std::size_t budget =
          probe.stats().in_use_bytes + pipeline::device_outputs_bytes(sized, n) +
          pipeline::inference_chunk_bytes(sized, kCols, n, 64, pipeline::inference_block_edges(sized, 64, widest_chunk_edges),
                                          pipeline::InferenceArrays::kDeviceOutputs);
      memory::CachingAllocator allocator(core::Device::cpu(), budget);
      const models::OpContext ctx(stream, {}, &allocator);
      models::GnnModel<float> model(o, kCols, 4, 3, ctx);
      model.params().copy_values_from(host_model.params(), stream);
      pipeline::InferenceWorkspace workspace;
      std::vector<std::vector<float>> device_layers;
      const pipeline::LayerwiseInferenceOptions on_device{
          .chunk_nodes = 64, .parallel_chunks = 2, .chunks = nullptr, .cut = {}, .charge_packed = false,
          .overlap_bytes = 0, .device_outputs = true,
          .on_layer = [&](std::size_t, const models::Matrix<float>& y) {
            device_layers.emplace_back(y.flat().begin(), y.flat().end());
          }};
      const auto got = pipeline::infer_layerwise(model, g, features, on_device, workspace);
      REQUIRE(device_layers.size() == host_layers.size());
      if (type == models::ModelType::kGat) {
        for (std::size_t l = 0; l < host_layers.size(); ++l) {
          CHECK(test::relative_difference<float>(device_layers[l], host_layers[l]) <= 1e-6);
        }
      } else {
        CHECK(std::ranges::equal(got.flat(), expected.flat()));
        for (std::size_t l = 0; l < host_layers.size(); ++l) CHECK(device_layers[l] == host_layers[l]);
      }
      // A second call (a run's next evaluation) reuses the workspace's arrays: nothing grows.
      const std::size_t held = allocator.stats().in_use_bytes;
      const auto again = pipeline::infer_layerwise(model, g, features, on_device, workspace);
      CHECK(std::ranges::equal(again.flat(), got.flat()));
      CHECK(allocator.stats().in_use_bytes == held);
    }
  }
}
