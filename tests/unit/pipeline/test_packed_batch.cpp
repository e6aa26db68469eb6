#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "model_helpers.hpp"

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
