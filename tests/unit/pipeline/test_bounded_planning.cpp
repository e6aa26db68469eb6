// Bounded planning (issue 38, item 1): the memory governor sizes a candidate split before it
// builds it, rules a split out by its first part that cannot fit, and when no split fits fails at
// once naming the smallest memory.limit that works. The sizes are exact: the governor checks at
// every split it builds that the built parts predict what the sized ones did (memory_governor.cpp,
// split), so every test that splits checks that too; here the pieces it is made of.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "experiment_helpers.hpp"
#include "named_limit.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;

namespace {

// The packed counts of a micro-batch sized by graph::split_sizes (as the governor forms them).
pipeline::PackedCounts counts_of(const graph::MiniBatch& parent, const graph::MicroBatchSize& m) {
  pipeline::PackedCounts c;
  const bool shared = parent.blocks.size() == 1;
  for (std::size_t b = 0; b < m.block_edges.size(); ++b) {
    const std::size_t l = shared ? 0 : b;
    c.blocks.push_back({m.shape.dst_nodes[l], m.shape.src_nodes[l], m.block_edges[b], parent.blocks[b].weighted()});
  }
  c.inputs = m.shape.src_nodes.front();
  c.targets = static_cast<int64_t>(m.targets);
  c.loss_rows = c.loss_weights = static_cast<int64_t>(m.loss_rows);
  return c;
}

void check_sized_equals_built(const graph::MiniBatch& batch, std::size_t layers) {
  for (const int parts : {1, 2, 5, static_cast<int>(batch.loss_rows.size())}) {
    INFO(parts << " parts");
    const auto sizes = graph::split_sizes(batch, layers, parts);
    const auto built = graph::split_batch(batch, layers, parts);
    REQUIRE(sizes.size() == built.size());
    for (std::size_t i = 0; i < built.size(); ++i) {
      CHECK(sizes[i].shape.src_nodes == built[i].shape.src_nodes);
      CHECK(sizes[i].shape.dst_nodes == built[i].shape.dst_nodes);
      CHECK(sizes[i].shape.edges == built[i].shape.edges);
      for (const int64_t cols : {int64_t{0}, int64_t{7}}) {
        CHECK(pipeline::packed_bytes(counts_of(batch, sizes[i]), cols) ==
              pipeline::BatchLayout::of(built[i], cols).total_bytes);
      }
    }
    // With keep_going, counting stops at the first part it turns down.
    const auto first = graph::split_sizes(batch, layers, parts, [](const graph::MicroBatchSize&) { return false; });
    CHECK(first.size() == 1);
  }
}

// A dense graph: any few seeds' 3-hop neighbourhoods cover it, so splitting cannot shrink a part.
const char* kDense = R"(
name: dense
dataset: {synthetic: {nodes: 10000, avg_degree: 50, features: 32, classes: 4, seed: 3}}
model: {type: gcn, layers: 3, hidden: 256, dropout: 0.0}
sampler: {type: full}
optimizer: {type: adam, lr: 0.01}
pipeline: {mode: sequential}
run: {epochs: 1, seed: 7}
)";

// A sparse one, where splitting the full batch shrinks its parts.
const char* kSparse = R"(
name: sparse
dataset: {synthetic: {nodes: 2000, avg_degree: 3, features: 16, classes: 3, seed: 5}}
model: {type: gcn, layers: 2, hidden: 32, dropout: 0.0}
sampler: {type: full}
optimizer: {type: adam, lr: 0.01}
pipeline: {mode: sequential}
run: {epochs: 1, seed: 7}
)";

std::size_t need_of(const char* yaml) {
  const pipeline::MemoryPlan plan = test::plan_experiment(yaml, {});
  return static_cast<std::size_t>(std::ceil(static_cast<double>(plan.largest_batch_peak) / 0.95));  // tolerance 0.05
}

