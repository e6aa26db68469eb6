#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "datasets.hpp"
#include "finite_difference.hpp"
#include "model_gradient.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/layers/gat_layer.hpp"
#include "gnnpipe/models/layers/gcn_layer.hpp"
#include "gnnpipe/models/layers/sage_layer.hpp"
#include "model_helpers.hpp"
#include "reference_layers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using models::MatrixView;

namespace {

using test::Reference;
using test::set_transposed;

void expect_transposed(MatrixView<const double> ours, const std::vector<double>& ref, const char* what) {
  INFO(what);
  for (int64_t i = 0; i < ours.rows; ++i)
    for (int64_t o = 0; o < ours.cols; ++o) REQUIRE(ours(i, o) == Approx(ref[static_cast<std::size_t>(o * ours.rows + i)]).margin(1e-6));
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-6));
}

graph::CsrGraph reference_graph(const std::filesystem::path& dir) {
  return test::reference_graph(graph::io::NpzArchive::open(dir / "layers.npz"), 40);
}

template <class LayerT>
void check_layer_against_reference(const char* prefix, graph::BlockNorm norm,
                                   const std::vector<std::pair<std::string, std::string>>& params) {
  GNNPIPE_REQUIRE_REFERENCE(layers_npz, "layers.npz");
  const std::filesystem::path dir = layers_npz.parent_path();
  Reference ref{graph::io::NpzArchive::open(dir / "layers.npz")};
  const graph::Block block = graph::full_graph_block(reference_graph(dir), norm);
  models::ParamStore<double> store;
  LayerT layer(store, 6, 5, 0);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> value = ref.get(std::string(prefix) + ".param." + params[i].second);
    if (store.param(i).rows == 1) {
      std::copy(value.begin(), value.end(), store.value(i).data);
    } else {
      set_transposed(store.value(i), value);
    }
  }
  std::vector<double> x = ref.get("x");
  std::vector<double> y(40 * 5);
  layer.forward(block, MatrixView<const double>{x.data(), 40, 6}, MatrixView<double>{y.data(), 40, 5}, {});
  expect_close(y, ref.get(std::string(prefix) + ".out"), "output");
  const std::vector<double> r = ref.get(std::string(prefix) + ".R");  // loss = sum(out * R)
  std::vector<double> dx(40 * 6);
  store.zero_grad();
  layer.backward(block, MatrixView<const double>{r.data(), 40, 5}, MatrixView<double>{dx.data(), 40, 6});
  expect_close(dx, ref.get(std::string(prefix) + ".grad_x"), "grad_x");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<double> g = ref.get(std::string(prefix) + ".grad." + params[i].second);
    if (store.param(i).rows == 1) {
      expect_close(std::vector<double>(store.grad(i).data, store.grad(i).data + g.size()), g, params[i].first.c_str());
    } else {
      expect_transposed(store.grad(i), g, params[i].first.c_str());
    }
  }
}

}  // namespace

TEST_CASE("GCN layer matches PyG's GCNConv outputs and gradients (reference/layers.npz)", "[models][layers]") {
  check_layer_against_reference<models::GcnLayer<double>>(
      "gcn", graph::BlockNorm::kGcn, {{"weight", "lin.weight"}, {"bias", "bias"}});
}

