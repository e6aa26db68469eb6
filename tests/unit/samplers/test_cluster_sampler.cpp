#include <catch2/catch.hpp>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/graph_partition.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using Catch::Contains;
using graph::BlockNorm;
using graph::NodeId;
using samplers::ClusterSampler;
using samplers::ClusterSamplerOptions;

using test::random_graph;
using test::fingerprint;
using test::vec;

namespace {

namespace fs = std::filesystem;

graph::CsrGraph undirected(NodeId n, const std::vector<std::pair<NodeId, NodeId>>& edges) {
  std::vector<NodeId> src, dst;
  for (auto [u, v] : edges) {
    src.push_back(u);
    dst.push_back(v);
  }
  return graph::CsrGraph::from_coo(n, src, dst, {.symmetrize = true});
}

std::vector<NodeId> all_nodes(NodeId n) {
  std::vector<NodeId> v(static_cast<std::size_t>(n));
  for (NodeId i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// Two copies of a triangle {0, 1, 2} with a pendant 3 on node 2, joined by the edge 3 - 4; node 0
// also has a self-loop. The only balanced bisection cutting one edge is {0..3} | {4..7}.
graph::CsrGraph kites() {
  auto g = undirected(8, {{0, 1}, {1, 2}, {0, 2}, {2, 3}, {4, 5}, {5, 6}, {4, 6}, {6, 7}, {3, 4}});
  std::vector<NodeId> src(g.indices().begin(), g.indices().end()), dst;
  for (NodeId v = 0; v < 8; ++v) dst.insert(dst.end(), static_cast<std::size_t>(g.in_degree(v)), v);
  src.push_back(0);
  dst.push_back(0);
  return graph::CsrGraph::from_coo(8, src, dst);
}

// The batch of the kites graph (P = 2, q = 1) that holds node 0.
graph::MiniBatch kite_batch(const graph::CsrGraph& g, BlockNorm norm, float diag_lambda = 0.0f) {
  ClusterSampler sampler(g, all_nodes(8), {.num_parts = 2, .diag_lambda = diag_lambda, .seed = 1, .norm = norm});
  const auto parts = sampler.parts();
  REQUIRE(std::vector<int32_t>(parts.begin(), parts.end()) ==
          (parts[0] == 0 ? std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1} : std::vector<int32_t>{1, 1, 1, 1, 0, 0, 0, 0}));
  auto ws = sampler.make_workspace();
  for (const auto& spec : sampler.plan_epoch(0)) {
    graph::MiniBatch b = sampler.sample(spec, *ws);
    if (b.input_nodes[0] == 0) return b;
  }
  FAIL("no batch holds node 0");
  return {};
}

}  // namespace

TEST_CASE("an epoch's batches hold every node exactly once and use every part once", "[samplers][cluster]") {
  const auto g = random_graph(700, 4000, 11);
  for (int p : {1, 5, 16})
  for (int q : {1, 3, 5, 16}) {
    if (q > p) continue;
    INFO("P " << p << " q " << q);
    ClusterSampler sampler(g, all_nodes(700), {.num_parts = p, .parts_per_batch = q, .seed = 2});
    const auto plan = sampler.plan_epoch(4);
    // Every group of q parts holds a node unless all its parts came out empty.
    CHECK(plan.size() <= static_cast<std::size_t>((p + q - 1) / q));
    std::vector<int32_t> used;
    std::vector<NodeId> covered;
    auto ws = sampler.make_workspace();
    for (std::size_t i = 0; i < plan.size(); ++i) {
      CHECK(plan[i].index == static_cast<int64_t>(i));
      CHECK(plan[i].parts.size() <= static_cast<std::size_t>(q));
      CHECK(std::is_sorted(plan[i].parts.begin(), plan[i].parts.end()));
      used.insert(used.end(), plan[i].parts.begin(), plan[i].parts.end());
      const auto b = sampler.sample(plan[i], *ws);
      covered.insert(covered.end(), b.targets.begin(), b.targets.end());
    }
    std::sort(covered.begin(), covered.end());
    CHECK(covered == all_nodes(700));
    std::sort(used.begin(), used.end());
    CHECK(std::adjacent_find(used.begin(), used.end()) == used.end());
    const auto parts = sampler.parts();
    for (int32_t x : parts) CHECK(std::binary_search(used.begin(), used.end(), x));
  }
}

TEST_CASE("plans are shuffled per epoch and drop groups without training nodes", "[samplers][cluster]") {
  const auto g = random_graph(800, 4000, 12);
  std::vector<NodeId> train;
  for (NodeId v = 0; v < 800; v += 40) train.push_back(v);  // at most 20 of 40 parts hold one
  ClusterSampler sampler(g, train, {.num_parts = 40, .parts_per_batch = 2, .seed = 6});
  const auto plan = sampler.plan_epoch(0);
  CHECK(plan.size() < 20);
  std::vector<NodeId> trained;
  auto ws = sampler.make_workspace();
  for (const auto& spec : plan) {
    const auto b = sampler.sample(spec, *ws);
    CHECK(b.loss_rows.size() > 0);
    for (int32_t r : b.loss_rows) trained.push_back(b.targets[static_cast<std::size_t>(r)]);
  }
  std::sort(trained.begin(), trained.end());
  CHECK(trained == train);
  const auto again = sampler.plan_epoch(0);
  const auto next = sampler.plan_epoch(1);
  REQUIRE(again.size() == plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) CHECK(again[i].parts == plan[i].parts);
  bool differs = next.size() != plan.size();
  for (std::size_t i = 0; !differs && i < plan.size(); ++i) differs = next[i].parts != plan[i].parts;
  CHECK(differs);
}

TEST_CASE("the shared block is exactly the induced subgraph", "[samplers][cluster]") {
  // Directed, with repeated edges and self-loops: every edge among the batch's nodes comes back.
  const auto g = random_graph(500, 5000, 13, /*directed=*/true);
  for (BlockNorm norm : {BlockNorm::kNone, BlockNorm::kSelfLoops}) {
    INFO("norm " << static_cast<int>(norm));
    ClusterSampler sampler(g, all_nodes(500), {.num_parts = 9, .parts_per_batch = 2, .seed = 3, .norm = norm, .num_layers = 3});
    auto ws = sampler.make_workspace();
    for (const auto& spec : sampler.plan_epoch(0)) {
      const auto b = sampler.sample(spec, *ws);
      REQUIRE(b.blocks.size() == 1);
      const graph::Block& block = b.blocks[0];
      REQUIRE(block.num_dst == block.num_src);
      REQUIRE(block.num_src == static_cast<NodeId>(b.input_nodes.size()));
      REQUIRE(vec(b.input_nodes) == vec(b.targets));
      REQUIRE(std::is_sorted(b.input_nodes.begin(), b.input_nodes.end()));
      CHECK(!block.weighted());
      CHECK(b.loss_weights.empty());
      CHECK(b.layer_blocks(3).size() == 3);
      CHECK(b.shape.edges == std::vector<int64_t>(3, block.num_edges()));
      // Nodes are exactly those of the batch's parts.
      std::vector<NodeId> expect_nodes;
      for (NodeId v = 0; v < 500; ++v) {
        if (std::binary_search(spec.parts.begin(), spec.parts.end(), sampler.parts()[static_cast<std::size_t>(v)])) {
          expect_nodes.push_back(v);
        }
      }
      REQUIRE(vec(b.input_nodes) == expect_nodes);
      for (NodeId v = 0; v < block.num_dst; ++v) {
        const NodeId gv = b.input_nodes[static_cast<std::size_t>(v)];
        std::vector<NodeId> want;
        for (NodeId u : g.in_neighbors(gv)) {
          if (norm == BlockNorm::kSelfLoops && u == gv) continue;
          if (std::binary_search(expect_nodes.begin(), expect_nodes.end(), u)) want.push_back(u);
        }
        if (norm == BlockNorm::kSelfLoops) want.push_back(gv);
        std::sort(want.begin(), want.end());
        std::vector<NodeId> got;
        for (auto e = block.offsets[static_cast<std::size_t>(v)]; e < block.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
          got.push_back(b.input_nodes[static_cast<std::size_t>(block.indices[static_cast<std::size_t>(e)])]);
        }
        REQUIRE(got == want);
      }
    }
  }
}

TEST_CASE("one part is the full graph: weights equal full_graph_block's", "[samplers][cluster]") {
  const auto g = random_graph(300, 2000, 14);
  for (BlockNorm norm : {BlockNorm::kNone, BlockNorm::kMean, BlockNorm::kGcn, BlockNorm::kSelfLoops}) {
    INFO("norm " << static_cast<int>(norm));
    ClusterSampler sampler(g, all_nodes(300), {.num_parts = 1, .norm = norm});
    const auto plan = sampler.plan_epoch(0);
    REQUIRE(plan.size() == 1);
    auto ws = sampler.make_workspace();
    const auto b = sampler.sample(plan[0], *ws);
    const auto full = graph::full_graph_block(g, norm);
    CHECK(vec(b.blocks[0].offsets) == vec(full.offsets));
    CHECK(vec(b.blocks[0].indices) == vec(full.indices));
    CHECK(vec(b.blocks[0].weights) == vec(full.weights));
  }
}

TEST_CASE("exact subgraph weights on a tiny graph: mean and gcn", "[samplers][cluster]") {
  const auto g = kites();
  // The batch {0, 1, 2, 3}: node 0 has a self-loop, node 3 loses its edge to 4.
  const auto mean = kite_batch(g, BlockNorm::kMean);
  CHECK(vec(mean.input_nodes) == std::vector<NodeId>{0, 1, 2, 3});
  CHECK(vec(mean.blocks[0].offsets) == std::vector<graph::EdgeOffset>{0, 3, 5, 8, 9});
  CHECK(vec(mean.blocks[0].indices) == std::vector<NodeId>{0, 1, 2, 0, 2, 0, 1, 3, 2});
  const float third = 1.0f / 3.0f;
  CHECK(vec(mean.blocks[0].weights) == std::vector<float>{third, third, third, 0.5f, 0.5f, third, third, third, 1.0f});

  // gcn: one self-loop each (node 0's own is not doubled); d = {3, 3, 4, 2}.
  const auto gcn = kite_batch(g, BlockNorm::kGcn);
  CHECK(vec(gcn.blocks[0].offsets) == std::vector<graph::EdgeOffset>{0, 3, 6, 10, 12});
  CHECK(vec(gcn.blocks[0].indices) == std::vector<NodeId>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 2, 3});
  const double d[] = {3, 3, 4, 2};
  std::vector<float> want;
  for (std::size_t v = 0; v < 4; ++v) {
    for (auto e = gcn.blocks[0].offsets[v]; e < gcn.blocks[0].offsets[v + 1]; ++e) {
      const auto u = static_cast<std::size_t>(gcn.blocks[0].indices[static_cast<std::size_t>(e)]);
      want.push_back(static_cast<float>(1.0 / std::sqrt(d[u] * d[v])));
    }
  }
  CHECK(vec(gcn.blocks[0].weights) == want);