// The plan at memory.limit `limit`: nothing when it fits, else the OutOfBudget message.
std::optional<std::string> plan_fails(const char* yaml, std::size_t limit) {
  try {
    test::plan_experiment(yaml, {"memory.limit=" + std::to_string(limit)});
    return std::nullopt;
  } catch (const core::OutOfBudget& e) {
    return e.message();
  }
}

}  // namespace

TEST_CASE("governor: a split is sized before it is built, exactly", "[pipeline][governor]") {
  const graph::CsrGraph g = test::random_graph(300, 2400, 5);
  const samplers::NeighborSampler neighbor(g, test::all_nodes(300), {.fanouts = {6, 4}, .batch_size = 40, .seed = 3});
  auto ws = neighbor.make_workspace();
  check_sized_equals_built(neighbor.sample(neighbor.plan_epoch(1).front(), *ws), 2);
  const samplers::FullBatchSampler full(g, test::all_nodes(120), graph::BlockNorm::kGcn, 3);
  auto fws = full.make_workspace();
  check_sized_equals_built(full.sample(full.plan_epoch(1).front(), *fws), 3);
}

TEST_CASE("governor: a dense graph's plan answers at a half and a quarter of its need", "[pipeline][governor]") {
  const std::size_t need = need_of(kDense);
  for (const double factor : {0.5, 0.25}) {
    INFO("memory.limit at " << factor << " of " << need);
    const auto limit = static_cast<std::size_t>(static_cast<double>(need) * factor);
    // One row's 3-hop tree is most of the graph: splitting stops helping, and the batch runs one
    // layer at a time over chunks of rows instead (memory.policy split's fallback).
    const pipeline::MemoryPlan plan = test::plan_experiment(kDense, {"memory.limit=" + std::to_string(limit)});
    CHECK(plan.counters.layerwise == 1);
    CHECK(plan.counters.split == 0);
    CHECK(plan.largest_batch_peak <= limit);
  }
  // Further down nothing fits, and the plan says what would.
  std::optional<std::string> failed;
  std::size_t limit = need / 4;
  while (!failed && limit > need / 100) {
    limit = limit * 7 / 10;
    failed = plan_fails(kDense, limit);
  }
  REQUIRE(failed.has_value());
  INFO(*failed);
  CHECK_THAT(*failed, Catch::StartsWith("memory.limit: batch 0 of epoch 1 does not fit the budget"));
  CHECK_THAT(*failed, Catch::Contains("under memory.policy split (run layer-wise)"));
  const std::size_t named = test::named_limit(*failed);
  CHECK(named > limit);
  CHECK_FALSE(plan_fails(kDense, named).has_value());
}

TEST_CASE("governor: the smallest memory.limit an OutOfBudget names is accepted", "[pipeline][governor]") {
  const std::size_t need = need_of(kSparse);
  std::optional<std::string> failed;
  for (double factor = 0.85; factor > 0.01 && !failed; factor *= 0.85) {
    failed = plan_fails(kSparse, static_cast<std::size_t>(static_cast<double>(need) * factor));
  }
  REQUIRE(failed.has_value());
  const std::size_t named = test::named_limit(*failed);
  INFO(*failed);
  CHECK(named < need);  // here splitting helps
  const std::optional<std::string> at_named = plan_fails(kSparse, named);
  CHECK_FALSE(at_named.has_value());
  if (!at_named) {
    // Split, or layer-wise where that needs less than the least split (the message says which).
    const pipeline::MemoryCounters c = test::plan_experiment(kSparse, {"memory.limit=" + std::to_string(named)}).counters;
    CHECK(c.split + c.layerwise == 1);
    CHECK(c.layerwise == (failed->find("(run layer-wise)") != std::string::npos ? 1 : 0));
  }
  // And it is the least any split (or layer-wise step) needs, up to the split's own arrays (16
  // bytes a loss row).
  CHECK(plan_fails(kSparse, named * 97 / 100).has_value());
}
