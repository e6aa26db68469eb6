// gnnpipe_bench_spmm (Google Benchmark): a GCN layer's forward store on the CPU, on the real
// ogbn-arxiv graph's whole-graph GCN block (symmetrized, self-loops, deg^-1/2 weights), F wide
// (arguments: F / threads, oneTBB limited to `threads`):
//   SpmmBiasReluApart  cpu::spmm, then bias_add, then relu: three passes over y (before issue #39 item 7)
//   SpmmBiasReluFused  cpu::spmm_bias with relu: the bias and ReLU in the SpMM's store (one pass)
//   SpmmAlone          cpu::spmm alone: the floor of either
// Skipped when ogbn-arxiv is absent ($GNNPIPE_DATA_DIR or ../shared/datasets).
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <memory>
#include <vector>

#include "bench_graphs.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/spmm.hpp"

namespace {

using namespace gnnpipe;

struct Case {
  graph::Block block;
  models::Matrix<float> x, y, bias;
};

// The block and matrices of one width, built once per width.
Case* case_of(int64_t f) {
  static std::vector<std::unique_ptr<Case>> cases;
  for (auto& c : cases) {
    if (c->x.cols() == f) return c.get();
  }
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) return nullptr;
  auto c = std::make_unique<Case>(Case{graph::full_graph_block(g->graph, graph::BlockNorm::kGcn),
                                       models::Matrix<float>(g->graph.num_nodes(), f),
                                       models::Matrix<float>(g->graph.num_nodes(), f), models::Matrix<float>(1, f)});
  core::Rng rng(3, {1});
  for (float& v : c->x.flat()) v = rng.uniform() - 0.5f;
  for (float& v : c->bias.flat()) v = rng.uniform() - 0.5f;
  cases.push_back(std::move(c));
  return cases.back().get();
}

template <class Body>
void run(benchmark::State& state, Body body) {
  Case* c = case_of(state.range(0));
  if (c == nullptr) {
    state.SkipWithError("ogbn-arxiv not found");
    return;
  }
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                                    static_cast<std::size_t>(state.range(1)));
  for (auto _ : state) {
    body(*c);
    benchmark::DoNotOptimize(c->y.flat().data());
  }
  state.counters["edges/s"] =
      benchmark::Counter(static_cast<double>(c->block.num_edges()), benchmark::Counter::kIsIterationInvariantRate);
}

void SpmmBiasReluApart(benchmark::State& state) {
  run(state, [](Case& c) {
    models::cpu::spmm<float>(c.block, c.x.view(), c.y.view());
    models::cpu::bias_add<float>(c.y.view(), c.bias.flat());
    models::cpu::relu<float>(c.y.view(), c.y.view());
  });
}

void SpmmBiasReluFused(benchmark::State& state) {
  run(state, [](Case& c) { models::cpu::spmm_bias<float>(c.block, c.x.view(), c.bias.flat(), true, c.y.view()); });
}

void SpmmAlone(benchmark::State& state) {
  run(state, [](Case& c) { models::cpu::spmm<float>(c.block, c.x.view(), c.y.view()); });
}

void args(benchmark::internal::Benchmark* b) {
  for (const int64_t f : {40, 256}) {
    for (const int64_t t : {1, 2}) b->Args({f, t});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(SpmmBiasReluApart)->Apply(args);
BENCHMARK(SpmmBiasReluFused)->Apply(args);
BENCHMARK(SpmmAlone)->Apply(args);
BENCHMARK_MAIN();