TEST_CASE("GCN layer aggregating first ((A x) W) matches PyG's GCNConv outputs and parameter gradients",
          "[models][layers]") {
  GNNPIPE_REQUIRE_REFERENCE(layers_npz, "layers.npz");
  const std::filesystem::path dir = layers_npz.parent_path();
  Reference ref{graph::io::NpzArchive::open(dir / "layers.npz")};
  const graph::Block block = graph::full_graph_block(reference_graph(dir), graph::BlockNorm::kGcn);
  models::ParamStore<double> store;
  models::GcnLayer<double> layer(store, 6, 5, 0, models::OpContext::host(), /*aggregate_first=*/true);
  CHECK(layer.aggregate_first());
  set_transposed(store.value(0), ref.get("gcn.param.lin.weight"));
  const std::vector<double> bias = ref.get("gcn.param.bias");
  std::copy(bias.begin(), bias.end(), store.value(1).data);
  std::vector<double> x = ref.get("x");
  std::vector<double> y(40 * 5);
  layer.forward(block, MatrixView<const double>{x.data(), 40, 6}, MatrixView<double>{y.data(), 40, 5}, {});
  expect_close(y, ref.get("gcn.out"), "output");
  const std::vector<double> r = ref.get("gcn.R");
  store.zero_grad();
  layer.backward(block, MatrixView<const double>{r.data(), 40, 5}, MatrixView<double>{nullptr, 40, 6});
  expect_transposed(store.grad(0), ref.get("gcn.grad.lin.weight"), "weight");
  const std::vector<double> g = ref.get("gcn.grad.bias");
  expect_close(std::vector<double>(store.grad(1).data, store.grad(1).data + g.size()), g, "bias");
  // Asked for one (a layer-wise chunk's backward), it forms the input gradient A^T (dy W^T): PyG's.
  std::vector<double> dx(40 * 6);
  layer.backward(block, MatrixView<const double>{r.data(), 40, 5}, MatrixView<double>{dx.data(), 40, 6});
  expect_close(dx, ref.get("gcn.grad_x"), "grad_x");
}

TEST_CASE("GCN layer aggregating first reuses A x only for a forward with the same nonzero tag, input and block",
          "[models][layers]") {
  core::Rng rng(3, {});
  const graph::Block block = graph::full_graph_block(test::random_graph(50, 300, 4), graph::BlockNorm::kGcn);
  const graph::Block other = graph::full_graph_block(test::random_graph(50, 200, 5), graph::BlockNorm::kGcn);
  models::ParamStore<double> store;
  models::GcnLayer<double> layer(store, 4, 6, 0, models::OpContext::host(), /*aggregate_first=*/true);
  for (double& w : store.values()) w = 2 * rng.uniform_double() - 1;
  auto x = test::random_matrix(rng, 50, 4);
  const auto forward = [&](const graph::Block& b, uint64_t tag) {
    std::vector<double> y(50 * 6);
    models::LayerContext context;
    context.input_tag = tag;
    layer.forward(b, x.cview(), MatrixView<double>{y.data(), 50, 6}, context);
    return y;
  };
  const std::vector<double> first = forward(block, 7);
  // The caller broke its promise (x changed under the same tag): the reused A x shows it.
  for (double& v : x.flat()) v += 1.0;
  CHECK(forward(block, 7) == first);
  const std::vector<double> fresh = forward(block, 8);  // another tag: aggregated again
  CHECK(fresh != first);
  CHECK(forward(block, 0) == fresh);                    // tag 0: always aggregated again
  CHECK(forward(block, 0) == fresh);
  for (double& v : x.flat()) v -= 1.0;
  CHECK(forward(block, 0) == first);                    // ... so the restored x is seen
  CHECK(forward(other, 0) != first);                    // another block
  const std::vector<double> tagged = forward(block, 9);
  CHECK(tagged == first);
  for (double& v : x.flat()) v += 1.0;
  CHECK(forward(other, 9) != tagged);                   // same tag, another block: aggregated again
  CHECK(forward(block, 9) == fresh);
  layer.release_arrays();                               // the governor's trim forgets A x
  for (double& v : x.flat()) v -= 1.0;
  CHECK(forward(block, 9) == first);
}

TEST_CASE("SAGE layer matches PyG's SAGEConv (mean) outputs and gradients (reference/layers.npz)", "[models][layers]") {
  check_layer_against_reference<models::SageLayer<double>>(
      "sage", graph::BlockNorm::kMean, {{"weight_l", "lin_l.weight"}, {"bias", "lin_l.bias"}, {"weight_r", "lin_r.weight"}});
}

