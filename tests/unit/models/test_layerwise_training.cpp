// Layer-wise chunked training (memory.policy layerwise): GnnModel::forward_layer/backward_layer on
// chunks of destinations (graph::BlockChunker) reproduce the whole-model forward()/backward() of a
// training step, dropout included: every layer over every chunk, then backward from the last layer
// down, recomputing each chunk's forward and scattering its input gradient into the full one. The
// logits and every parameter gradient agree (up to the order of the sums over chunks) for every
// model type, in float and double. layer_training_arrays places one layer's arrays in
// training_arrays' positions and agrees with the allocator; a learned embedding is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/block_chunk.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "model_helpers.hpp"
#include "relative_difference.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using models::Matrix;
using models::MatrixView;
using models::ModelType;

namespace {

constexpr NodeId kNodes = 20;
constexpr int64_t kIn = 4, kOut = 3;  // kIn <= hidden: GCN without input dropout aggregates first

struct Case {
  ModelType type = ModelType::kSage;
  int layers = 3;
  std::optional<double> input_dropout = std::nullopt;  // unset: model.dropout
  models::Activation activation = models::Activation::kRelu;
};

std::string name_of(const Case& c) {
  std::string s(models::to_string(c.type));
  s += " layers " + std::to_string(c.layers) + " " + std::string(models::to_string(c.activation));
  if (c.input_dropout) s += " input_dropout " + std::to_string(*c.input_dropout);
  return s;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {.type = ModelType::kGcn},
      // No input dropout: GCN's first layer aggregates first ((A x) W, 4 <= 4 columns).
      {.type = ModelType::kGcn, .input_dropout = 0.0},
      {.type = ModelType::kSage},
      {.type = ModelType::kSage, .activation = models::Activation::kElu},
      {.type = ModelType::kGat},
      {.type = ModelType::kGat, .layers = 2, .activation = models::Activation::kLeakyRelu},
      {.type = ModelType::kGgnn},
      {.type = ModelType::kGgnn, .layers = 2},
      {.type = ModelType::kGaan},
  };
  return all;
}

models::ModelOptions options_of(const Case& c) {
  models::ModelOptions o;
  o.type = c.type;
  o.layers = c.layers;
  o.hidden = 4;
  o.dropout = 0.5;
  o.input_dropout = c.input_dropout;
  o.activation = c.activation;
  o.heads = 2;
  o.attention_dropout = c.type == ModelType::kGat ? 0.3 : 0.0;
  o.key_dim = 3;
  o.value_dim = 2;
  o.gate_dim = 5;
  return o;
}

template <class T>
Matrix<T> cast(const Matrix<double>& m) {
  Matrix<T> out(m.rows(), m.cols());
  for (int64_t i = 0; i < m.size(); ++i) out.flat()[static_cast<std::size_t>(i)] = static_cast<T>(m.flat()[static_cast<std::size_t>(i)]);
  return out;
}


struct ChunkOf {
  NodeId begin = 0, end = 0;
  graph::BlockChunk chunk;
};

std::vector<ChunkOf> chunks_of(const graph::Block& block, NodeId size) {
  graph::BlockChunker chunker(block);
  std::vector<ChunkOf> chunks;
  for (NodeId begin = 0; begin < block.num_dst; begin += size) {
    const NodeId end = std::min<NodeId>(begin + size, block.num_dst);
    chunks.push_back({begin, end, chunker.build(begin, end)});
  }
  return chunks;
}

// Rows `rows` of m, in that order.
template <class T>
Matrix<T> gather(const Matrix<T>& m, const std::vector<NodeId>& rows) {
  Matrix<T> out(static_cast<int64_t>(rows.size()), m.cols());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(m.data() + rows[r] * m.cols(), m.cols(), out.data() + static_cast<int64_t>(r) * m.cols());
  }
  return out;
}