  const auto loops = kite_batch(g, BlockNorm::kSelfLoops);
  CHECK(vec(loops.blocks[0].indices) == vec(gcn.blocks[0].indices));
  CHECK(!loops.blocks[0].weighted());
}

TEST_CASE("exact subgraph weights on a tiny graph: diagonal enhancement", "[samplers][cluster]") {
  // (D + I)^-1 (A + I) with d = {2, 2, 3, 1} (no self-loops), then the diagonal times 1 + 1.5.
  const auto b = kite_batch(kites(), BlockNorm::kGcn, 1.5f);
  CHECK(vec(b.blocks[0].indices) == std::vector<NodeId>{0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 2, 3});
  const std::vector<float> want{2.5f / 3, 1.0f / 3, 1.0f / 3,            // row 0
                                1.0f / 3, 2.5f / 3, 1.0f / 3,            // row 1
                                0.25f, 0.25f, 2.5f / 4, 0.25f,           // row 2
                                0.5f, 2.5f / 2};                         // row 3
  const auto got = vec(b.blocks[0].weights);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-6));
}

TEST_CASE("loss rows are the positions of the training nodes among the targets", "[samplers][cluster]") {
  const auto g = random_graph(400, 2400, 15);
  std::vector<NodeId> train;
  for (NodeId v = 1; v < 400; v += 3) train.push_back(v);
  ClusterSampler sampler(g, train, {.num_parts = 8, .parts_per_batch = 3, .seed = 1});
  auto ws = sampler.make_workspace();
  for (const auto& spec : sampler.plan_epoch(2)) {
    const auto b = sampler.sample(spec, *ws);
    std::vector<int32_t> want;
    for (std::size_t i = 0; i < b.targets.size(); ++i) {
      if (std::binary_search(train.begin(), train.end(), b.targets[i])) want.push_back(static_cast<int32_t>(i));
    }
    CHECK(vec(b.loss_rows) == want);
    CHECK(b.loss_weights.empty());
  }
}

