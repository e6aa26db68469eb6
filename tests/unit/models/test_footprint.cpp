// The memory governor's arithmetic against the allocator (issue #13): after every training step
// (forward with dropout, loss gradient, backward) of GCN, SAGE, GAT, GGNN and GaAN on batches of changing
// shapes, the bytes the model's arrays hold in the run's allocator equal what
// GnnModel::training_arrays predicts through a GrowOnlyFootprint, to the byte. Likewise for
// infer_layer and inference_arrays. If a layer gains an array or changes a size, these tests fail
// until the arithmetic follows.
#include <catch2/catch.hpp>

#include <tuple>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "model_helpers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;

namespace {

models::ModelOptions options_of(models::ModelType type, bool concat) {
  models::ModelOptions mo;
  mo.type = type;
  mo.layers = 3;
  mo.hidden = 12;
  mo.dropout = 0.4;
  mo.heads = 3;
  mo.concat_heads = concat;
  mo.attention_dropout = type == models::ModelType::kGat ? 0.3 : 0.0;
  return mo;
}

std::vector<models::BlockShape> shapes_of(const std::vector<const graph::Block*>& blocks) {
  std::vector<models::BlockShape> shapes;
  for (const graph::Block* b : blocks) shapes.push_back({b->num_dst, b->num_src, b->num_edges()});
  return shapes;
}

}  // namespace

TEST_CASE("training_arrays predicts the bytes a training step holds, batch after batch", "[models][footprint]") {
  const auto g = test::random_graph(3000, 24000, 17);
  const int64_t features = 9, classes = 4;
  core::Rng rng(5, {1});
  const models::Matrix<float> x_all = [&] {
    models::Matrix<float> m(3000, features);
    for (float& v : m.flat()) v = static_cast<float>(2 * rng.uniform() - 1);
    return m;
  }();
  // (type, heads concatenated, learned embedding width: 0 reads the features, input dropout: -1 for
  // model.dropout; GCN with 0 aggregates its 9 input columns first, 9 <= 12)
  for (const auto& [type, concat, embedding, input_dropout] : std::vector<std::tuple<models::ModelType, bool, int, double>>{
           {models::ModelType::kGcn, true, 0, -1}, {models::ModelType::kSage, true, 0, -1},
           {models::ModelType::kGat, true, 0, -1}, {models::ModelType::kGat, false, 0, -1},
           {models::ModelType::kGgnn, true, 0, -1}, {models::ModelType::kGaan, true, 0, -1},
           {models::ModelType::kSage, true, 7, -1}, {models::ModelType::kGgnn, true, 5, -1},
           {models::ModelType::kGcn, true, 0, 0.0}}) {
    INFO("model " << models::to_string(type) << (concat ? "" : " (heads averaged)") << ", embedding " << embedding
                  << ", input dropout " << input_dropout);
    const core::Stream stream(core::Device::cpu());
    memory::CachingAllocator allocator(core::Device::cpu(), std::size_t{1} << 30);
    const models::OpContext ctx(stream, {}, &allocator);
    models::ModelOptions mo = options_of(type, concat);
    mo.embedding = embedding;
    if (input_dropout >= 0) mo.input_dropout = input_dropout;
    models::GnnModel<float> model(mo, embedding > 0 ? 0 : features, classes, 3, ctx, embedding > 0 ? 3000 : 0);
    const std::size_t resident = allocator.stats().in_use_bytes;  // parameters and gradients
    memory::GrowOnlyFootprint footprint;
    samplers::NeighborSampler sampler(g, test::all_nodes(3000),
                                      {.fanouts = {6, 4, 3}, .batch_size = 40, .seed = 2, .norm = model.block_norm()});
    auto ws = sampler.make_workspace();
    const auto plan = sampler.plan_epoch(1);
    // Batch sizes go up and down (the last batch of an epoch is smaller), so some steps grow
    // arrays and some do not.
    for (std::size_t i : {std::size_t{0}, std::size_t{5}, plan.size() - 1, std::size_t{9}, std::size_t{2}}) {
      const graph::MiniBatch batch = sampler.sample(plan[i], *ws);
      const auto blocks = batch.layer_blocks(3);
      const int64_t cols = embedding > 0 ? 0 : features;
      models::Matrix<float> x(batch.blocks.front().num_src, cols);
      for (int64_t r = 0; r < x.rows(); ++r) {
        for (int64_t c = 0; c < cols; ++c) x(r, c) = x_all(batch.input_nodes[static_cast<std::size_t>(r)], c);
      }
      const auto needs = model.training_arrays(shapes_of(blocks), true);
      const auto logits = model.forward(blocks, x.cview(), batch.input_nodes.span(), true, core::rng_key(1, {i}));
      models::Matrix<float> dlogits(logits.rows, logits.cols);
      for (float& v : dlogits.flat()) v = 0.01f;
      model.backward(blocks, dlogits.cview());
      footprint.grow(needs);
      INFO("batch " << i << " with " << batch.input_nodes.size() << " input nodes");
      CHECK(allocator.stats().in_use_bytes - resident == footprint.bytes());
    }
  }
}

TEST_CASE("inference_arrays predicts the bytes of infer_layer, on the whole graph and on a chunk", "[models][footprint]") {
  for (const bool chunk : {false, true}) {
    INFO((chunk ? "a chunk of layer-wise inference" : "the whole graph"));
    core::Rng rng(8, {2});
    // The last GCN has no input dropout: its first layer aggregates first (7 <= 12 columns).
    for (const auto& [type, aggregate_first] : std::vector<std::pair<models::ModelType, bool>>{
             {models::ModelType::kGcn, false}, {models::ModelType::kSage, false}, {models::ModelType::kGat, false},
             {models::ModelType::kGgnn, false}, {models::ModelType::kGaan, false}, {models::ModelType::kGcn, true}}) {
      INFO(models::to_string(type) << (aggregate_first ? " aggregating first" : ""));
      const core::Stream stream(core::Device::cpu());
      memory::CachingAllocator allocator(core::Device::cpu(), std::size_t{1} << 30);
      const models::OpContext ctx(stream, {}, &allocator);
      models::ModelOptions mo = options_of(type, true);
      if (aggregate_first) mo.input_dropout = 0.0;
      models::GnnModel<float> model(mo, 7, 3, 3, ctx);
      const std::size_t resident = allocator.stats().in_use_bytes;
      memory::GrowOnlyFootprint footprint;
      for (int round = 0; round < 2; ++round) {
        for (std::size_t l = 0; l < 3; ++l) {
          const graph::Block block = test::random_block(rng, 30 + 20 * round, 90 - 25 * round, 6, true);
          const int64_t in = l == 0 ? 7 : model.layer_out_dim(l - 1);
          models::Matrix<float> x(block.num_src, in), y(block.num_dst, model.layer_out_dim(l));
          footprint.grow(model.inference_arrays(l, {block.num_dst, block.num_src, block.num_edges()}, chunk));
          model.infer_layer(l, block, models::MatrixView<const float>{x.data(), x.rows(), x.cols()}, y.view(), chunk);
          CHECK(allocator.stats().in_use_bytes - resident == footprint.bytes());
        }
      }
    }
  }
}
