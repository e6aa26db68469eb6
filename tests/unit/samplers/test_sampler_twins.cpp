// The data-parallel twins of the GPU samplers (issue #40) against the CPU samplers: every batch bit for bit
// (blocks, weights, transposes, input nodes), on Cora, ogbn-arxiv, a power-law synthetic graph and
// a directed multigraph with self-loops, for every norm, with and without replacement, for
// resampled attempts, and whatever the number of threads its phases run on. The twin runs the
// element functions the GPU kernels run, so this is the CI check of the GPU sampler's logic.
#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <string>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/synthetic.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/cluster_twin.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/samplers/gpu_neighbor_sampler.hpp"
#include "gnnpipe/samplers/gpu_subgraph_samplers.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/neighbor_twin.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"
#include "gnnpipe/samplers/saint_twin.hpp"
#include "sampler_checks.hpp"
#include "sampler_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using graph::NodeId;
using samplers::NeighborSampler;
using samplers::NeighborSamplerOptions;
using samplers::NeighborSamplerTwin;

namespace {

// The twin against the CPU sampler on `g` (test::check_same_batches, attempt 1 too), for every
// norm and both replacement modes.
void check_twin(const graph::CsrGraph& g, const std::vector<NodeId>& train, std::vector<int> fanouts,
                std::size_t max_batches, int batch_size) {
  for (const auto norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn, graph::BlockNorm::kSelfLoops,
                          graph::BlockNorm::kNone}) {
    for (const bool replace : {false, true}) {
      INFO("norm " << static_cast<int>(norm) << ", replace " << replace);
      const NeighborSamplerOptions o{.fanouts = fanouts, .batch_size = batch_size, .replace = replace, .seed = 11, .norm = norm};
      const NeighborSampler cpu(g, train, o);
      const NeighborSamplerTwin twin(g, train, o);
      test::check_same_batches(cpu, twin, max_batches, /*attempt=*/1);
      // A resampled batch draws anew.
      const auto ws = twin.make_workspace();
      samplers::BatchSpec again = twin.plan_epoch(1)[0];
      const uint64_t first = test::fingerprint(twin.sample(again, *ws));
      again.attempt = 1;
      CHECK(test::fingerprint(twin.sample(again, *ws)) != first);
    }
  }
}

}  // namespace

TEST_CASE("neighbor twin: the CPU sampler's batches on a directed multigraph with self-loops, any thread count",
          "[samplers][neighbor][twin][tsan]") {
  // Repeated edges and self-loops: picks of a node itself are dropped where the norm adds its own.
  const graph::CsrGraph g = test::random_graph(300, 2400, 5, /*directed=*/true);
  REQUIRE(g.count_self_loops() > 0);
  check_twin(g, test::all_nodes(200), {4, 3, -1}, 4, 32);
  // The phases' order does not matter: one thread and four give the same batches.
  const NeighborSamplerOptions o{.fanouts = {6, 4}, .batch_size = 64, .seed = 3};
  const NeighborSamplerTwin twin(g, test::all_nodes(300), o);
  const auto plan = twin.plan_epoch(1);
  std::vector<uint64_t> one, two;
  for (auto [threads, out] : {std::pair{1, &one}, std::pair{2, &two}}) {
    tbb::task_arena arena(threads);
    arena.execute([&, out = out] {
      const auto ws = twin.make_workspace();
      for (const auto& spec : plan) out->push_back(test::fingerprint(twin.sample(spec, *ws)));
    });
  }
  CHECK(one == two);
}

TEST_CASE("neighbor twin: the CPU sampler's batches on a power-law synthetic graph", "[samplers][neighbor][twin]") {
  const graph::SyntheticGraph s = graph::make_synthetic_graph({.nodes = 20000, .avg_degree = 12, .seed = 4});
  check_twin(s.graph, test::all_nodes(12000), {15, 10, 5}, 3, 512);
}

TEST_CASE("neighbor twin: the CPU sampler's batches on Cora", "[samplers][neighbor][twin][dataset]") {
  GNNPIPE_REQUIRE_DATASET(dir, "cora/converted");
  const graph::Dataset d = graph::io::load_dataset(dir, graph::io::DatasetFormat::kPlanetoidNpy);
  check_twin(d.graph, test::vec(d.splits.train), {10, 10}, 8, 32);
}