TEST_CASE("cluster batches are byte-identical with 1 or 2 or 8 threads", "[samplers][cluster][tsan]") {
  const auto g = random_graph(3000, 30000, 16);
  ClusterSampler sampler(g, all_nodes(3000), {.num_parts = 30, .parts_per_batch = 4, .diag_lambda = 0.5f, .seed = 4, .norm = BlockNorm::kGcn});
  const auto plan = sampler.plan_epoch(1);
  auto run = [&](int threads) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    std::vector<uint64_t> prints(plan.size());
    tbb::parallel_for(std::size_t{0}, plan.size(), core::tsan::fork_join([&](std::size_t i) {
      auto ws = sampler.make_workspace();
      prints[i] = fingerprint(sampler.sample(plan[i], *ws));
    }));
    return prints;
  };
  const auto one = run(1);
  CHECK(run(2) == one);
  CHECK(run(8) == one);
  // A reused workspace gives the same batches as fresh ones.
  auto ws = sampler.make_workspace();
  for (std::size_t i = 0; i < plan.size(); ++i) REQUIRE(fingerprint(sampler.sample(plan[i], *ws)) == one[i]);
}

TEST_CASE("a bad batch spec throws and leaves the workspace clean", "[samplers][cluster]") {
  const auto g = random_graph(200, 1000, 17);
  ClusterSampler sampler(g, all_nodes(200), {.num_parts = 4, .parts_per_batch = 2});
  auto ws = sampler.make_workspace();
  const auto plan = sampler.plan_epoch(0);
  const uint64_t before = fingerprint(sampler.sample(plan[0], *ws));
  samplers::BatchSpec bad = plan[0];
  bad.parts = {0, 4};
  CHECK_THROWS_WITH(sampler.sample(bad, *ws), Contains("part 4 is outside [0, 4)"));
  bad.parts = {1, 1};
  CHECK_THROWS_WITH(sampler.sample(bad, *ws), Contains("part 1 appears twice"));
  CHECK(fingerprint(sampler.sample(plan[0], *ws)) == before);
}

