// SharedInput (models/layers/layer_input.hpp; issue #41's speed): views of one batch that differ in
// their blocks and a factor per input row share the first layer's dropped input, its product x W
// and one x^T G, and give the logits and gradients of forwards on the scaled rows, dense and
// sparse, for GCN and GAT; models whose first layer reads its input otherwise do not share.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/layers/layer_input.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using models::Matrix;

namespace {

constexpr int64_t kNodes = 48, kFeatures = 96, kClasses = 3;

// A graph keeping each of 4 random in-edges per node with probability `keep` (a view's edges).
graph::Block view_block(core::Rng& rng, double keep, graph::BlockNorm norm) {
  std::vector<NodeId> src, dst;
  for (NodeId v = 0; v < kNodes; ++v) {
    for (int k = 0; k < 4; ++k) {
      const auto u = static_cast<NodeId>(rng.below(kNodes));
      if (rng.uniform_double() < keep) src.push_back(u), dst.push_back(v);
    }
  }
  return graph::full_graph_block(graph::CsrGraph::from_coo(kNodes, src, dst), norm);
}

// Features `density` non-zero (sparse enough for the CPU's CSR path at 0.03, dense at 1).
Matrix<double> features(core::Rng& rng, double density) {
  Matrix<double> x(kNodes, kFeatures);
  for (double& v : x.flat()) v = rng.uniform_double() < density ? rng.uniform_double() * 2 - 1 : 0.0;
  return x;
}

// MH-Aug's row factors: masked rows 0, the others N / (N - masked).
std::vector<float> factors(core::Rng& rng, double masked) {
  std::vector<float> f(kNodes);
  int64_t zero = 0;
  for (float& v : f) zero += (v = rng.uniform_double() < masked ? 0.0f : 1.0f) == 0.0f ? 1 : 0;
  const auto scale = static_cast<float>(static_cast<double>(kNodes) / static_cast<double>(kNodes - zero));
  for (float& v : f) v *= scale;
  return f;
}

Matrix<double> scaled(const Matrix<double>& x, const std::vector<float>& f) {
  Matrix<double> y(x.rows(), x.cols());
  for (int64_t r = 0; r < x.rows(); ++r) {
    for (int64_t c = 0; c < x.cols(); ++c) y.view()(r, c) = x.cview()(r, c) * f[static_cast<std::size_t>(r)];
  }
  return y;
}

Matrix<double> copy_of(models::MatrixView<const double> m) {
  Matrix<double> out(m.rows, m.cols);
  std::copy(m.flat().begin(), m.flat().end(), out.flat().begin());
  return out;
}

models::ModelOptions options_of(models::ModelType type) {
  models::ModelOptions o;
  o.type = type;
  o.layers = 2;
  o.hidden = 8;
  o.dropout = 0.4;
  o.heads = 2;
  return o;
}

graph::BlockNorm norm_of(models::ModelType type) {
  return type == models::ModelType::kGcn    ? graph::BlockNorm::kGcn
         : type == models::ModelType::kSage ? graph::BlockNorm::kMean
                                            : graph::BlockNorm::kSelfLoops;
}

}  // namespace

