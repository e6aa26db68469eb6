// Edge-cut benchmarks (part of gnnpipe_bench_sampler) on the real ogbn-arxiv graph (symmetrized;
// skipped when absent):
//   PageRankArxiv/threads:N   graph::pagerank with the default options (uncached), oneTBB limited
//                             to N threads; counters: iterations, edges per second per iteration
//   EdgeCutArxiv/<strategy>   EdgeCutPlan on a [15, 10, 5] neighbor batch of 1,024 seeds (kMean),
//                             then cut(half of its removable edges): ranking plus one rebuild
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <memory>

#include "bench_graphs.hpp"
#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/graph/pagerank.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"

namespace {

using namespace gnnpipe;

void PageRankArxiv(benchmark::State& state) {
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(0)));
  int iterations = 0;
  for (auto _ : state) {
    const graph::PageRank pr = graph::pagerank(g->graph);
    iterations = pr.iterations;
    benchmark::DoNotOptimize(pr.scores.data());
  }
  state.counters["iterations"] = iterations;
  state.counters["edges/s"] = benchmark::Counter(static_cast<double>(g->graph.num_edges()) * iterations,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(PageRankArxiv)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void EdgeCutArxiv(benchmark::State& state) {
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  const auto strategy = static_cast<graph::CutStrategy>(state.range(0));
  state.SetLabel(std::string(memory::to_string(strategy)));
  static const auto batch = [&] {
    const samplers::NeighborSampler sampler(g->graph, g->train, {.fanouts = {15, 10, 5}, .batch_size = 1024, .seed = 1});
    auto ws = sampler.make_workspace();
    return std::make_shared<graph::MiniBatch>(sampler.sample(sampler.plan_epoch(0)[0], *ws));
  }();
  const graph::NodeScores scores = graph::node_scores(g->graph, strategy);  // cached PageRank: once
  for (auto _ : state) {
    const graph::EdgeCutPlan plan(*batch, scores, {.key = graph::cut_rng_key(1, 0, 0), .weights = graph::CutWeights::kRowMean});
    graph::EdgeCut cut = plan.cut(plan.removable_edges() / 2);
    benchmark::DoNotOptimize(cut.batch.blocks.data());
  }
  state.counters["edges"] = static_cast<double>(batch->shape.total_edges());
}
BENCHMARK(EdgeCutArxiv)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
