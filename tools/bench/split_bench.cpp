// split_batch benchmarks (part of gnnpipe_bench_sampler), one thread (oneTBB limited to 1): the time
// to split one sampled batch into k = 2, 4, 8 micro-batches (split_batch, blocks and transposes
// built) or only to size them (split_shapes), and how much the micro-batches hold together
// relative to the parent (a node or edge reached from two parts is counted in both):
//   Split*Products   a [15, 10, 5] neighbor batch of 1,024 seeds on the products-size synthetic
//                    graph (~0.44 M nodes), generated once (~35 s)
//   Split*Arxiv      the same on real ogbn-arxiv (symmetrized; skipped when absent), and a
//                    GraphSAINT random-walk subgraph (10,000 roots, walk length 2, 2 layers)
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <memory>

#include "bench_graphs.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"

namespace {

using namespace gnnpipe;

struct Parent {
  graph::MiniBatch batch;
  std::size_t layers = 0;
};

std::unique_ptr<Parent> neighbor_batch(const bench::Graph* g) {
  if (g == nullptr) return nullptr;
  const samplers::NeighborSampler sampler(g->graph, g->train, {.fanouts = {15, 10, 5}, .batch_size = 1024, .seed = 1});
  auto ws = sampler.make_workspace();
  return std::make_unique<Parent>(Parent{sampler.sample(sampler.plan_epoch(0).front(), *ws), 3});
}

std::unique_ptr<Parent> saint_batch(const bench::Graph* g) {
  if (g == nullptr) return nullptr;
  const samplers::SaintSampler sampler(
      g->graph, g->train, {.budget = 10000, .walk_length = 2, .steps_per_epoch = 16, .norm_samples = 16, .seed = 1});
  auto ws = sampler.make_workspace();
  return std::make_unique<Parent>(Parent{sampler.sample(sampler.plan_epoch(0).front(), *ws), 2});
}

const Parent* products_neighbor() {
  static const auto p = neighbor_batch(bench::products());
  return p.get();
}
const Parent* arxiv_neighbor() {
  static const auto p = neighbor_batch(bench::arxiv());
  return p.get();
}
const Parent* arxiv_saint() {
  static const auto p = saint_batch(bench::arxiv());
  return p.get();
}

void run(benchmark::State& state, const Parent* p, bool shapes_only) {
  if (p == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
  const auto parts = static_cast<int>(state.range(0));
  for (auto _ : state) {
    if (shapes_only) {
      auto shapes = graph::split_shapes(p->batch, p->layers, parts);
      benchmark::DoNotOptimize(shapes.data());
    } else {
      auto micros = graph::split_batch(p->batch, p->layers, parts);
      benchmark::DoNotOptimize(micros.data());
    }
  }
  int64_t nodes = 0, edges = 0;
  for (const auto& s : graph::split_shapes(p->batch, p->layers, parts)) {
    nodes += s.src_nodes.front();
    edges += s.total_edges();
  }
  state.counters["parent_nodes"] = static_cast<double>(p->batch.shape.src_nodes.front());
  state.counters["parent_edges"] = static_cast<double>(p->batch.shape.total_edges());
  state.counters["nodes_ratio"] = static_cast<double>(nodes) / static_cast<double>(p->batch.shape.src_nodes.front());
  state.counters["edges_ratio"] = static_cast<double>(edges) / static_cast<double>(p->batch.shape.total_edges());
}

void SplitProducts_15_10_5(benchmark::State& s) { run(s, products_neighbor(), false); }
void SplitShapesProducts_15_10_5(benchmark::State& s) { run(s, products_neighbor(), true); }
void SplitArxiv_15_10_5(benchmark::State& s) { run(s, arxiv_neighbor(), false); }
void SplitShapesArxiv_15_10_5(benchmark::State& s) { run(s, arxiv_neighbor(), true); }
void SplitSaintRwArxiv(benchmark::State& s) { run(s, arxiv_saint(), false); }
void SplitShapesSaintRwArxiv(benchmark::State& s) { run(s, arxiv_saint(), true); }

}  // namespace

BENCHMARK(SplitProducts_15_10_5)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SplitShapesProducts_15_10_5)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SplitArxiv_15_10_5)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SplitShapesArxiv_15_10_5)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SplitSaintRwArxiv)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(SplitShapesSaintRwArxiv)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
