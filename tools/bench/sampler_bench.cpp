// gnnpipe_bench_sampler (Google Benchmark): neighbor-sampler throughput on one core, batches of
// 1,024 seeds, as batches/s and sampled edges/s:
//   NeighborArxiv/<fanouts>    the real ogbn-arxiv graph (symmetrized), from $GNNPIPE_DATA_DIR or
//                              ../shared/datasets; skipped when absent
//   NeighborProducts/<fanouts> the products-size synthetic graph (2,449,029 nodes, ~61.9 M
//                              undirected edges, degree exponent 2.3), generated once (~35 s)
// Anchor: pyg-lib samples an ogbn-products batch of 1,024 seeds at [10, 5] in about 20 ms on one
// core, and arxiv [15, 10, 5] in 31.4 ms (../shared/reference/README.md).
#include <benchmark/benchmark.h>

#include "bench_graphs.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"

namespace {

using namespace gnnpipe;
using bench::arxiv;
using bench::Graph;
using bench::products;

void run(benchmark::State& state, const Graph* g, std::vector<int> fanouts) {
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  const samplers::NeighborSampler sampler(g->graph, g->train, {.fanouts = fanouts, .batch_size = 1024, .seed = 1});
  const auto plan = sampler.plan_epoch(0);
  auto ws = sampler.make_workspace();
  std::size_t i = 0;
  int64_t edges = 0, nodes = 0;
  for (auto _ : state) {
    const graph::MiniBatch b = sampler.sample(plan[i++ % plan.size()], *ws);
    edges += b.shape.total_edges();
    nodes += b.blocks.front().num_src;
    benchmark::DoNotOptimize(b.blocks.data());
  }
  state.counters["batches/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["edges/s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
  state.counters["nodes/batch"] = static_cast<double>(nodes) / static_cast<double>(state.iterations());
}

void NeighborArxiv_15_10_5(benchmark::State& s) { run(s, arxiv(), {15, 10, 5}); }
void NeighborProducts_10_5(benchmark::State& s) { run(s, products(), {10, 5}); }
void NeighborProducts_15_10_5(benchmark::State& s) { run(s, products(), {15, 10, 5}); }

}  // namespace

BENCHMARK(NeighborArxiv_15_10_5)->Unit(benchmark::kMillisecond);
BENCHMARK(NeighborProducts_10_5)->Unit(benchmark::kMillisecond);
BENCHMARK(NeighborProducts_15_10_5)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
