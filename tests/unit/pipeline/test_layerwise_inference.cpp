#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;

using test::random_graph;
using test::fingerprint;
using test::vec;

namespace {

// A model of `layers` layers of `hidden` (GAT: 2 heads).
models::ModelOptions model_options(models::ModelType type, int layers, int hidden) {
  models::ModelOptions o;
  o.type = type;
  o.layers = layers;
  o.hidden = hidden;
  o.heads = 2;
  return o;
}

pipeline::LayerwiseInferenceOptions chunked(int chunk_nodes, int parallel) {
  pipeline::LayerwiseInferenceOptions o;
  o.chunk_nodes = chunk_nodes;
  o.parallel_chunks = parallel;
  return o;
}

}  // namespace

TEST_CASE("layer-wise inference in chunks equals a full-graph forward without dropout", "[pipeline][inference][tsan]") {
  const NodeId n = 157;
  const graph::CsrGraph g = random_graph(n, 600, 4);  // some nodes have no neighbors
  core::Rng rng(5, {});
  std::vector<float> x(static_cast<std::size_t>(n) * 6);
  for (float& v : x) v = 2 * rng.uniform() - 1;
  const graph::FeatureStore features(graph::HostArray<float>(x), n, 6);
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat}) {
    models::ModelOptions o = model_options(type, 3, 8);
    o.dropout = 0.5;  // off in inference
    models::GnnModel<float> model(o, 6, 4, 11);
    const graph::Block full = graph::full_graph_block(g, model.block_norm());
    const std::vector<const graph::Block*> blocks(3, &full);
    const auto logits = model.forward(blocks, models::MatrixView<const float>{x.data(), n, 6}, {}, false, {});
    const std::vector<float> expected(logits.data, logits.data + logits.rows * logits.cols);
    for (int chunk : {1, 10, 64, 1000}) {
      for (int parallel : {1, 3}) {
        INFO("model " << models::to_string(type) << ", chunk " << chunk << ", parallel " << parallel);
        const auto got = pipeline::infer_layerwise(model, g, features, chunked(chunk, parallel));
        REQUIRE(got.rows() == n);
        REQUIRE(got.cols() == 4);
        double worst = 0;
        for (std::size_t i = 0; i < expected.size(); ++i) {
          REQUIRE(std::isfinite(got.flat()[i]));
          worst = std::max(worst, static_cast<double>(std::abs(got.flat()[i] - expected[i])) / (1 + std::abs(expected[i])));
        }
        CHECK(worst < 1e-5);
      }
    }
  }
}

TEST_CASE("layer-wise inference reads sparse features' CSR form with the dense rows' logits", "[pipeline][inference]") {
  const NodeId n = 157;
  const int64_t cols = 96;
  const graph::CsrGraph g = random_graph(n, 600, 4);
  core::Rng rng(7, {});
  std::vector<float> x(static_cast<std::size_t>(n * cols));
  for (NodeId v = 0; v < n; ++v) {
    for (int k = 0; k < 6; ++k) x[static_cast<std::size_t>(v * cols) + rng.below(cols)] = 2 * rng.uniform() - 1;
  }
  const graph::FeatureStore features(graph::HostArray<float>(x), n, cols);
  const models::MatrixView<const float> dense{x.data(), n, cols};
  const int64_t nnz = *models::cpu::sparse_nonzeros<float>(dense);
  std::vector<int64_t> buffer(models::cpu::sparse_rows_bytes(n, nnz, sizeof(float)) / 8 + 1);
  const models::SparseRowsView<float> csr =
      models::cpu::sparse_rows<float>(dense, nnz, std::as_writable_bytes(std::span<int64_t>(buffer)));
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kGat, models::ModelType::kSage}) {
    models::GnnModel<float> model(model_options(type, 2, 8), cols, 4, 11);
    for (int chunk : {1, 10, 1000}) {
      INFO("model " << models::to_string(type) << ", chunk " << chunk);
      const auto expected = pipeline::infer_layerwise(model, g, features, chunked(chunk, 2));
      pipeline::LayerwiseInferenceOptions sparse = chunked(chunk, 2);
      sparse.sparse_features = &csr;
      const auto got = pipeline::infer_layerwise(model, g, features, sparse);
      REQUIRE(got.size() == expected.size());
      double worst = 0;
      for (int64_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(got.flat()[i] - expected.flat()[i])) /
                                    (1 + std::abs(expected.flat()[i])));
      }
      CHECK(worst < 1e-5);
      // SAGE aggregates its input: it reads the dense rows, bitwise as without the CSR form.
      if (type == models::ModelType::kSage) CHECK(worst == 0);
    }
  }
}