TEST_CASE("GAT layer (2 heads x 5, concat) matches PyG's GATConv outputs and gradients (reference/layers.npz)",
          "[models][layers]") {
  GNNPIPE_REQUIRE_REFERENCE(layers_npz, "layers.npz");
  const std::filesystem::path dir = layers_npz.parent_path();
  Reference ref{graph::io::NpzArchive::open(dir / "layers.npz")};
  const graph::Block block = graph::full_graph_block(reference_graph(dir), graph::BlockNorm::kSelfLoops);
  models::ParamStore<double> store;
  models::GatLayer<double> layer(store, models::GatShape{6, 2, 5, true, 0.0, 0.2}, 0);
  set_transposed(store.value(0), ref.get("gat.param.lin.weight"));
  for (std::size_t i : {1u, 2u, 3u}) {
    const std::vector<double> v = ref.get(i == 1 ? "gat.param.att_src" : i == 2 ? "gat.param.att_dst" : "gat.param.bias");
    std::copy(v.begin(), v.end(), store.value(i).data);
  }
  std::vector<double> x = ref.get("x");
  std::vector<double> y(40 * 10);
  layer.forward(block, MatrixView<const double>{x.data(), 40, 6}, MatrixView<double>{y.data(), 40, 10}, {});
  expect_close(y, ref.get("gat.out"), "output");
  const std::vector<double> r = ref.get("gat.R");
  std::vector<double> dx(40 * 6);
  store.zero_grad();
  layer.backward(block, MatrixView<const double>{r.data(), 40, 10}, MatrixView<double>{dx.data(), 40, 6});
  expect_close(dx, ref.get("gat.grad_x"), "grad_x");
  expect_transposed(store.grad(0), ref.get("gat.grad.lin.weight"), "weight");
  const auto flat = [&](std::size_t i) {
    return std::vector<double>(store.grad(i).data, store.grad(i).data + store.grad(i).size());
  };
  expect_close(flat(1), ref.get("gat.grad.att_src"), "att_src");
  expect_close(flat(2), ref.get("gat.grad.att_dst"), "att_dst");
  expect_close(flat(3), ref.get("gat.grad.bias"), "bias");
}

TEST_CASE("a whole model's parameter gradients pass a finite-difference check, dropout included", "[models][layers]") {
  for (models::ModelType type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat,
                                  models::ModelType::kGgnn, models::ModelType::kGaan})
  for (int layers : {1, 2, 3})
  for (double dropout : {0.0, 0.3}) {
    INFO(to_string(type) << " layers " << layers << " dropout " << dropout);
    const auto norm = type == models::ModelType::kGcn    ? graph::BlockNorm::kGcn
                      : type == models::ModelType::kSage ? graph::BlockNorm::kMean
                      : type == models::ModelType::kGgnn ? graph::BlockNorm::kNone
                                                         : graph::BlockNorm::kSelfLoops;
    core::Rng rng(7, {});
    const graph::Block block = graph::full_graph_block(
        graph::CsrGraph::from_coo(30, std::vector<graph::NodeId>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 29, 28, 27},
                                  std::vector<graph::NodeId>{1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 5, 9}),
        norm);
    models::ModelOptions options;
    options.type = type;
    options.layers = layers;
    options.hidden = 4;
    options.dropout = dropout;
    options.heads = 2;
    options.attention_dropout = type == models::ModelType::kGat ? dropout : 0.0;  // GAT: attention dropout too
    options.key_dim = 3;  // GaAN: small attention, value and gate widths
    options.value_dim = 2;
    options.gate_dim = 5;
    options.activation = layers == 3 ? models::Activation::kElu : models::Activation::kRelu;
    models::GnnModel<double> model(options, 5, 3, 11);
    // Random biases too: with zero biases a row of zeros meets ReLU exactly at its kink, where
    // central differences are not a derivative.
    // GaAN's ungated products grow fast over 3 layers: smaller weights keep the loss near 1, where
    // central differences at eps 1e-6 are not dominated by rounding.
    const double scale = type == models::ModelType::kGaan ? 0.5 : 1.0;
    for (double& w : model.params().values()) w = scale * (2 * rng.uniform_double() - 1);
    const auto x = test::random_matrix(rng, 30, 5);
    const auto r = test::random_matrix(rng, 30, 3);
    const std::vector<const graph::Block*> blocks(static_cast<std::size_t>(layers), &block);
    const core::RngKey key = core::rng_key(1, {2});
    std::vector<graph::NodeId> ids(30);  // full graph: row r is node r
    std::iota(ids.begin(), ids.end(), 0);
    const auto check = test::check_model_gradient(model, blocks, x.cview(), ids, r, key);
    INFO("worst index " << check.worst << ": numeric " << check.numeric << ", analytic " << check.analytic);
    CHECK(check.max_error < 1e-6);
  }
}