TEST_CASE("bad cluster options are ConfigErrors naming the key", "[samplers][cluster]") {
  const auto g = random_graph(10, 20, 1);
  auto config_error = [&](ClusterSamplerOptions o) {
    return test::message_of<core::ConfigError>([&] { const ClusterSampler s(g, {0}, o); });
  };
  CHECK_THAT(config_error({.num_parts = 11}), Contains("sampler.num_parts: must be in [1, 10] (10 nodes), got 11"));
  CHECK_THAT(config_error({.num_parts = 0}), Contains("sampler.num_parts: must be in [1, 10]"));
  CHECK_THAT(config_error({.num_parts = 2, .parts_per_batch = 3}), Contains("sampler.parts_per_batch: must be in [1, 2]"));
  CHECK_THAT(config_error({.num_parts = 2, .parts_per_batch = 0}), Contains("sampler.parts_per_batch"));
  CHECK_THAT(config_error({.num_parts = 2, .diag_lambda = -1.0f, .norm = BlockNorm::kGcn}),
             Contains("sampler.diag_lambda: must be a finite number >= 0"));
  CHECK_THAT(config_error({.num_parts = 2, .diag_lambda = 0.5f}), Contains("sampler.diag_lambda") && Contains("only with model gcn"));
  CHECK_THAT(config_error({.num_parts = 2, .num_layers = 0}), Contains("model.layers: must be >= 1"));
  CHECK_THROWS_AS(ClusterSampler(g, {10}, {.num_parts = 2}), core::DataError);
}

TEST_CASE("the sampler takes its partition from the cache", "[samplers][cluster]") {
  const test::TempDir dir;
  const auto g = random_graph(300, 1500, 22);
  // Plant a valid partition METIS would not produce under the name the sampler looks for.
  samplers::load_or_partition(g, 5, 3, dir.path());
  const fs::path file = dir.path() / samplers::partition_cache_name(g, 5, 3);
  std::string bytes = test::read_file(file);
  std::vector<int32_t> planted(300);
  for (std::size_t v = 0; v < 300; ++v) planted[v] = static_cast<int32_t>(v / 60);
  std::memcpy(bytes.data() + 40, planted.data(), planted.size() * sizeof(int32_t));
  test::write_file(file, bytes);
  const ClusterSampler sampler(g, all_nodes(300), {.num_parts = 5, .cache_dir = dir.path(), .seed = 3});
  CHECK(std::vector<int32_t>(sampler.parts().begin(), sampler.parts().end()) == planted);
  auto ws = sampler.make_workspace();
  for (const auto& spec : sampler.plan_epoch(0)) {
    const auto b = sampler.sample(spec, *ws);
    CHECK(b.targets[0] == spec.parts[0] * 60);  // part p holds nodes 60 p .. 60 p + 59
  }
}
