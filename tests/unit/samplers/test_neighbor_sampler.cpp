#include <catch2/catch.hpp>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <set>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using samplers::NeighborSampler;
using samplers::NeighborSamplerOptions;

using test::random_graph;
using test::fingerprint;
using test::vec;
using test::all_nodes;

TEST_CASE("fanout -1 takes whole neighborhoods: exact blocks on a tiny graph", "[samplers][neighbor]") {
  // Path 0 - 1 - 2 - 3 (symmetric).
  const auto g = graph::CsrGraph::from_coo(4, std::vector<NodeId>{0, 1, 2}, std::vector<NodeId>{1, 2, 3}, {.symmetrize = true});
  NeighborSampler sampler(g, {1}, {.fanouts = {-1, -1}, .batch_size = 1, .shuffle = false, .norm = graph::BlockNorm::kNone});
  const auto plan = sampler.plan_epoch(0);
  REQUIRE(plan.size() == 1);
  auto ws = sampler.make_workspace();
  const graph::MiniBatch b = sampler.sample(plan[0], *ws);
  REQUIRE(b.blocks.size() == 2);
  // Hop 0: seed 1 <- {0, 2}; hop 1: 0 <- {1}, 2 <- {1, 3}. Local ids: 1->0, 0->1, 2->2, 3->3.
  CHECK(std::vector<NodeId>(b.input_nodes.begin(), b.input_nodes.end()) == std::vector<NodeId>{1, 0, 2, 3});
  const graph::Block& out = b.blocks[1];
  CHECK(out.num_dst == 1);
  CHECK(out.num_src == 3);
  CHECK(std::vector<NodeId>(out.indices.begin(), out.indices.end()) == std::vector<NodeId>{1, 2});
  const graph::Block& in = b.blocks[0];
  CHECK(in.num_dst == 3);
  CHECK(in.num_src == 4);
  CHECK(std::vector<graph::EdgeOffset>(in.offsets.begin(), in.offsets.end()) == std::vector<graph::EdgeOffset>{0, 2, 3, 5});
  CHECK(std::vector<NodeId>(in.indices.begin(), in.indices.end()) == std::vector<NodeId>{1, 2, 0, 0, 3});
  CHECK(b.shape.edges == std::vector<int64_t>{5, 2});
  CHECK(b.targets[0] == 1);
}

TEST_CASE("sampled blocks satisfy the invariants on a random graph", "[samplers][neighbor]") {
  const auto g = random_graph(2000, 20000, 5);
  for (bool replace : {false, true})
  for (graph::BlockNorm norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn}) {
    INFO("replace " << replace << " norm " << static_cast<int>(norm));
    const std::vector<int> fanouts{7, 4, 3};
    NeighborSampler sampler(g, all_nodes(2000), {.fanouts = fanouts, .batch_size = 64, .replace = replace, .seed = 9, .norm = norm});
    auto ws = sampler.make_workspace();
    for (const auto& spec : sampler.plan_epoch(3)) {
      const graph::MiniBatch b = sampler.sample(spec, *ws);
      REQUIRE(b.blocks.size() == 3);
      REQUIRE(b.blocks.back().num_dst == static_cast<NodeId>(spec.seeds.size()));
      REQUIRE(b.blocks[0].num_src == static_cast<NodeId>(b.input_nodes.size()));
      for (std::size_t l = 0; l + 1 < b.blocks.size(); ++l) REQUIRE(b.blocks[l].num_dst == b.blocks[l + 1].num_src);
      // Targets are the first input nodes (destinations are a prefix of sources at every level).
      REQUIRE(std::equal(b.targets.begin(), b.targets.end(), b.input_nodes.begin()));
      for (std::size_t l = 0; l < b.blocks.size(); ++l) {
        const graph::Block& block = b.blocks[l];
        for (NodeId v = 0; v < block.num_dst; ++v) {
          const NodeId gv = b.input_nodes[static_cast<std::size_t>(v)];
          const auto nb = g.in_neighbors(gv);
          std::set<NodeId> seen;
          int non_self = 0;
          for (auto e = block.offsets[static_cast<std::size_t>(v)]; e < block.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
            const NodeId u = block.indices[static_cast<std::size_t>(e)];
            const NodeId gu = b.input_nodes[static_cast<std::size_t>(u)];
            if (norm == graph::BlockNorm::kGcn && u == v) continue;  // the added self-loop
            ++non_self;
            REQUIRE(std::binary_search(nb.begin(), nb.end(), gu));  // every sampled edge exists
            if (!replace) REQUIRE(seen.insert(u).second);          // no duplicates
          }
          REQUIRE(non_self <= *std::max_element(fanouts.begin(), fanouts.end()));
          if (!replace) REQUIRE(non_self <= std::max<int>(0, static_cast<int>(nb.size())));
        }
        // The transpose lists exactly the forward edges.
        REQUIRE(block.t_offsets[static_cast<std::size_t>(block.num_src)] == block.num_edges());
        for (NodeId u = 0; u < block.num_src; ++u) {
          for (auto k = block.t_offsets[static_cast<std::size_t>(u)]; k < block.t_offsets[static_cast<std::size_t>(u) + 1]; ++k) {
            REQUIRE(block.indices[static_cast<std::size_t>(block.t_edges[static_cast<std::size_t>(k)])] == u);
          }
        }
      }
    }
  }
}