TEST_CASE("sharded layer-wise inference computes its run of chunks and gives one process's outputs bitwise",
          "[pipeline][inference][shard]") {
  // Each of 3 shards runs alone; its share_rows stands in for the ranks' exchange, filling the
  // other shards' rows from the unsharded run's outputs of that layer (and checking its own rows
  // against them first).
  const NodeId n = 157;
  const graph::CsrGraph g = random_graph(n, 600, 4);
  core::Rng rng(7, {});
  std::vector<float> x(static_cast<std::size_t>(n) * 6);
  for (float& v : x) v = 2 * rng.uniform() - 1;
  const graph::FeatureStore features(graph::HostArray<float>(x), n, 6);
  models::ModelOptions o;
  o.layers = 3;
  o.hidden = 8;
  o.heads = 2;
  // GAT transforms every row of a layer before its chunks: on every shard alike.
  for (const auto type : {models::ModelType::kSage, models::ModelType::kGat}) {
    INFO("model " << models::to_string(type));
    o.type = type;
    models::GnnModel<float> model(o, 6, 4, 11);
    std::vector<models::Matrix<float>> layers;  // the unsharded run's outputs, per layer
    pipeline::LayerwiseInferenceOptions whole = chunked(10, 2);
    whole.on_layer = [&](std::size_t, const models::Matrix<float>& y) {
      layers.emplace_back(y.rows(), y.cols());
      std::copy(y.flat().begin(), y.flat().end(), layers.back().flat().begin());
    };
    const auto expected = pipeline::infer_layerwise(model, g, features, whole);
    for (int shards : {2, 3, 20}) {  // 20 shards for 16 chunks: some shards have none
      std::vector<int64_t> own_rows(static_cast<std::size_t>(shards), 0);
      for (int shard = 0; shard < shards; ++shard) {
        INFO("shard " << shard << " of " << shards);
        std::size_t layer = 0;
        pipeline::LayerwiseInferenceOptions mine = chunked(10, 2);
        mine.shard = shard;
        mine.shards = shards;
        mine.share_rows = [&](models::Matrix<float>& out, std::span<const int64_t> offsets) {
          REQUIRE(offsets.size() == static_cast<std::size_t>(shards) + 1);
          CHECK(offsets.front() == 0);
          CHECK(offsets.back() == n);
          CHECK(std::is_sorted(offsets.begin(), offsets.end()));
          const models::Matrix<float>& ref = layers.at(layer++);
          const auto cols = static_cast<std::size_t>(out.cols());
          const auto begin = static_cast<std::size_t>(offsets[static_cast<std::size_t>(shard)]) * cols;
          const auto end = static_cast<std::size_t>(offsets[static_cast<std::size_t>(shard) + 1]) * cols;
          own_rows[static_cast<std::size_t>(shard)] = offsets[static_cast<std::size_t>(shard) + 1] - offsets[static_cast<std::size_t>(shard)];
          CHECK(std::equal(out.flat().begin() + static_cast<std::ptrdiff_t>(begin),
                           out.flat().begin() + static_cast<std::ptrdiff_t>(end),
                           ref.flat().begin() + static_cast<std::ptrdiff_t>(begin)));
          for (std::size_t i = 0; i < out.flat().size(); ++i) {
            if (i < begin || i >= end) out.flat()[i] = ref.flat()[i];
          }
        };
        const auto got = pipeline::infer_layerwise(model, g, features, mine);
        CHECK(layer == 3);
        CHECK(std::equal(got.flat().begin(), got.flat().end(), expected.flat().begin()));
      }
      CHECK(std::accumulate(own_rows.begin(), own_rows.end(), int64_t{0}) == n);
    }
  }
  pipeline::LayerwiseInferenceOptions unshared = chunked(10, 2);
  unshared.shards = 2;
  models::GnnModel<float> model(o, 6, 4, 11);
  CHECK_THROWS_WITH(pipeline::infer_layerwise(model, g, features, unshared), Catch::Contains("sharding needs share_rows"));
}