TEST_CASE("views sharing the first layer give the logits and gradients of forwards on their scaled rows",
          "[models][shared_input]") {
  const auto type = GENERATE(models::ModelType::kGcn, models::ModelType::kGat);
  const double density = GENERATE(0.03, 1.0);
  const bool sparse_path = GENERATE(true, false);
  INFO("model " << static_cast<int>(type) << ", density " << density << ", CSR path " << sparse_path);
  core::Rng rng(23, {});
  const Matrix<double> x = features(rng, density);
  std::vector<NodeId> ids(kNodes);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(1000 + 7 * i);
  // Original (no factors), previous, new: the order of AugmentedStep (the new view twice).
  const graph::Block original = view_block(rng, 1.0, norm_of(type));
  const graph::Block previous = view_block(rng, 0.6, norm_of(type));
  const graph::Block next = view_block(rng, 0.4, norm_of(type));
  const std::vector<float> f_prev = factors(rng, 0.2), f_next = factors(rng, 0.5);
  std::vector<Matrix<double>> dlogits;
  for (int v = 0; v < 3; ++v) dlogits.push_back(test::random_matrix(rng, kNodes, kClasses));
  const core::RngKey key = core::rng_key(4, {1, 2});

  const models::OpContext host;
  const models::OpContext ctx(host.stream(), models::OpOptions{.sparse_input = sparse_path});
  models::GnnModel<double> reference(options_of(type), kFeatures, kClasses, 9, ctx);
  models::GnnModel<double> model(options_of(type), kFeatures, kClasses, 9, ctx);
  REQUIRE(model.shares_first_layer());

  const auto blocks = [](const graph::Block& b) { return std::vector<const graph::Block*>(2, &b); };
  const Matrix<double> x_prev = scaled(x, f_prev), x_next = scaled(x, f_next);
  std::vector<Matrix<double>> want;
  reference.params().zero_grad();
  want.push_back(copy_of(reference.forward(blocks(original), x.cview(), ids, true, key)));
  CHECK(reference.first_input_sparse() == (sparse_path && density < 0.1));
  reference.backward(blocks(original), dlogits[0].cview());
  want.push_back(copy_of(reference.forward(blocks(next), x_next.cview(), ids, true, key)));
  want.push_back(copy_of(reference.forward(blocks(previous), x_prev.cview(), ids, true, key)));
  reference.backward(blocks(previous), dlogits[1].cview());
  reference.forward(blocks(next), x_next.cview(), ids, true, key);
  reference.backward(blocks(next), dlogits[2].cview());

  models::SharedInput<double> shared;
  std::vector<Matrix<double>> got;
  model.params().zero_grad();
  for (int step = 0; step < 2; ++step) {  // a second step reuses the arrays and forgets the first
    if (step == 1) model.params().zero_grad();
    shared.reset();
    got.clear();
    got.push_back(copy_of(model.forward_view(blocks(original), x.cview(), ids, key, shared, {})));
    CHECK(model.first_input_sparse() == (sparse_path && density < 0.1));
    model.backward(blocks(original), dlogits[0].cview());
    got.push_back(copy_of(model.forward_view(blocks(next), x.cview(), ids, key, shared, f_next)));
    got.push_back(copy_of(model.forward_view(blocks(previous), x.cview(), ids, key, shared, f_prev)));
    model.backward(blocks(previous), dlogits[1].cview());
    model.forward_view(blocks(next), x.cview(), ids, key, shared, f_next);
    model.backward(blocks(next), dlogits[2].cview());
    shared.flush(ctx);
  }
  for (std::size_t v = 0; v < want.size(); ++v) {
    REQUIRE(got[v].size() == want[v].size());
    for (int64_t i = 0; i < want[v].size(); ++i) CHECK(got[v].flat()[i] == Approx(want[v].flat()[i]).margin(1e-12));
  }
  const auto& g = model.params().grads();
  const auto& w = reference.params().grads();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(g[i] == Approx(w[i]).margin(1e-12));
}

TEST_CASE("a first layer that aggregates its input, or an embedding, does not share it", "[models][shared_input]") {
  models::GnnModel<double> sage(options_of(models::ModelType::kSage), kFeatures, kClasses, 1);
  CHECK_FALSE(sage.shares_first_layer());
  models::ModelOptions embedded = options_of(models::ModelType::kGcn);
  embedded.embedding = 8;
  models::GnnModel<double> gcn(embedded, 0, kClasses, 1, models::OpContext::host(), kNodes);
  CHECK_FALSE(gcn.shares_first_layer());
  models::SharedInput<double> shared;
  const Matrix<double> x(kNodes, 0);
  core::Rng rng(1, {});
  const graph::Block b = view_block(rng, 1.0, graph::BlockNorm::kGcn);
  const std::vector<const graph::Block*> blocks(2, &b);
  std::vector<NodeId> ids(kNodes);
  CHECK_THROWS_WITH(gcn.forward_view(blocks, x.cview(), ids, core::rng_key(1, {}), shared, {}),
                    Catch::Contains("cannot share its input"));
}

TEST_CASE("the shared arrays' arithmetic: the product always, the gradient sum with a backward",
          "[models][shared_input]") {
  using S = models::SharedInput<float>;
  const std::size_t b = 10 * 4 * sizeof(float);
  CHECK(S::arrays(10, 4, 0) == std::vector<std::size_t>{b, 0});
  CHECK(S::arrays(10, 4, 1) == std::vector<std::size_t>{b, b});
  CHECK(S::arrays(10, 4, 3) == std::vector<std::size_t>{b, b});
}

