#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "model_helpers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::HostArray;
using graph::NodeId;

TEST_CASE("a packed batch carries its input nodes' global ids beside their feature rows", "[pipeline][packed]") {
  core::Rng rng(3, {1});
  graph::MiniBatch batch;
  batch.blocks.push_back(test::random_block(rng, 5, 9, 3, true));
  batch.blocks.push_back(test::random_block(rng, 2, 5, 3, true));
  const std::vector<NodeId> input{40, 3, 17, 8, 100, 2, 55, 9, 71};
  batch.input_nodes = HostArray<NodeId>(input);
  batch.targets = HostArray<NodeId>(std::vector<NodeId>{40, 3});
  batch.loss_rows = HostArray<int32_t>(std::vector<int32_t>{0, 1});
  const int64_t n = 101, f = 3;
  std::vector<float> x(static_cast<std::size_t>(n * f));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const graph::FeatureStore features(HostArray<float>(x), n, f);
  std::vector<int32_t> labels(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 7);

  const pipeline::BatchLayout layout = pipeline::BatchLayout::of(batch, f);
  CHECK(layout.input_nodes.bytes == input.size() * sizeof(NodeId));
  CHECK(layout.input_nodes.offset % 256 == 0);
  std::vector<uint64_t> storage((layout.total_bytes + 7) / 8);  // 8-byte aligned, as the int64 sections need
  auto* bytes = reinterpret_cast<std::byte*>(storage.data());
  pipeline::pack_batch(batch, features, labels, layout, bytes);
  const pipeline::PackedBatchView view = pipeline::PackedBatchView::of(layout, nullptr, bytes);
  CHECK(std::vector<NodeId>(view.input_nodes.begin(), view.input_nodes.end()) == input);
  REQUIRE(view.features.rows == static_cast<int64_t>(input.size()));
  bool rows_match = true;
  for (std::size_t k = 0; k < input.size(); ++k) {
    for (int64_t c = 0; c < f; ++c) {
      rows_match =
          rows_match && view.features(static_cast<int64_t>(k), c) == x[static_cast<std::size_t>(input[k] * f + c)];
    }
  }
  CHECK(rows_match);
  CHECK(std::vector<int32_t>(view.labels.begin(), view.labels.end()) == std::vector<int32_t>{40 % 7, 3 % 7});
  REQUIRE(view.blocks.size() == 2);
  CHECK(view.blocks[1].num_src == 5);
}

TEST_CASE("the layout from per-block edge counts is the layout of the cut batch", "[pipeline][packed]") {
  // The memory governor sizes cut candidates without building them: every section must match.
  const graph::CsrGraph g = test::random_graph(300, 2400, 5);
  for (const graph::BlockNorm norm : {graph::BlockNorm::kMean, graph::BlockNorm::kSelfLoops}) {
    const samplers::NeighborSampler sampler(g, test::all_nodes(300), {.fanouts = {6, 4}, .batch_size = 40, .seed = 3, .norm = norm});
    auto ws = sampler.make_workspace();
    const graph::MiniBatch batch = sampler.sample(sampler.plan_epoch(1).front(), *ws);
    const graph::EdgeCutPlan plan(batch, graph::NodeScores{});
    for (const int64_t k : {int64_t{0}, int64_t{1}, plan.removable_edges() / 2, plan.removable_edges()}) {
      INFO("norm " << static_cast<int>(norm) << ", " << k << " edges removed");
      const pipeline::BatchLayout sized = pipeline::BatchLayout::of(batch, 7, plan.block_edges_after(k));
      const pipeline::BatchLayout built = pipeline::BatchLayout::of(plan.cut(k).batch, 7);
      CHECK(sized.total_bytes == built.total_bytes);
      REQUIRE(sized.blocks.size() == built.blocks.size());
      for (std::size_t b = 0; b < sized.blocks.size(); ++b) {
        CHECK(sized.blocks[b].indices.bytes == built.blocks[b].indices.bytes);
        CHECK(sized.blocks[b].weights.bytes == built.blocks[b].weights.bytes);
        CHECK(sized.blocks[b].t_indices.bytes == built.blocks[b].t_indices.bytes);
        CHECK(sized.blocks[b].t_edges.bytes == built.blocks[b].t_edges.bytes);
      }
    }
  }
}

TEST_CASE("a float32 layout widens a 16-bit store's rows, a 16-bit layout needs its own dtype", "[pipeline][packed]") {
  // Layer-wise inference packs float32 chunks whatever the store holds (its first layer reads
  // float32 rows on either backend); training packs the store's own dtype.
  graph::MiniBatch batch;
  core::Rng rng(5, {2});
  batch.blocks.push_back(test::random_block(rng, 2, 4, 2, true));
  const std::vector<NodeId> input{6, 0, 3, 5};
  batch.input_nodes = HostArray<NodeId>(input);
  batch.targets = HostArray<NodeId>(std::vector<NodeId>{6, 0});
  batch.loss_rows = HostArray<int32_t>(std::vector<int32_t>{0, 1});
  const int64_t n = 7, f = 3;
  std::vector<float> x(static_cast<std::size_t>(n * f));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 0.7f;
  const graph::FeatureStore wide(HostArray<float>(x), n, f);
  const graph::FeatureStore half = wide.converted(graph::FeatureDType::kFloat16);

  const pipeline::BatchLayout layout = pipeline::BatchLayout::of(batch, f);
  std::vector<uint64_t> storage((layout.total_bytes + 7) / 8);
  auto* bytes = reinterpret_cast<std::byte*>(storage.data());
  pipeline::pack_batch(batch, half, {}, layout, bytes);
  const pipeline::PackedBatchView view = pipeline::PackedBatchView::of(layout, nullptr, bytes);
  REQUIRE(view.features.data != nullptr);
  std::vector<float> expected(input.size() * static_cast<std::size_t>(f));
  half.gather(input, expected);  // the fp16 values, widened
  CHECK(std::vector<float>(view.features.data, view.features.data + expected.size()) == expected);
  std::vector<float> originals(expected.size());
  wide.gather(input, originals);
  CHECK(expected != originals);  // fp16 rounded them: the packed rows are the 16-bit store's

  const pipeline::BatchLayout narrow =
      pipeline::BatchLayout::of(batch, f, std::span<const int32_t>{}, graph::FeatureDType::kBFloat16);
  std::vector<uint64_t> narrow_storage((narrow.total_bytes + 7) / 8);
  CHECK_THROWS_WITH(pipeline::pack_batch(batch, half, {}, narrow, reinterpret_cast<std::byte*>(narrow_storage.data())),
                    Catch::Contains("the features are float16, the layout's bfloat16"));
}