std::vector<NodeId> ids_of(const std::vector<NodeId>& global, const std::vector<NodeId>& rows) {
  std::vector<NodeId> out;
  for (NodeId r : rows) out.push_back(global[static_cast<std::size_t>(r)]);
  return out;
}

// Global ids of the full graph's nodes: distinct, in no relation to the local numbering, so that a
// mask keyed by local position instead would differ.
std::vector<NodeId> global_ids() {
  std::vector<NodeId> ids;
  for (NodeId v = 0; v < kNodes; ++v) ids.push_back(1000 + 7 * ((v * 13) % kNodes));
  return ids;
}

// Transform-once (GnnModel::transform_rows): layer l's transformed rows of all nodes, by row runs
// of `run` rows (h in the first matrix, the per-head terms in the second).
template <class T>
std::pair<Matrix<T>, Matrix<T>> transform_all(models::GnnModel<T>& model, std::size_t l, const Matrix<T>& x,
                                              const std::vector<NodeId>& ids, core::RngKey key, NodeId run) {
  const int64_t heads = model.transform_heads(l);
  Matrix<T> h, a;
  for (NodeId begin = 0; begin < kNodes; begin += run) {
    const NodeId end = std::min<NodeId>(begin + run, kNodes);
    std::vector<NodeId> rows;
    for (NodeId v = begin; v < end; ++v) rows.push_back(v);
    const Matrix<T> xr = gather(x, rows);
    const models::TransformedRows<T> z = model.transform_rows(l, xr.cview(), ids_of(ids, rows), key);
    REQUIRE(z.h.rows == end - begin);
    REQUIRE(z.a.cols == heads);
    if (h.rows() == 0) h = Matrix<T>(kNodes, z.h.cols), a = Matrix<T>(kNodes, heads);
    std::copy_n(z.h.data, z.h.size(), h.data() + begin * h.cols());
    std::copy_n(z.a.data, z.a.size(), a.data() + begin * a.cols());
  }
  return {std::move(h), std::move(a)};
}

// Fills the transformed rows of a chunk's sources from the layer-wide ones and runs the chunk.
template <class T>
MatrixView<const T> forward_transformed(models::GnnModel<T>& model, std::size_t l, const ChunkOf& k,
                                        const std::pair<Matrix<T>, Matrix<T>>& z, const std::vector<NodeId>& ids,
                                        core::RngKey key) {
  const models::TransformedRows<T> rows = model.transformed_rows(l, k.chunk.block.num_src);
  const Matrix<T> h = gather(z.first, k.chunk.sources), a = gather(z.second, k.chunk.sources);
  std::copy_n(h.data(), h.size(), rows.h.data);
  std::copy_n(a.data(), a.size(), rows.a.data);
  return model.forward_transformed(l, k.chunk.block, ids_of(ids, k.chunk.sources), key);
}

