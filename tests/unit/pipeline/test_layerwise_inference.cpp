#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;

using test::random_graph;
using test::fingerprint;
using test::vec;

namespace {

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
    models::ModelOptions o;
    o.type = type;
    o.layers = 3;
    o.hidden = 8;
    o.heads = 2;
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
