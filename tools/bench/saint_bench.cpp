// GraphSAINT sampler benchmarks (part of gnnpipe_bench_sampler) on the real ogbn-arxiv graph
// (symmetrized; skipped when absent). Budgets are chosen for subgraphs of about 20k of arxiv's
// 169,343 nodes (an eighth of the graph), the scale of PyG's GraphSAINT examples (Flickr: 6,000
// roots, walk length 2; ogbn-products: 20,000 roots, walk length 3):
//   SaintRwArxiv     10,000 roots, walk length 2   ~24.5k nodes, ~217k edges per subgraph
//   SaintNodeArxiv   25,000 node draws             ~18.6k nodes, ~314k edges
//   SaintEdgeArxiv   12,000 edge draws             ~20.9k nodes, ~147k edges
// Each batch is normalized (norm: kMean) with counts from a small pre-sample (its cost does not
// depend on the number of pre-sampled subgraphs). Variants:
//   .../threads:1    one batch after another on one thread (oneTBB limited to 1): ms/batch, nodes
//                    and edges per batch
//   .../threads:2    two batches sampled concurrently (parallel_for over 2 specs, 2 workspaces,
//                    oneTBB limited to 2): time per pair, batches/s
//   SaintNormArxiv   the constructor with norm_samples = 100 (steps_per_epoch fixed, so no pilot):
//                    the pre-sampling of the normalisation counts, on 1 or 2 threads
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <map>
#include <memory>

#include "bench_graphs.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"

namespace {

using namespace gnnpipe;
using samplers::SaintMode;
using samplers::SaintSampler;
using samplers::SaintSamplerOptions;

SaintSamplerOptions options_for(SaintMode mode) {
  SaintSamplerOptions o;
  o.mode = mode;
  o.budget = mode == SaintMode::kRandomWalk ? 10000 : mode == SaintMode::kNode ? 25000 : 12000;
  o.walk_length = 2;
  o.steps_per_epoch = 16;
  o.seed = 1;
  return o;
}

// One sampler per mode, built once per process (Google Benchmark calls a benchmark several times).
const SaintSampler* sampler_for(SaintMode mode) {
  static std::map<SaintMode, std::unique_ptr<SaintSampler>> samplers;
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) return nullptr;
  auto& s = samplers[mode];
  if (!s) {
    SaintSamplerOptions o = options_for(mode);
    o.norm_samples = 20;
    s = std::make_unique<SaintSampler>(g->graph, g->train, o);
  }
  return s.get();
}

void run_batches(benchmark::State& state, SaintMode mode) {
  const SaintSampler* sampler = sampler_for(mode);
  if (sampler == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  const auto threads = static_cast<std::size_t>(state.range(0));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const auto plan = sampler->plan_epoch(0);
  std::vector<std::unique_ptr<samplers::SamplerWorkspace>> workspaces;
  for (std::size_t t = 0; t < threads; ++t) workspaces.push_back(sampler->make_workspace());
  std::size_t next = 0;
  int64_t nodes = 0, edges = 0;
  std::vector<graph::MiniBatch> out(threads);
  for (auto _ : state) {
    if (threads == 1) {
      out[0] = sampler->sample(plan[next % plan.size()], *workspaces[0]);
    } else {
      tbb::parallel_for(std::size_t{0}, threads, [&](std::size_t t) {
        out[t] = sampler->sample(plan[(next + t) % plan.size()], *workspaces[t]);
      });
    }
    next += threads;
    for (const auto& b : out) {
      nodes += b.blocks[0].num_src;
      edges += b.blocks[0].num_edges();
    }
    benchmark::DoNotOptimize(out.data());
  }
  const auto batches = static_cast<double>(state.iterations()) * static_cast<double>(threads);
  state.counters["batches/s"] = benchmark::Counter(batches, benchmark::Counter::kIsRate);
  state.counters["nodes/batch"] = static_cast<double>(nodes) / batches;
  state.counters["edges/batch"] = static_cast<double>(edges) / batches;
}

void run_norms(benchmark::State& state, SaintMode mode) {
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(0)));
  SaintSamplerOptions o = options_for(mode);
  o.norm_samples = 100;
  for (auto _ : state) {
    const SaintSampler sampler(g->graph, g->train, o);
    benchmark::DoNotOptimize(sampler.node_counts().data());
  }
  state.counters["subgraphs/s"] = benchmark::Counter(100.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void SaintRwArxiv(benchmark::State& s) { run_batches(s, SaintMode::kRandomWalk); }
void SaintNodeArxiv(benchmark::State& s) { run_batches(s, SaintMode::kNode); }
void SaintEdgeArxiv(benchmark::State& s) { run_batches(s, SaintMode::kEdge); }
void SaintNormRwArxiv(benchmark::State& s) { run_norms(s, SaintMode::kRandomWalk); }
void SaintNormNodeArxiv(benchmark::State& s) { run_norms(s, SaintMode::kNode); }
void SaintNormEdgeArxiv(benchmark::State& s) { run_norms(s, SaintMode::kEdge); }

}  // namespace

BENCHMARK(SaintRwArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SaintNodeArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SaintEdgeArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SaintNormRwArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SaintNormNodeArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SaintNormEdgeArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
