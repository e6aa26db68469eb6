// gnnpipe_bench_sampler (Google Benchmark): neighbor-sampler throughput on one core and with two
// batches sampled at once on two threads (`_TwoThreads`), batches of 1,024 seeds, as batches/s and
// sampled edges/s (`NeighborTwin*`: the GPU sampler's data-parallel twin on the CPU, same batches;
// `NeighborGpu*`: the GPU sampler on cuda:0, its batches copied back and assembled on the host):
//   NeighborArxiv/<fanouts>    the real ogbn-arxiv graph (symmetrized), from $GNNPIPE_DATA_DIR or
//                              ../shared/datasets; skipped when absent
//   NeighborProducts/<fanouts> the products-size synthetic graph (2,449,029 nodes, ~61.9 M
//                              undirected edges, degree exponent 2.3), generated once (~35 s)
// Anchor: pyg-lib samples an ogbn-products batch of 1,024 seeds at [10, 5] in about 20 ms on one
// core, and arxiv [15, 10, 5] in 31.4 ms (PyG's timings, docs/BENCHMARKS.md).
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <memory>
#include <span>

#include "bench_graphs.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/samplers/gpu_neighbor_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/neighbor_twin.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"

namespace {

using namespace gnnpipe;
using bench::arxiv;
using bench::Graph;
using bench::products;

// `threads` batches per iteration, sampled concurrently by samplers::ParallelSampler (one
// workspace per thread) under a oneTBB limit of `threads`; 1 = one batch on the calling thread.
enum class Engine { kCpu, kTwin, kGpu };

// `engine`: the CPU sampler, the data-parallel twin of the GPU sampler (same batches, its phases
// on the threads), or the GPU sampler on cuda:0 (skipped without one).
void run(benchmark::State& state, const Graph* g, std::vector<int> fanouts, int threads = 1, Engine engine = Engine::kCpu) {
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  const samplers::NeighborSamplerOptions options{.fanouts = fanouts, .batch_size = 1024, .seed = 1};
  std::unique_ptr<samplers::Sampler> sampler;
  try {
    if (engine == Engine::kTwin) {
      sampler = std::make_unique<samplers::NeighborSamplerTwin>(g->graph, g->train, options);
    } else if (engine == Engine::kGpu) {
      sampler = std::make_unique<samplers::GpuNeighborSampler>(g->graph, g->train, options, core::Device::cuda(0));
    } else {
      sampler = std::make_unique<samplers::NeighborSampler>(g->graph, g->train, options);
    }
  } catch (const core::CudaError& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto plan = sampler->plan_epoch(0);
  samplers::ParallelSampler parallel(*sampler);
  const auto width = static_cast<std::size_t>(threads);
  std::size_t i = 0;
  int64_t edges = 0, nodes = 0, batches = 0;
  for (auto _ : state) {
    if (i + width > plan.size()) i = 0;
    const auto out = parallel.sample(std::span<const samplers::BatchSpec>(plan).subspan(i, width));
    i += width;
    for (const graph::MiniBatch& b : out) {
      edges += b.shape.total_edges();
      nodes += b.blocks.front().num_src;
      ++batches;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["batches/s"] = benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
  state.counters["edges/s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
  state.counters["nodes/batch"] = static_cast<double>(nodes) / static_cast<double>(std::max<int64_t>(1, batches));
}

void NeighborArxiv_15_10_5(benchmark::State& s) { run(s, arxiv(), {15, 10, 5}); }
void NeighborArxiv_15_10_5_TwoThreads(benchmark::State& s) { run(s, arxiv(), {15, 10, 5}, 2); }
void NeighborTwinArxiv_15_10_5(benchmark::State& s) { run(s, arxiv(), {15, 10, 5}, 1, Engine::kTwin); }
void NeighborGpuArxiv_15_10_5(benchmark::State& s) { run(s, arxiv(), {15, 10, 5}, 1, Engine::kGpu); }
void NeighborGpuProducts_15_10_5(benchmark::State& s) { run(s, products(), {15, 10, 5}, 1, Engine::kGpu); }
void NeighborProducts_10_5(benchmark::State& s) { run(s, products(), {10, 5}); }
void NeighborProducts_10_5_TwoThreads(benchmark::State& s) { run(s, products(), {10, 5}, 2); }
void NeighborProducts_15_10_5(benchmark::State& s) { run(s, products(), {15, 10, 5}); }
void NeighborProducts_15_10_5_TwoThreads(benchmark::State& s) { run(s, products(), {15, 10, 5}, 2); }

}  // namespace

BENCHMARK(NeighborArxiv_15_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborArxiv_15_10_5_TwoThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborTwinArxiv_15_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborGpuArxiv_15_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborGpuProducts_15_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborProducts_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborProducts_10_5_TwoThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborProducts_15_10_5)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(NeighborProducts_15_10_5_TwoThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