namespace {

// The same values bit for bit.
bool same_bits(const models::Matrix<float>& a, const models::Matrix<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("layer-wise inference keeps its sampled chunks for later layers and calls, with the same logits bitwise",
          "[pipeline][inference]") {
  const NodeId n = 157;
  const graph::CsrGraph g = random_graph(n, 600, 4);
  core::Rng rng(9, {});
  std::vector<float> x(static_cast<std::size_t>(n) * 6);
  for (float& v : x) v = 2 * rng.uniform() - 1;
  const graph::FeatureStore features(graph::HostArray<float>(x), n, 6);
  for (const bool device_outputs : {false, true}) {
    for (const auto type : {models::ModelType::kGcn, models::ModelType::kGat}) {
      INFO("model " << models::to_string(type) << ", device outputs " << device_outputs);
      models::GnnModel<float> model(model_options(type, 3, 8), 6, 4, 11);
      pipeline::LayerwiseInferenceOptions o = chunked(10, 3);  // 16 chunks, windows of 3
      o.device_outputs = device_outputs;
      const auto expected = pipeline::infer_layerwise(model, g, features, o);

      // Every chunk kept: sampled once for all three layers, and not at all by the next call.
      pipeline::InferenceWorkspace kept;
      o.cache_bytes = std::size_t{1} << 30;
      CHECK(same_bits(pipeline::infer_layerwise(model, g, features, o, kept), expected));
      CHECK(kept.sampled_chunks() == 16);
      CHECK(kept.cached_chunks() == 16);
      const std::size_t all = kept.cached_bytes();
      CHECK(all > 0);
      CHECK(same_bits(pipeline::infer_layerwise(model, g, features, o, kept), expected));
      CHECK(kept.sampled_chunks() == 16);

      // Room for some chunks: those are kept (in plan order), the others sampled each layer.
      pipeline::InferenceWorkspace some;
      o.cache_bytes = all / 2;
      CHECK(same_bits(pipeline::infer_layerwise(model, g, features, o, some), expected));
      const std::size_t held = some.cached_chunks();
      CHECK(held > 0);
      CHECK(held < 16);
      CHECK(some.cached_bytes() <= all / 2);
      const int64_t first_call = some.sampled_chunks();
      CHECK(first_call > 16);
      CHECK(first_call < 3 * 16);
      CHECK(same_bits(pipeline::infer_layerwise(model, g, features, o, some), expected));
      CHECK(some.cached_chunks() == held);
      CHECK(some.sampled_chunks() - first_call < first_call);

      // Other chunks (another chunk size) start over; no cache gives up what was kept.
      o.chunk_nodes = 64;
      o.cache_bytes = std::size_t{1} << 30;
      const auto wider = pipeline::infer_layerwise(model, g, features, o, kept);
      CHECK(kept.cached_chunks() == 3);
      CHECK(kept.sampled_chunks() == 16 + 3);
      double worst = 0;
      for (int64_t i = 0; i < wider.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(wider.flat()[i] - expected.flat()[i])) /
                                    (1 + std::abs(expected.flat()[i])));
      }
      CHECK(worst < 1e-5);
      o.cache_bytes = 0;
      pipeline::infer_layerwise(model, g, features, o, kept);
      CHECK(kept.cached_chunks() == 0);
      CHECK(kept.cached_bytes() == 0);
      CHECK(kept.sampled_chunks() == 16 + 3 + 3 * 3);
    }
  }
}
