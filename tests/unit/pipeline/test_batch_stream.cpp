// BatchStream (the Python loader's engine, issue #43 item 4): an epoch's batches in plan order,
// exactly the sampler's (the batches a training run with the same sampler trains on), each with
// its input rows and its targets' labels; a restart drops the epoch being read; a batch beyond the
// byte limit is an OutOfBudget naming it; a sampling error reaches the reader.
#include <catch2/catch.hpp>

#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/synthetic.hpp"
#include "gnnpipe/pipeline/batch_stream.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"

using namespace gnnpipe;

namespace {

graph::Dataset small_graph() {
  graph::SyntheticOptions o;
  o.nodes = 3000;
  o.avg_degree = 8;
  o.features = 12;
  o.classes = 5;
  return graph::make_synthetic(o);
}

samplers::NeighborSampler sampler_of(const graph::Dataset& d, int batch_size = 64) {
  std::vector<graph::NodeId> train(d.splits.train.begin(), d.splits.train.end());
  return samplers::NeighborSampler(
      d.graph, std::move(train),
      samplers::NeighborSamplerOptions{.fanouts = {5, 3}, .batch_size = batch_size, .seed = 3, .norm = graph::BlockNorm::kMean});
}

void check_same(const graph::MiniBatch& a, const graph::MiniBatch& b) {
  CHECK(a.epoch == b.epoch);
  CHECK(a.index == b.index);
  CHECK(std::vector<graph::NodeId>(a.input_nodes.begin(), a.input_nodes.end()) ==
        std::vector<graph::NodeId>(b.input_nodes.begin(), b.input_nodes.end()));
  CHECK(std::vector<graph::NodeId>(a.targets.begin(), a.targets.end()) ==
        std::vector<graph::NodeId>(b.targets.begin(), b.targets.end()));
  REQUIRE(a.blocks.size() == b.blocks.size());
  for (std::size_t l = 0; l < a.blocks.size(); ++l) {
    CHECK(std::vector<graph::NodeId>(a.blocks[l].indices.begin(), a.blocks[l].indices.end()) ==
          std::vector<graph::NodeId>(b.blocks[l].indices.begin(), b.blocks[l].indices.end()));
    CHECK(std::vector<float>(a.blocks[l].weights.begin(), a.blocks[l].weights.end()) ==
          std::vector<float>(b.blocks[l].weights.begin(), b.blocks[l].weights.end()));
  }
}

}  // namespace

TEST_CASE("a batch stream gives the sampler's batches in plan order, with their rows and labels",
          "[pipeline][stream][tsan]") {
  const graph::Dataset d = small_graph();
  const samplers::NeighborSampler sampler = sampler_of(d);
  samplers::ParallelSampler parallel(sampler);
  pipeline::BatchStream stream(sampler, d, {.prefetch = 3, .max_bytes = 0});
  for (int64_t epoch : {1, 2}) {
    const std::vector<samplers::BatchSpec> plan = sampler.plan_epoch(epoch);
    const std::vector<graph::MiniBatch> expected = parallel.sample(plan);
    REQUIRE(stream.start(epoch) == plan.size());
    for (const graph::MiniBatch& e : expected) {
      std::optional<pipeline::StreamedBatch> got = stream.next();
      REQUIRE(got.has_value());
      check_same(got->batch, e);
      std::vector<float> rows(e.input_nodes.size() * 12);
      d.features.gather(e.input_nodes.span(), rows);
      CHECK(got->features == rows);
      REQUIRE(got->labels.size() == e.targets.size());
      for (std::size_t i = 0; i < e.targets.size(); ++i) CHECK(got->labels[i] == d.labels.single[static_cast<std::size_t>(e.targets[i])]);
    }
    CHECK_FALSE(stream.next().has_value());
    CHECK_FALSE(stream.next().has_value());
  }
}

TEST_CASE("a batch stream restarts an epoch half read, and bounds what waits", "[pipeline][stream][tsan]") {
  const graph::Dataset d = small_graph();
  const samplers::NeighborSampler sampler = sampler_of(d);
  pipeline::BatchStream stream(sampler, d, {.prefetch = 2, .max_bytes = 0});
  stream.start(1);
  REQUIRE(stream.next().has_value());
  const std::size_t batches = stream.start(1);  // the first batch again
  std::optional<pipeline::StreamedBatch> first = stream.next();
  REQUIRE(first.has_value());
  CHECK(first->batch.index == 0);
  std::size_t read = 1;
  while (stream.next()) ++read;
  CHECK(read == batches);
  // A limit below one batch's bytes: OutOfBudget naming it, then the epoch ends.
  pipeline::BatchStream tight(sampler, d, {.prefetch = 2, .max_bytes = 1000});
  tight.start(1);
  CHECK_THROWS_AS(tight.next(), core::OutOfBudget);
  CHECK_FALSE(tight.next().has_value());
  CHECK_THROWS_WITH(pipeline::BatchStream(sampler, d, {.prefetch = 0}), Catch::Contains("prefetch: 0 batches"));
  CHECK_THROWS_WITH(stream.start(0), Catch::Contains("epochs count from 1"));
}