TEST_CASE("a GCN without input dropout (its first layer aggregating first) passes a finite-difference check",
          "[models][layers]") {
  for (int layers : {1, 2, 3}) {
    INFO("layers " << layers);
    core::Rng rng(9, {});
    const graph::Block block = graph::full_graph_block(test::random_graph(30, 90, 6), graph::BlockNorm::kGcn);
    models::ModelOptions options;
    options.type = models::ModelType::kGcn;
    options.layers = layers;
    options.hidden = 6;        // 4 input columns, widened: the first layer aggregates first
    options.dropout = 0.3;     // on the hidden layers' inputs
    options.input_dropout = 0.0;
    models::GnnModel<double> model(options, 4, 6, 11);  // 6 classes: a 1-layer model also widens
    for (double& w : model.params().values()) w = 2 * rng.uniform_double() - 1;
    const auto x = test::random_matrix(rng, 30, 4);
    const auto r = test::random_matrix(rng, 30, 6);
    const std::vector<const graph::Block*> blocks(static_cast<std::size_t>(layers), &block);
    std::vector<graph::NodeId> ids(30);
    std::iota(ids.begin(), ids.end(), 0);
    const auto check = test::check_model_gradient(model, blocks, x.cview(), ids, r, core::rng_key(1, {2}));
    INFO("worst index " << check.worst << ": numeric " << check.numeric << ", analytic " << check.analytic);
    CHECK(check.max_error < 1e-6);
    // A second forward with the same tag reuses A x: the same logits.
    const auto a = model.forward(blocks, x.cview(), ids, true, core::rng_key(1, {2}), 5);
    const std::vector<double> logits(a.data, a.data + a.size());
    const auto b = model.forward(blocks, x.cview(), ids, true, core::rng_key(1, {2}), 5);
    CHECK(std::vector<double>(b.data, b.data + b.size()) == logits);
  }
}

// Issue #17 item 4: model.hidden as a list gives each hidden layer its own width.
TEST_CASE("per-layer hidden widths shape every layer's weights", "[models][layers]") {
  // The widths every weight matrix (rows > 1) connects, in parameter order.
  const auto widths = [](const models::GnnModel<double>& model) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (std::size_t i = 0; i < model.params().count(); ++i) {
      const auto& p = model.params().param(i);
      if (p.rows > 1) out.emplace_back(p.rows, p.cols);
    }
    return out;
  };
  models::ModelOptions o;
  o.layers = 3;
  o.hidden_widths = {16, 4};
  o.hidden = 16;
  o.type = models::ModelType::kGcn;
  const auto gcn = widths(models::GnnModel<double>(o, 10, 3, 1));
  CHECK(gcn == std::vector<std::pair<int64_t, int64_t>>{{10, 16}, {16, 4}, {4, 3}});
  o.type = models::ModelType::kGat;
  o.heads = 2;
  o.concat_heads = true;
  const auto gat = widths(models::GnnModel<double>(o, 10, 3, 1));
  // GAT weights: in x (heads * channels); hidden layers concatenate their heads (the attention
  // vectors, heads x channels, are in the list too).
  const auto has = [&](int64_t rows, int64_t cols) {
    return std::find(gat.begin(), gat.end(), std::pair<int64_t, int64_t>{rows, cols}) != gat.end();
  };
  CHECK(gat.front() == std::pair<int64_t, int64_t>{10, 32});
  CHECK(has(32, 8));  // layer 1: 2 heads x 16 in, 2 heads x 4 out
  CHECK(has(8, 3));   // the last layer: one head of the 3 classes
  o.hidden_widths = {16};
  CHECK_THROWS_AS(models::GnnModel<double>(o, 10, 3, 1), core::ConfigError);
}