// `once`: layers with a row transform run it once over all rows (in runs of 5) and their chunks
// read its outputs (the layer-wise step's transform-once path); the others as forward_layer.
template <class T>
void check_layerwise_matches_whole(const Case& c, NodeId chunk_size, double logits_tol, double grad_tol,
                                   bool once = false) {
  INFO(name_of(c) << ", chunks of " << chunk_size << (sizeof(T) == 4 ? ", float" : ", double")
                  << (once ? ", transform once" : ""));
  constexpr NodeId kRun = 5;
  const std::size_t layers = static_cast<std::size_t>(c.layers);
  models::GnnModel<T> model(options_of(c), kIn, kOut, 13);
  REQUIRE(model.num_layers() == layers);
  const graph::Block block = graph::full_graph_block(test::random_graph(kNodes, 45, 7), model.block_norm());
  const std::vector<const graph::Block*> blocks(layers, &block);
  core::Rng rng(9, {});
  const Matrix<T> x = cast<T>(test::random_matrix(rng, kNodes, kIn));
  const Matrix<T> dlogits = cast<T>(test::random_matrix(rng, kNodes, kOut));
  const std::vector<NodeId> ids = global_ids();
  const core::RngKey key = core::rng_key(21, {3, 4});

  // The whole step.
  model.params().zero_grad();
  const std::vector<T> want_logits = test::values_of(model.forward(blocks, x.cview(), ids, true, key));
  model.backward(blocks, dlogits.cview());
  const std::vector<T> want_grads(model.params().grads().begin(), model.params().grads().end());
  // Dropout is at work: the same forward without it gives other logits.
  CHECK(test::values_of(model.forward(blocks, x.cview(), ids, false, key)) != want_logits);
  model.params().zero_grad();

  // Layer by layer, chunk by chunk.
  const std::vector<ChunkOf> chunks = chunks_of(block, chunk_size);
  REQUIRE(chunks.size() >= 3);
  std::vector<Matrix<T>> h;  // h[l]: layer l's input rows (before dropout), all nodes
  h.push_back(x.clone());
  for (std::size_t l = 0; l < layers; ++l) {
    REQUIRE(model.layer_in_dim(l) == h[l].cols());
    Matrix<T> out(kNodes, model.layer_out_dim(l));
    const bool transformed = once && model.transforms_rows(l);
    const auto z = transformed ? transform_all(model, l, h[l], ids, key, kRun) : std::pair<Matrix<T>, Matrix<T>>();
    for (const ChunkOf& k : chunks) {
      if (transformed) {
        const MatrixView<const T> y = forward_transformed(model, l, k, z, ids, key);
        std::copy_n(y.data, y.size(), out.data() + k.begin * out.cols());
        continue;
      }
      const Matrix<T> xc = gather(h[l], k.chunk.sources);
      const std::vector<NodeId> idc = ids_of(ids, k.chunk.sources);
      const MatrixView<const T> y = model.forward_layer(l, k.chunk.block, xc.cview(), idc, key);
      REQUIRE(y.rows == k.end - k.begin);
      REQUIRE(y.cols == out.cols());
      std::copy_n(y.data, y.size(), out.data() + k.begin * out.cols());
    }
    h.push_back(std::move(out));
  }
  CHECK(test::relative_difference<T>(h.back().flat(), want_logits) <= logits_tol);

  Matrix<T> dy = dlogits.clone();
  for (std::size_t l = layers; l-- > 0;) {
    const int64_t in = model.layer_in_dim(l), out = model.layer_out_dim(l);
    Matrix<T> dx(l > 0 ? kNodes : 0, in);  // zeros
    if (once && model.transforms_rows(l)) {
      const auto z = transform_all(model, l, h[l], ids, key, kRun);
      Matrix<T> dh(kNodes, z.first.cols());  // zeros
      for (const ChunkOf& k : chunks) {
        forward_transformed(model, l, k, z, ids, key);
        Matrix<T> dyc(k.end - k.begin, out);
        std::copy_n(dy.data() + k.begin * out, dyc.size(), dyc.data());
        const MatrixView<const T> dhc = model.backward_transformed(l, k.chunk.block, dyc.view());
        REQUIRE(dhc.rows == k.chunk.block.num_src);
        for (NodeId s = 0; s < dhc.rows; ++s) {
          const NodeId row = k.chunk.sources[static_cast<std::size_t>(s)];
          for (int64_t col = 0; col < dh.cols(); ++col) dh(row, col) += dhc.data[s * dhc.cols + col];
        }
      }
      for (NodeId begin = 0; begin < kNodes; begin += kRun) {
        const NodeId end = std::min<NodeId>(begin + kRun, kNodes);
        std::vector<NodeId> rows;
        for (NodeId v = begin; v < end; ++v) rows.push_back(v);
        const Matrix<T> xr = gather(h[l], rows), dhr = gather(dh, rows);
        Matrix<T> dxr(l > 0 ? end - begin : 0, in);
        model.transform_rows_backward(l, xr.cview(), ids_of(ids, rows), key, dhr.cview(),
                                      l > 0 ? dxr.view() : MatrixView<T>{nullptr, end - begin, in});
        if (l > 0) std::copy_n(dxr.data(), dxr.size(), dx.data() + begin * in);
      }
      dy = std::move(dx);
      continue;
    }
    for (const ChunkOf& k : chunks) {
      const Matrix<T> xc = gather(h[l], k.chunk.sources);
      const std::vector<NodeId> idc = ids_of(ids, k.chunk.sources);
      model.forward_layer(l, k.chunk.block, xc.cview(), idc, key);
      const NodeId num_src = k.chunk.block.num_src;
      Matrix<T> dyc(k.end - k.begin, out);
      std::copy_n(dy.data() + k.begin * out, dyc.size(), dyc.data());
      Matrix<T> dxc(l > 0 ? num_src : 0, in);
      model.backward_layer(l, k.chunk.block, dyc.view(), l > 0 ? dxc.view() : MatrixView<T>{nullptr, num_src, in});
      for (NodeId s = 0; s < dxc.rows(); ++s) {
        const NodeId row = k.chunk.sources[static_cast<std::size_t>(s)];
        for (int64_t col = 0; col < in; ++col) dx(row, col) += dxc(s, col);
      }
    }
    dy = std::move(dx);
  }

  const models::ParamStore<T>& store = model.params();
  const std::span<const T> grads = model.params().grads();
  for (std::size_t i = 0; i < store.count(); ++i) {
    const auto& p = store.param(i);
    INFO("parameter " << p.name);
    const std::span<const T> want(want_grads.data() + p.offset, p.size());
    CHECK(test::relative_difference<T>(grads.subspan(p.offset, p.size()), want) <= grad_tol);
  }
  // Not all zero: the comparison above compares something.
  CHECK(std::any_of(want_grads.begin(), want_grads.end(), [](T g) { return g != T{0}; }));
}