TEST_CASE("seeds get fanouts[0] neighbors, as in PyG's order", "[samplers][neighbor]") {
  // A star: node 0 has 50 in-neighbors.
  std::vector<NodeId> src, dst;
  for (NodeId i = 1; i <= 50; ++i) {
    src.push_back(i);
    dst.push_back(0);
  }
  const auto g = graph::CsrGraph::from_coo(51, src, dst);
  NeighborSampler sampler(g, {0}, {.fanouts = {5, 2}, .batch_size = 1, .norm = graph::BlockNorm::kNone});
  auto ws = sampler.make_workspace();
  const auto b = sampler.sample(sampler.plan_epoch(0)[0], *ws);
  CHECK(b.blocks.back().num_edges() == 5);
  CHECK(b.input_nodes.size() == 6);
}

TEST_CASE("mini-batches are byte-identical with 1, 2 and 8 threads", "[samplers][neighbor][tsan]") {
  const auto g = random_graph(3000, 30000, 8);
  NeighborSampler sampler(g, all_nodes(3000), {.fanouts = {10, 5}, .batch_size = 100, .seed = 4});
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

TEST_CASE("an epoch's plan covers every training node once, epochs are shuffled differently", "[samplers][neighbor]") {
  const auto g = random_graph(500, 2000, 1);
  std::vector<NodeId> train;
  for (NodeId v = 0; v < 500; v += 3) train.push_back(v);
  NeighborSampler sampler(g, train, {.fanouts = {3}, .batch_size = 32, .seed = 2});
  const auto plan0 = sampler.plan_epoch(0);
  std::vector<NodeId> covered;
  for (const auto& s : plan0) covered.insert(covered.end(), s.seeds.begin(), s.seeds.end());
  std::sort(covered.begin(), covered.end());
  CHECK(covered == train);
  CHECK(plan0.size() == (train.size() + 31) / 32);
  CHECK(plan0[0].seeds != sampler.plan_epoch(1)[0].seeds);
  CHECK(plan0[0].seeds == sampler.plan_epoch(0)[0].seeds);
}

TEST_CASE("bad sampler options are ConfigErrors naming the key", "[samplers][neighbor]") {
  const auto g = random_graph(10, 20, 1);
  CHECK_THROWS_WITH(NeighborSampler(g, {0}, {.fanouts = {}}), Catch::Contains("sampler.fanouts: needs at least one hop"));
  CHECK_THROWS_WITH(NeighborSampler(g, {0}, {.fanouts = {3, 0}}), Catch::Contains("sampler.fanouts[1]: must be > 0 or -1"));
  CHECK_THROWS_WITH(NeighborSampler(g, {0}, {.fanouts = {3}, .batch_size = 0}), Catch::Contains("sampler.batch_size: must be >= 1"));
  CHECK_THROWS_AS(NeighborSampler(g, {10}, {.fanouts = {3}}), core::DataError);
}