// GnnModel::swap_kept (issue #41's speed): MH-Aug's step holds the new view's forward aside while the
// previous view runs forward and backward, then backs the new view up without a second forward.
TEST_CASE("a forward held aside backs up bitwise what forwarding it again backs up, shared or not",
          "[models][shared_input][kept]") {
  const bool shared_views = GENERATE(true, false);
  const double density = GENERATE(0.03, 1.0);
  INFO("shared " << shared_views << ", density " << density);
  core::Rng rng(31, {});
  const Matrix<double> x = features(rng, density);
  std::vector<NodeId> ids(kNodes);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(500 + 3 * i);
  const graph::Block previous = view_block(rng, 0.6, graph::BlockNorm::kGcn);
  const graph::Block next = view_block(rng, 0.4, graph::BlockNorm::kGcn);
  const std::vector<float> f_prev = factors(rng, 0.2), f_next = factors(rng, 0.5);
  const Matrix<double> d_prev = test::random_matrix(rng, kNodes, kClasses);
  const Matrix<double> d_next = test::random_matrix(rng, kNodes, kClasses);
  const core::RngKey key = core::rng_key(6, {2, 3});
  const auto blocks = [](const graph::Block& b) { return std::vector<const graph::Block*>(2, &b); };
  const Matrix<double> x_prev = scaled(x, f_prev), x_next = scaled(x, f_next);

  // The new view forwarded, the previous one forwarded and backed up, then the new one: forwarded
  // again (reference) or taken back from aside (model); two steps, the second on grown arrays.
  // The model's views also pass an input tag (the same rows every step: the dropout reuses x's CSR
  // form from the second step on, through the swaps), the reference's none.
  bool known = false;
  const auto step = [&](models::GnnModel<double>& m, models::SharedInput<double>& shared,
                        models::GnnModel<double>::KeptForward* kept) {
    const uint64_t tag = kept != nullptr ? 2 : 0;
    const auto forward = [&](const graph::Block& b, const Matrix<double>& scaled_x, const std::vector<float>& f) {
      return shared_views ? m.forward_view(blocks(b), x.cview(), ids, key, shared, f, tag)
                          : m.forward(blocks(b), scaled_x.cview(), ids, true, key);
    };
    m.params().zero_grad();
    shared.reset();
    Matrix<double> z_next = copy_of(forward(next, x_next, f_next));
    known = m.first_input_known();
    if (kept != nullptr) m.swap_kept(*kept);
    forward(previous, x_prev, f_prev);
    m.backward(blocks(previous), d_prev.cview());
    if (kept != nullptr) {
      m.swap_kept(*kept);
    } else {
      forward(next, x_next, f_next);
    }
    m.backward(blocks(next), d_next.cview());
    if (shared_views) shared.flush(m.context());
    return z_next;
  };
  models::GnnModel<double> reference(options_of(models::ModelType::kGcn), kFeatures, kClasses, 5);
  models::GnnModel<double> model(options_of(models::ModelType::kGcn), kFeatures, kClasses, 5);
  REQUIRE(model.can_keep_aside());
  models::SharedInput<double> shared_ref, shared;
  models::GnnModel<double>::KeptForward kept;
  for (int s = 0; s < 3; ++s) {
    const Matrix<double> want = step(reference, shared_ref, nullptr);
    const Matrix<double> got = step(model, shared, &kept);
    CHECK(known == (shared_views && density < 0.5 && s > 0));
    CHECK(std::equal(got.flat().begin(), got.flat().end(), want.flat().begin()));
    const auto& g = model.params().grads();
    const auto& w = reference.params().grads();
    REQUIRE(g.size() == w.size());
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(g[i] == w[i]);  // bitwise
  }
  // What kept_arrays says a forward aside holds is what `kept` holds (it holds the previous view's).
  const std::vector<models::BlockShape> shapes(2, models::BlockShape{kNodes, kNodes, previous.num_edges()});
  const std::vector<std::size_t> bytes = model.kept_arrays(shapes, shared_views);
  REQUIRE(bytes.size() == 6);
  for (std::size_t l = 0; l < 2; ++l) {
    CHECK(kept.inputs[l].capacity() * sizeof(double) == bytes[3 * l]);
    CHECK(kept.masks[l].capacity() == bytes[3 * l + 1]);
    CHECK(kept.outputs[l].capacity() * sizeof(double) == bytes[3 * l + 2]);
  }
  CHECK(bytes[5] == kNodes * kClasses * sizeof(double));
  kept.release(model.context().stream());
  CHECK(kept.outputs[1].capacity() == 0);
}

TEST_CASE("only a model whose layers keep nothing but their input holds a forward aside",
          "[models][shared_input][kept]") {
  for (const auto type : {models::ModelType::kGat, models::ModelType::kSage, models::ModelType::kGgnn}) {
    models::GnnModel<double> m(options_of(type), kFeatures, kClasses, 1);
    CHECK_FALSE(m.can_keep_aside());
    models::GnnModel<double>::KeptForward kept;
    CHECK_THROWS_WITH(m.swap_kept(kept), Catch::Contains("keeps more than its input"));
  }
  models::ModelOptions embedded = options_of(models::ModelType::kGcn);
  embedded.embedding = 8;
  CHECK_FALSE(models::GnnModel<double>(embedded, 0, kClasses, 1, models::OpContext::host(), kNodes).can_keep_aside());
  CHECK(models::GnnModel<double>(options_of(models::ModelType::kGcn), kFeatures, kClasses, 1).can_keep_aside());
}