std::vector<models::BlockShape> repeated(std::size_t n, const models::BlockShape& s) { return std::vector(n, s); }

}  // namespace

TEST_CASE("layer-wise training on chunks gives the whole step's logits and gradients, every model (float)",
          "[models][layerwise]") {
  for (const Case& c : cases()) {
    for (NodeId size : {NodeId{3}, NodeId{7}}) check_layerwise_matches_whole<float>(c, size, 1e-5, 1e-4);
  }
}

TEST_CASE("layer-wise training on chunks gives the whole step's logits and gradients, every model (double)",
          "[models][layerwise]") {
  for (const Case& c : cases()) {
    for (NodeId size : {NodeId{3}, NodeId{6}}) check_layerwise_matches_whole<double>(c, size, 1e-12, 1e-11);
  }
}

TEST_CASE("layer-wise training that transforms a GAT layer's rows once gives the whole step's logits and gradients",
          "[models][layerwise]") {
  for (const Case& c : cases()) {
    models::GnnModel<float> probe(options_of(c), kIn, kOut, 13);
    bool any = false;
    for (std::size_t l = 0; l < probe.num_layers(); ++l) any = any || probe.transforms_rows(l);
    CHECK(any == (c.type == ModelType::kGat));  // the only model with a row transform
    if (!any) continue;
    for (NodeId size : {NodeId{3}, NodeId{7}}) {
      check_layerwise_matches_whole<float>(c, size, 1e-5, 1e-4, true);
      check_layerwise_matches_whole<double>(c, size, 1e-12, 1e-11, true);
    }
  }
}

