// The full-batch sampler, the layer-wise inference sampler and parallel sampling of batches.
#include <catch2/catch.hpp>

#include <tbb/global_control.h>

#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;

using test::random_graph;
using test::fingerprint;
using test::vec;

TEST_CASE("the full-batch sampler returns the whole graph as one shared block, loss on sorted train nodes", "[samplers]") {
  const graph::CsrGraph g = random_graph(30, 80, 1);
  const samplers::FullBatchSampler sampler(g, {7, 3, 12}, graph::BlockNorm::kGcn, 3);
  const auto plan = sampler.plan_epoch(5);
  REQUIRE(plan.size() == 1);
  auto ws = sampler.make_workspace();
  const graph::MiniBatch b = sampler.sample(plan[0], *ws);
  CHECK(b.epoch == 5);
  REQUIRE(b.blocks.size() == 1);
  const graph::Block full = graph::full_graph_block(g, graph::BlockNorm::kGcn);
  CHECK(vec(b.blocks[0].offsets) == vec(full.offsets));
  CHECK(vec(b.blocks[0].indices) == vec(full.indices));
  CHECK(vec(b.blocks[0].weights) == vec(full.weights));
  CHECK(b.input_nodes.size() == 30);
  CHECK(b.targets[29] == 29);
  CHECK(vec(b.loss_rows) == std::vector<int32_t>{3, 7, 12});
  CHECK(b.loss_weights.empty());
  const auto blocks = b.layer_blocks(3);
  CHECK((blocks[0] == &b.blocks[0] && blocks[2] == &b.blocks[0]));
  CHECK(b.shape.edges == std::vector<int64_t>(3, full.num_edges()));
  CHECK_THROWS_AS(b.layer_blocks(0), core::Error);
  CHECK_THROWS_AS(samplers::FullBatchSampler(g, {3, 3}, graph::BlockNorm::kMean, 2), core::DataError);
  CHECK_THROWS_AS(samplers::FullBatchSampler(g, {30}, graph::BlockNorm::kMean, 2), core::DataError);
}

TEST_CASE("inference chunks list every node in order with all its in-neighbors", "[samplers]") {
  const graph::CsrGraph g = random_graph(50, 200, 2);
  const auto sampler = samplers::make_inference_sampler(g, graph::BlockNorm::kMean, 16);
  const auto plan = sampler->plan_epoch(0);
  REQUIRE(plan.size() == 4);  // 16 + 16 + 16 + 2
  auto ws = sampler->make_workspace();
  NodeId next = 0;
  for (const auto& spec : plan) {
    const graph::MiniBatch chunk = sampler->sample(spec, *ws);
    REQUIRE(chunk.blocks.size() == 1);
    const graph::Block& b = chunk.blocks[0];
    for (NodeId v = 0; v < b.num_dst; ++v, ++next) {
      REQUIRE(chunk.targets[static_cast<std::size_t>(v)] == next);
      std::vector<NodeId> got;
      for (auto e = b.offsets[static_cast<std::size_t>(v)]; e < b.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
        got.push_back(chunk.input_nodes[static_cast<std::size_t>(b.indices[static_cast<std::size_t>(e)])]);
        CHECK(b.weights[static_cast<std::size_t>(e)] == 1.0f / static_cast<float>(g.in_degree(next)));
      }
      std::sort(got.begin(), got.end());
      const auto row = g.in_neighbors(next);
      CHECK(got == std::vector<NodeId>(row.begin(), row.end()));
    }
  }
  CHECK(next == 50);
  CHECK_THROWS_WITH(samplers::make_inference_sampler(g, graph::BlockNorm::kMean, 0),
                    Catch::Contains("sampler.eval_chunk_nodes: must be >= 1, got 0"));
}

TEST_CASE("parallel sampling returns the batches in plan order, identical to one-by-one sampling", "[samplers][tsan]") {
  const graph::CsrGraph g = random_graph(400, 2000, 3);
  std::vector<NodeId> train;
  for (NodeId v = 0; v < 400; v += 2) train.push_back(v);
  const samplers::NeighborSampler sampler(g, train, {.fanouts = {4, 3}, .batch_size = 16, .seed = 9});
  const auto plan = sampler.plan_epoch(1);
  auto ws = sampler.make_workspace();
  std::vector<std::vector<NodeId>> expected;
  for (const auto& spec : plan) {
    const auto b = sampler.sample(spec, *ws);
    expected.push_back(vec(b.blocks[0].indices));
    expected.back().insert(expected.back().end(), b.input_nodes.begin(), b.input_nodes.end());
  }
  for (int threads : {1, 2, 8}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    samplers::ParallelSampler parallel(sampler);
    for (int round = 0; round < 2; ++round) {  // the second round reuses the per-thread workspaces
      const auto batches = parallel.sample(plan);
      REQUIRE(batches.size() == plan.size());
      for (std::size_t i = 0; i < batches.size(); ++i) {
        CHECK(batches[i].index == static_cast<int64_t>(i));
        auto got = vec(batches[i].blocks[0].indices);
        got.insert(got.end(), batches[i].input_nodes.begin(), batches[i].input_nodes.end());
        CHECK(got == expected[i]);
      }
    }
  }
  samplers::ParallelSampler parallel(sampler);
  auto bad = plan;
  bad[3].seeds[0] = 4000;  // out of range: the error of that batch surfaces
  CHECK_THROWS_WITH(parallel.sample(bad), Catch::Contains("batch 3: seed 4000 is outside [0, 400)"));
}