TEST_CASE("neighbor twin: the CPU sampler's batches on ogbn-arxiv", "[samplers][neighbor][twin][dataset]") {
  GNNPIPE_REQUIRE_DATASET(dir, "ogbn-arxiv/netbenchmark");
  const graph::Dataset d = graph::io::load_dataset(dir);
  check_twin(d.graph, test::vec(d.splits.train), {15, 10, 5}, 2, 1024);
}

TEST_CASE("neighbor draws: a node's picks are a function of (hop, node) alone", "[samplers][neighbor][twin]") {
  // Positional: the same node in the same hop draws the same, whatever was drawn before.
  const core::RngKey hop = samplers::neighbor_hop_key(7, 1, 0, 0, 0);
  std::vector<int64_t> a(5), b(5), c(5);
  samplers::neighbor_picks(hop, 42, 100, 5, false, a.data());
  samplers::neighbor_picks(hop, 41, 100, 5, false, c.data());
  samplers::neighbor_picks(hop, 42, 100, 5, false, b.data());
  CHECK(a == b);
  CHECK(a != c);
  // Without replacement: distinct offsets in range; the whole row when the fanout covers it.
  std::sort(a.begin(), a.end());
  CHECK(std::adjacent_find(a.begin(), a.end()) == a.end());
  CHECK(a.front() >= 0);
  CHECK(a.back() < 100);
  std::vector<int64_t> all(3);
  samplers::neighbor_picks(hop, 42, 3, 5, false, all.data());
  CHECK(all == std::vector<int64_t>{0, 1, 2});
  CHECK(samplers::neighbor_pick_count(3, 5, true) == 5);
  CHECK(samplers::neighbor_pick_count(0, 5, true) == 0);
  CHECK(samplers::neighbor_pick_count(9, -1, false) == 9);
  // Another attempt of the batch draws anew.
  CHECK(samplers::neighbor_hop_key(7, 1, 0, 0, 1).stream != hop.stream);
  CHECK(samplers::neighbor_hop_key(7, 1, 0, 1, 0).stream != hop.stream);
}

namespace {

// The GraphSAINT twin against the sampler it reads, for every mode, norm and normalisation: the
// first `max_batches` batches of epochs 1 and 2 and a resampled attempt.
void check_saint_twin(const graph::CsrGraph& g, const std::vector<NodeId>& train, int budget, std::size_t max_batches) {
  for (const auto mode : {samplers::SaintMode::kNode, samplers::SaintMode::kEdge, samplers::SaintMode::kRandomWalk}) {
    for (const auto norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn, graph::BlockNorm::kSelfLoops}) {
      for (const bool normalize : {true, false}) {
        INFO("mode " << static_cast<int>(mode) << ", norm " << static_cast<int>(norm) << ", normalize " << normalize);
        const samplers::SaintSampler cpu(g, train, {.mode = mode, .budget = budget, .walk_length = 3, .steps_per_epoch = 4,
                                                    .norm_samples = 40, .normalize = normalize, .seed = 5, .norm = norm});
        test::check_same_batches(cpu, samplers::SaintSamplerTwin(cpu), max_batches, /*attempt=*/2);
      }
    }
  }
}

}  // namespace

TEST_CASE("saint twin: the CPU sampler's batches on a directed multigraph and a power-law graph",
          "[samplers][saint][twin][tsan]") {
  check_saint_twin(test::random_graph(300, 2400, 5, /*directed=*/true), test::all_nodes(200), 40, 4);
  const graph::SyntheticGraph s = graph::make_synthetic_graph({.nodes = 20000, .avg_degree = 12, .seed = 4});
  check_saint_twin(s.graph, test::all_nodes(12000), 1500, 2);
}

TEST_CASE("saint twin: the CPU sampler's batches on Cora and ogbn-arxiv", "[samplers][saint][twin][dataset]") {
  GNNPIPE_REQUIRE_DATASET(cora, "cora/converted");
  const graph::Dataset c = graph::io::load_dataset(cora, graph::io::DatasetFormat::kPlanetoidNpy);
  check_saint_twin(c.graph, test::vec(c.splits.train), 300, 4);
  GNNPIPE_REQUIRE_DATASET(arxiv, "ogbn-arxiv/netbenchmark");
  const graph::Dataset a = graph::io::load_dataset(arxiv);
  check_saint_twin(a.graph, test::vec(a.splits.train), 3000, 1);
}