TEST_CASE("layer_training_arrays holds layer l's arrays of training_arrays and zeros elsewhere", "[models][layerwise]") {
  const models::BlockShape shape{7, 15, 40};
  for (const Case& c : cases()) {
    INFO(name_of(c));
    models::GnnModel<float> model(options_of(c), kIn, kOut, 13);
    // The same model with an activation whose backward reads more than its output's sign: a whole
    // step keeps every dropped-out input in an array of its own there, as a chunk always does.
    models::ModelOptions copying_options = options_of(c);
    copying_options.activation = models::Activation::kElu;
    const models::GnnModel<float> copying(copying_options, kIn, kOut, 13);
    const std::size_t layers = model.num_layers();
    const std::vector<std::size_t> whole = copying.training_arrays(repeated(layers, shape), true);
    // A whole step of a ReLU or leaky-ReLU model drops every hidden layer's input in place (in the
    // previous layer's outputs): exactly those arrays are not held (GGNN drops its input only).
    std::size_t in_place = 0;
    if (c.activation != models::Activation::kElu && c.type != ModelType::kGgnn) {
      for (std::size_t l = 1; l < layers; ++l) {
        in_place += static_cast<std::size_t>(shape.num_src * model.layer_in_dim(l)) * sizeof(float);
      }
    }
    const auto total = [](const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t{0}); };
    CHECK(total(model.training_arrays(repeated(layers, shape), true)) + in_place == total(whole));
    std::vector<std::size_t> sum(whole.size(), 0);
    for (std::size_t l = 0; l < layers; ++l) {
      INFO("layer " << l);
      const std::vector<std::size_t> one = model.layer_training_arrays(l, shape);
      REQUIRE(one.size() == whole.size());
      // training_arrays with layer l's shape alone: the same bytes, but grad_, next_ and
      // embedded_ (the last three), which layer-wise training does not use.
      std::vector<models::BlockShape> alone(layers);
      alone[l] = shape;
      std::vector<std::size_t> want = copying.training_arrays(alone, true);
      std::fill(want.end() - 3, want.end(), std::size_t{0});
      // Except GCN's own array: a chunk aggregates first (A x [num_dst x in], then its gradient
      // where dx is formed) instead of transforming every source (x W [num_src x out]).
      if (c.type == ModelType::kGcn) {
        const std::size_t at = l * 5 + 3;  // the model's three arrays of the layer, then GCN's two
        want[at] = static_cast<std::size_t>(shape.num_dst * model.layer_in_dim(l)) * sizeof(float);
        want[at + 1] = 0;
      }
      CHECK(one == want);
      CHECK(std::any_of(one.begin(), one.end(), [](std::size_t b) { return b > 0; }));
      for (std::size_t i = 0; i < one.size(); ++i) sum[i] += one[i];
    }
    // The layers' positions partition the model's arrays: every layer-wise position is layer l's
    // array in the whole step's list.
    std::vector<std::size_t> want_sum = whole;
    std::fill(want_sum.end() - 3, want_sum.end(), std::size_t{0});
    if (c.type != ModelType::kGcn) CHECK(sum == want_sum);
    CHECK_THROWS_AS(model.layer_training_arrays(layers, shape), core::Error);
  }
}

