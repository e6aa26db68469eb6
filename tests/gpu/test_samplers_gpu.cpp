// The GPU samplers (issue #40) against the CPU samplers, batch by batch: nodes, blocks,
// weights and transposes bit for bit, for every norm, with and without replacement, resampled
// attempts, on a power-law synthetic graph, a directed multigraph with self-loops, and Cora and
// ogbn-arxiv when the datasets are there (GNNPIPE_DATA_DIR). The kernels run the element functions
// of neighbor_hop.hpp that CI tests through the CPU twin; this is where the device runs them.
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)

#include <chrono>
#include <cstdio>
#include <vector>

#include "datasets.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/synthetic.hpp"
#include "gnnpipe/samplers/gpu_neighbor_sampler.hpp"
#include "gnnpipe/samplers/gpu_subgraph_samplers.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "sampler_checks.hpp"
#include "sampler_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using graph::NodeId;
using samplers::NeighborSamplerOptions;

namespace {

void check_gpu_sampler(const graph::CsrGraph& g, const std::vector<NodeId>& train, std::vector<int> fanouts, int batch_size,
                       std::size_t max_batches) {
  for (const auto norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn, graph::BlockNorm::kSelfLoops, graph::BlockNorm::kNone}) {
    for (const bool replace : {false, true}) {
      INFO("norm " << static_cast<int>(norm) << ", replace " << replace);
      const NeighborSamplerOptions o{.fanouts = fanouts, .batch_size = batch_size, .replace = replace, .seed = 11, .norm = norm};
      const samplers::NeighborSampler cpu(g, train, o);
      test::check_same_batches(cpu, samplers::GpuNeighborSampler(g, train, o, core::Device::cuda(0)), max_batches, /*attempt=*/1);
    }
  }
}

}  // namespace

TEST_CASE("GPU neighbor sampler: the CPU sampler's batches, bit for bit", "[gpu][samplers]") {
  check_gpu_sampler(test::random_graph(300, 2400, 5, /*directed=*/true), test::all_nodes(200), {4, 3, -1}, 32, 4);
  const graph::SyntheticGraph s = graph::make_synthetic_graph({.nodes = 20000, .avg_degree = 12, .seed = 4});
  check_gpu_sampler(s.graph, test::all_nodes(12000), {15, 10, 5}, 512, 3);
}

TEST_CASE("GPU neighbor sampler: the CPU sampler's batches on Cora and ogbn-arxiv", "[gpu][samplers][dataset]") {
  GNNPIPE_REQUIRE_DATASET(cora, "cora/converted");
  const graph::Dataset c = graph::io::load_dataset(cora, graph::io::DatasetFormat::kPlanetoidNpy);
  check_gpu_sampler(c.graph, test::vec(c.splits.train), {10, 10}, 32, 8);
  GNNPIPE_REQUIRE_DATASET(arxiv, "ogbn-arxiv/netbenchmark");
  const graph::Dataset a = graph::io::load_dataset(arxiv);
  check_gpu_sampler(a.graph, test::vec(a.splits.train), {15, 10, 5}, 1024, 4);
  // Throughput beside the CPU sampler's (printed; the benchmark is gnnpipe_bench_sampler's
  // NeighborGpuArxiv): batches of 1,024 seeds, [15, 10, 5].
  const NeighborSamplerOptions o{.fanouts = {15, 10, 5}, .batch_size = 1024, .seed = 1};
  const samplers::GpuNeighborSampler gpu(a.graph, test::vec(a.splits.train), o, core::Device::cuda(0));
  const auto ws = gpu.make_workspace();
  const auto plan = gpu.plan_epoch(0);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& spec : plan) gpu.sample(spec, *ws);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GPU neighbor sampler, arxiv [15, 10, 5] x 1,024 seeds: %.2f ms a batch (%zu batches)\n",
              1e3 * s / static_cast<double>(plan.size()), plan.size());
}

namespace {

// GraphSAINT and Cluster-GCN on the GPU against their CPU samplers, every mode and norm.
void check_gpu_subgraph_samplers(const graph::CsrGraph& g, const std::vector<NodeId>& train, int budget, int parts,
                                 std::size_t max_batches) {
  for (const auto mode : {samplers::SaintMode::kNode, samplers::SaintMode::kEdge, samplers::SaintMode::kRandomWalk}) {
    for (const auto norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn, graph::BlockNorm::kSelfLoops}) {
      for (const bool normalize : {true, false}) {
        INFO("saint mode " << static_cast<int>(mode) << ", norm " << static_cast<int>(norm) << ", normalize " << normalize);
        const samplers::SaintSampler cpu(g, train, {.mode = mode, .budget = budget, .walk_length = 3, .steps_per_epoch = 4,
                                                    .norm_samples = 40, .normalize = normalize, .seed = 5, .norm = norm});
        test::check_same_batches(cpu, samplers::GpuSaintSampler(cpu, core::Device::cuda(0)), max_batches, /*attempt=*/2);
      }
    }
  }
  const test::TempDir cache;
  for (const auto norm : {graph::BlockNorm::kMean, graph::BlockNorm::kGcn, graph::BlockNorm::kSelfLoops, graph::BlockNorm::kNone}) {
    INFO("cluster norm " << static_cast<int>(norm));
    const samplers::ClusterSampler cpu(g, train, {.num_parts = parts, .parts_per_batch = 3, .cache_dir = cache.path(), .seed = 3, .norm = norm});
    test::check_same_batches(cpu, samplers::GpuClusterSampler(cpu, core::Device::cuda(0)), max_batches);
  }
}

}  // namespace

TEST_CASE("GPU GraphSAINT and Cluster-GCN samplers: the CPU samplers' batches, bit for bit", "[gpu][samplers]") {
  check_gpu_subgraph_samplers(test::random_graph(300, 2400, 5, /*directed=*/true), test::all_nodes(200), 40, 6, 3);
  const graph::SyntheticGraph s = graph::make_synthetic_graph({.nodes = 20000, .avg_degree = 12, .seed = 4});
  check_gpu_subgraph_samplers(s.graph, test::all_nodes(12000), 1500, 40, 2);
}

#endif
