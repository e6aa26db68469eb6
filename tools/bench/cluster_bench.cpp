// Cluster-GCN benchmarks in gnnpipe_bench_sampler (Google Benchmark), on the real ogbn-arxiv graph
// (symmetrized; from $GNNPIPE_DATA_DIR or ../shared/datasets; skipped when absent):
//   MetisArxiv/<P>                   METIS k-way partition of arxiv into P parts (no cache), s
//   ClusterArxiv/<P>/<q>             one batch of q joined parts on one thread (GCN weights):
//                                    ms/batch, nodes and edges per batch
//   ClusterArxivTwoThreads/<P>/<q>   two batches at once on two threads (one workspace each), as
//                                    batches/s
// P = 1500 and q = 20 follow Cluster-GCN's Reddit setting (232 k nodes; the paper and PyG's
// example), which on arxiv's 169 k nodes gives ~2.3 k-node batches; q = 200 gives ~23 k-node
// batches, the size of a [15, 10, 5] neighbor batch of 1,024 seeds.
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "bench_graphs.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/graph_partition.hpp"

namespace {

using namespace gnnpipe;

using bench::arxiv;

// One sampler per (P, q), built on first use (METIS runs once per P and seed).
const samplers::ClusterSampler& sampler(int parts, int per_batch) {
  static std::map<std::pair<int, int>, std::unique_ptr<samplers::ClusterSampler>> samplers;
  auto& s = samplers[{parts, per_batch}];
  if (!s) {
    s = std::make_unique<samplers::ClusterSampler>(
        arxiv()->graph, arxiv()->train,
        samplers::ClusterSamplerOptions{.num_parts = parts, .parts_per_batch = per_batch, .seed = 1, .norm = graph::BlockNorm::kGcn});
  }
  return *s;
}

void MetisArxiv(benchmark::State& state) {
  if (arxiv() == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  for (auto _ : state) {
    const auto parts = samplers::partition_graph(arxiv()->graph, static_cast<int>(state.range(0)), 1);
    benchmark::DoNotOptimize(parts.data());
  }
}

void ClusterArxiv(benchmark::State& state) {
  if (arxiv() == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
  const auto& s = sampler(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const auto plan = s.plan_epoch(0);
  auto ws = s.make_workspace();
  std::size_t i = 0;
  int64_t nodes = 0, edges = 0;
  for (auto _ : state) {
    const graph::MiniBatch b = s.sample(plan[i++ % plan.size()], *ws);
    nodes += b.blocks[0].num_src;
    edges += b.blocks[0].num_edges();
    benchmark::DoNotOptimize(b.blocks.data());
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["batches/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["nodes/batch"] = static_cast<double>(nodes) / n;
  state.counters["edges/batch"] = static_cast<double>(edges) / n;
  state.counters["batches/epoch"] = static_cast<double>(plan.size());
}

void ClusterArxivTwoThreads(benchmark::State& state) {
  if (arxiv() == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  const tbb::global_control two(tbb::global_control::max_allowed_parallelism, 2);
  const auto& s = sampler(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const auto plan = s.plan_epoch(0);
  std::unique_ptr<samplers::SamplerWorkspace> ws[2] = {s.make_workspace(), s.make_workspace()};
  std::size_t i = 0;
  for (auto _ : state) {
    tbb::parallel_for(0, 2, [&](int t) {
      const graph::MiniBatch b = s.sample(plan[(i + static_cast<std::size_t>(t)) % plan.size()], *ws[t]);
      benchmark::DoNotOptimize(b.blocks.data());
    });
    i += 2;
  }
  state.counters["batches/s"] = benchmark::Counter(2.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(MetisArxiv)->Arg(1500)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ClusterArxiv)->Args({1500, 20})->Args({1500, 200})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ClusterArxivTwoThreads)->Args({1500, 20})->Args({1500, 200})->Unit(benchmark::kMillisecond)->UseRealTime();