namespace {

// The Cluster-GCN twin against the sampler it reads, for every norm (and the diagonal
// enhancement): every batch of epochs 1 and 2, up to `max_batches`.
void check_cluster_twin(const graph::CsrGraph& g, const std::vector<NodeId>& train, int parts, int per_batch,
                        std::size_t max_batches) {
  const test::TempDir cache;  // one METIS partition for every case
  struct Case {
    graph::BlockNorm norm;
    float diag_lambda;
  };
  for (const Case c : {Case{graph::BlockNorm::kMean, 0.0f}, Case{graph::BlockNorm::kGcn, 0.0f}, Case{graph::BlockNorm::kGcn, 0.5f},
                       Case{graph::BlockNorm::kSelfLoops, 0.0f}, Case{graph::BlockNorm::kNone, 0.0f}}) {
    INFO("norm " << static_cast<int>(c.norm) << ", diag_lambda " << c.diag_lambda);
    const samplers::ClusterSampler cpu(g, train, {.num_parts = parts, .parts_per_batch = per_batch, .diag_lambda = c.diag_lambda,
                                                  .cache_dir = cache.path(), .seed = 3, .norm = c.norm});
    const samplers::ClusterSamplerTwin twin(cpu);
    test::check_same_batches(cpu, twin, max_batches);
    // A part listed twice is refused, as by the CPU sampler.
    samplers::BatchSpec twice{1, 0, {}, {0, 0}};
    CHECK_THROWS_WITH(twin.sample(twice, *twin.make_workspace()), Catch::Contains("part 0 appears twice") || Catch::Contains("a part appears twice"));
  }
}

}  // namespace

TEST_CASE("cluster twin: the CPU sampler's batches on a directed multigraph and a power-law graph",
          "[samplers][cluster][twin][tsan]") {
  check_cluster_twin(test::random_graph(300, 2400, 5, /*directed=*/true), test::all_nodes(200), 6, 2, 3);
  const graph::SyntheticGraph s = graph::make_synthetic_graph({.nodes = 20000, .avg_degree = 12, .seed = 4});
  check_cluster_twin(s.graph, test::all_nodes(12000), 40, 4, 3);
}

TEST_CASE("cluster twin: the CPU sampler's batches on Cora and ogbn-arxiv", "[samplers][cluster][twin][dataset]") {
  GNNPIPE_REQUIRE_DATASET(cora, "cora/converted");
  const graph::Dataset c = graph::io::load_dataset(cora, graph::io::DatasetFormat::kPlanetoidNpy);
  check_cluster_twin(c.graph, test::vec(c.splits.train), 20, 3, 4);
  GNNPIPE_REQUIRE_DATASET(arxiv, "ogbn-arxiv/netbenchmark");
  const graph::Dataset a = graph::io::load_dataset(arxiv);
  check_cluster_twin(a.graph, test::vec(a.splits.train), 150, 20, 2);
}

TEST_CASE("GPU neighbor sampler: a CPU device is refused with a one-line CudaError", "[samplers][neighbor]") {
  const graph::CsrGraph g = test::random_graph(50, 200, 1);
  CHECK_THROWS_AS(samplers::GpuNeighborSampler(g, test::all_nodes(10), {}, core::Device::cpu()), core::CudaError);
  CHECK_THROWS_WITH(samplers::GpuNeighborSampler(g, test::all_nodes(10), {}, core::Device::cpu()),
                    Catch::Contains("needs a GPU device, not cpu"));
  const samplers::SaintSampler saint(g, test::all_nodes(10), {.budget = 10, .steps_per_epoch = 1, .normalize = false});
  CHECK_THROWS_WITH(samplers::GpuSaintSampler(saint, core::Device::cpu()), Catch::Contains("needs a GPU device, not cpu"));
  // The options are checked as the CPU sampler checks them, before any device is touched.
  CHECK_THROWS_AS(samplers::GpuNeighborSampler(g, test::all_nodes(10), {.fanouts = {}}, core::Device::cpu()), core::ConfigError);
}
