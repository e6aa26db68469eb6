// model.embedding (issue #17 item 2): a learned [nodes x D] table as the model's input. Its rows
// are gathered by the batch's global node ids, its gradient is the input gradient added back into
// those rows (finite differences in double, through dropout and every model type), nodes outside
// the batch get none, and the table is a parameter like any other (named, N(0, 1) at start).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "model_gradient.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;

namespace {

models::ModelOptions embedding_options(models::ModelType type, int layers, double dropout) {
  models::ModelOptions o;
  o.type = type;
  o.layers = layers;
  o.hidden = 4;
  o.dropout = dropout;
  o.heads = 2;
  o.key_dim = 3;
  o.value_dim = 2;
  o.gate_dim = 5;
  o.embedding = 6;
  return o;
}

graph::Block ring_block(graph::BlockNorm norm) {
  return graph::full_graph_block(
      graph::CsrGraph::from_coo(12, std::vector<graph::NodeId>{0, 1, 2, 3, 4, 5, 6, 7, 8, 11},
                                std::vector<graph::NodeId>{1, 2, 3, 4, 5, 6, 7, 0, 0, 3}),
      norm);
}

}  // namespace

TEST_CASE("a learned embedding is a parameter of nodes x width, drawn N(0, 1)", "[models][embedding]") {
  auto o = embedding_options(models::ModelType::kSage, 2, 0.0);
  o.embedding = 16;
  const models::GnnModel<double> model(o, 0, 3, 5, models::OpContext::host(), 500);
  REQUIRE(model.has_embedding());
  const auto table = model.embedding();
  CHECK(table.rows == 500);
  CHECK(table.cols == 16);
  CHECK(model.params().param(0).name == "embedding.weight");
  CHECK(model.params().param(0).layer == -1);  // weight_decay_first_layer_only leaves it alone
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < table.size(); ++i) {
    sum += table.data[i];
    squares += table.data[i] * table.data[i];
  }
  const double n = static_cast<double>(table.size());
  CHECK(std::abs(sum / n) < 0.05);              // 8000 draws: the mean's std is 0.011
  CHECK(std::abs(squares / n - 1.0) < 0.08);    // the variance's std is 0.016
  // Layer 0 reads the table's width.
  CHECK(model.params().param(1).rows == 16);
}

TEST_CASE("the embedding's gradient passes a finite-difference check for every model type", "[models][embedding]") {
  for (models::ModelType type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat,
                                  models::ModelType::kGgnn, models::ModelType::kGaan})
  for (int layers : {1, 2})
  for (double dropout : {0.0, 0.3}) {
    INFO(to_string(type) << " layers " << layers << " dropout " << dropout);
    const auto norm = type == models::ModelType::kGcn    ? graph::BlockNorm::kGcn
                      : type == models::ModelType::kSage ? graph::BlockNorm::kMean
                      : type == models::ModelType::kGgnn ? graph::BlockNorm::kNone
                                                         : graph::BlockNorm::kSelfLoops;
    const graph::Block block = ring_block(norm);
    // The batch is 12 nodes of a 20-node table, in a scrambled order: rows 12..19 get no gradient.
    const std::vector<graph::NodeId> ids{7, 19, 3, 0, 12, 5, 9, 1, 15, 2, 8, 4};
    models::GnnModel<double> model(embedding_options(type, layers, dropout), 0, 3, 11, models::OpContext::host(), 20);
    core::Rng rng(3, {});
    const double scale = type == models::ModelType::kGaan ? 0.5 : 1.0;
    for (double& w : model.params().values()) w = scale * (2 * rng.uniform_double() - 1);
    const models::Matrix<double> x(12, 0);
    const auto r = test::random_matrix(rng, 12, 3);
    const std::vector<const graph::Block*> blocks(static_cast<std::size_t>(layers), &block);
    const core::RngKey key = core::rng_key(4, {1});
    const auto check = test::check_model_gradient(model, blocks, x.cview(), ids, r, key);
    INFO("worst index " << check.worst << ": numeric " << check.numeric << ", analytic " << check.analytic);
    CHECK(check.max_error < 1e-6);
    // Table rows of nodes outside the batch have exactly zero gradient; the batch's rows do not.
    const auto grad = model.params().grad(0);
    for (graph::NodeId node = 0; node < 20; ++node) {
      const bool in_batch = std::find(ids.begin(), ids.end(), node) != ids.end();
      double norm2 = 0;
      for (int64_t c = 0; c < grad.cols; ++c) norm2 += grad(node, c) * grad(node, c);
      INFO("node " << node);
      // (Every batch node reaches its own output, through a self-loop, a root weight or the GRU;
      // with dropout one could lose all six entries, so only the zeros are checked then.)
      if (!in_batch) {
        CHECK(norm2 == 0);
      } else if (dropout == 0) {
        CHECK(norm2 > 0);
      }
    }
  }
}

TEST_CASE("a node's embedding row feeds the model wherever it sits in the batch", "[models][embedding]") {
  // Without dropout, a batch in another order gives the same logits row for row.
  const graph::Block identity_block = graph::full_graph_block(graph::CsrGraph::from_coo(4, {}, {}), graph::BlockNorm::kMean);
  models::GnnModel<double> model(embedding_options(models::ModelType::kSage, 1, 0.0), 0, 2, 9, models::OpContext::host(), 10);
  const std::vector<const graph::Block*> blocks{&identity_block};
  const models::Matrix<double> x(4, 0);
  const auto take = [&](std::vector<graph::NodeId> ids) {
    const auto y = model.forward(blocks, x.cview(), ids, false, {});
    return std::vector<double>(y.data, y.data + y.size());
  };
  const auto a = take({3, 8, 1, 6});
  const auto b = take({8, 6, 3, 1});
  CHECK(std::vector<double>{a[0], a[1]} == std::vector<double>{b[4], b[5]});  // node 3
  CHECK(std::vector<double>{a[2], a[3]} == std::vector<double>{b[0], b[1]});  // node 8
  // Empty ids: rows 0..3 of the table.
  const auto identity = take({});
  CHECK(identity == take({0, 1, 2, 3}));
}

TEST_CASE("add_rows adds rows into their places and refuses rows outside the matrix", "[models][embedding]") {
  models::Matrix<float> out(4, 2);
  std::fill(out.flat().begin(), out.flat().end(), 1.0f);
  const models::Matrix<float> src(2, 2, {1, 2, 3, 4});
  const std::vector<int32_t> rows{3, 1};
  models::ops::add_rows<float>(models::OpContext::host(), src.cview(), out.view(), rows);
  CHECK(std::vector<float>(out.flat().begin(), out.flat().end()) == std::vector<float>{1, 1, 4, 5, 1, 1, 2, 3});
  const std::vector<int32_t> bad{0, 4};
  CHECK_THROWS_AS(models::ops::add_rows<float>(models::OpContext::host(), src.cview(), out.view(), bad), core::DataError);
}

TEST_CASE("a model with an embedding refuses feature columns and needs the table's rows", "[models][embedding]") {
  const auto o = embedding_options(models::ModelType::kGcn, 2, 0.0);
  CHECK_THROWS_AS(models::GnnModel<float>(o, 5, 3, 1, models::OpContext::host(), 10), core::Error);
  CHECK_THROWS_AS(models::GnnModel<float>(o, 0, 3, 1, models::OpContext::host(), 0), core::Error);
}