TEST_CASE("layer_training_arrays predicts the bytes layer-wise training holds in the allocator", "[models][layerwise]") {
  for (const Case& c : cases()) {
    INFO(name_of(c));
    const core::Stream stream(core::Device::cpu());
    memory::CachingAllocator allocator(core::Device::cpu(), std::size_t{1} << 30);
    const models::OpContext ctx(stream, {}, &allocator);
    models::GnnModel<float> model(options_of(c), kIn, kOut, 13, ctx);
    const std::size_t resident = allocator.stats().in_use_bytes;
    memory::GrowOnlyFootprint footprint;
    const graph::Block block = graph::full_graph_block(test::random_graph(kNodes, 45, 7), model.block_norm());
    core::Rng rng(4, {});
    const std::vector<NodeId> ids = global_ids();
    // Chunk sizes up and down: some steps grow arrays, some do not.
    for (NodeId size : {NodeId{3}, NodeId{8}, NodeId{2}}) {
      INFO("chunks of " << size);
      const std::vector<ChunkOf> chunks = chunks_of(block, size);
      const auto run = [&](std::size_t l, const ChunkOf& k, bool backward) {
        const graph::Block& b = k.chunk.block;
        const Matrix<float> xc = cast<float>(test::random_matrix(rng, b.num_src, model.layer_in_dim(l)));
        footprint.grow(model.layer_training_arrays(l, {b.num_dst, b.num_src, b.num_edges()}));
        model.forward_layer(l, b, xc.cview(), ids_of(ids, k.chunk.sources), core::rng_key(2, {l}));
        if (!backward) return;
        Matrix<float> dy = cast<float>(test::random_matrix(rng, b.num_dst, model.layer_out_dim(l)));
        Matrix<float> dx(l > 0 ? b.num_src : 0, model.layer_in_dim(l));
        model.backward_layer(l, b, dy.view(), l > 0 ? dx.view() : MatrixView<float>{nullptr, b.num_src, dx.cols()});
      };
      for (std::size_t l = 0; l < model.num_layers(); ++l) {
        for (const ChunkOf& k : chunks) run(l, k, false);
      }
      for (std::size_t l = model.num_layers(); l-- > 0;) {
        for (const ChunkOf& k : chunks) run(l, k, true);
      }
      CHECK(allocator.stats().in_use_bytes - resident == footprint.bytes());
    }
  }
}

TEST_CASE("forward_layer refuses a learned embedding, and the layer-wise calls refuse what does not fit",
          "[models][layerwise]") {
  const graph::Block block = graph::full_graph_block(test::random_graph(kNodes, 45, 7), graph::BlockNorm::kMean);
  const std::vector<NodeId> ids = global_ids();
  const core::RngKey key = core::rng_key(1, {});
  {
    models::ModelOptions o = options_of({.type = ModelType::kSage, .layers = 2});
    o.embedding = 6;
    models::GnnModel<float> model(o, 0, kOut, 13, models::OpContext::host(), kNodes);
    const Matrix<float> x(kNodes, 6);
    CHECK_THROWS_AS(model.forward_layer(0, block, x.cview(), ids, key), core::ConfigError);
    CHECK_THROWS_WITH(model.forward_layer(0, block, x.cview(), ids, key), Catch::Contains("model.embedding"));
  }
  models::GnnModel<float> model(options_of({.type = ModelType::kSage, .layers = 2}), kIn, kOut, 13);
  const Matrix<float> x(kNodes, kIn);
  // backward_layer before any forward_layer.
  Matrix<float> dy(kNodes, model.layer_out_dim(0));
  CHECK_THROWS_AS(model.backward_layer(0, block, dy.view(), MatrixView<float>{nullptr, kNodes, kIn}), core::Error);
  // Wrong widths, a missing id, a layer past the last.
  const Matrix<float> narrow(kNodes, kIn - 1);
  CHECK_THROWS_AS(model.forward_layer(0, block, narrow.cview(), ids, key), core::Error);
  CHECK_THROWS_AS(model.forward_layer(0, block, x.cview(), std::span(ids).first(static_cast<std::size_t>(kNodes) - 1), key), core::Error);
  CHECK_THROWS_AS(model.forward_layer(2, block, x.cview(), ids, key), core::Error);
  // Layer 0 forms no input gradient; layer 1 must.
  model.forward_layer(0, block, x.cview(), ids, key);
  Matrix<float> dx0(kNodes, kIn);
  CHECK_THROWS_AS(model.backward_layer(0, block, dy.view(), dx0.view()), core::Error);
  const Matrix<float> h(kNodes, model.layer_in_dim(1));
  model.forward_layer(1, block, h.cview(), ids, key);
  Matrix<float> dy1(kNodes, kOut);
  CHECK_THROWS_AS(model.backward_layer(1, block, dy1.view(), MatrixView<float>{nullptr, kNodes, model.layer_in_dim(1)}),
                  core::Error);
}
