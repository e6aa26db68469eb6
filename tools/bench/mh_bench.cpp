// gnnpipe_bench_sampler's MH-Aug benchmarks (issue #41): one proposal of the chain on the real
// ogbn-arxiv graph (symmetrized, self-loops stripped): draw the ratios and the exact-count drops,
// compute the candidate's deltas (two K = 2 width-1 aggregates over the graph) and log A. The
// chain's cost per proposal on the host, against which the pipeline stage's is to be measured.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_graphs.hpp"
#include "gnnpipe/samplers/mh_aug.hpp"

namespace {

using namespace gnnpipe;

void MhProposalArxiv(benchmark::State& state) {
  const bench::Graph* g = bench::arxiv();
  if (g == nullptr) {
    state.SkipWithError("dataset not found (set GNNPIPE_DATA_DIR)");
    return;
  }
  static const graph::CsrGraph stripped = g->graph.normalized({.self_loops = graph::SelfLoops::kRemove});
  const samplers::mh::MhChain chain(stripped, {});
  const std::vector<double> ent(static_cast<std::size_t>(stripped.num_nodes()), 0.5);
  int64_t t = 0;
  double sum = 0;
  for (auto _ : state) {
    const samplers::mh::MhCandidate c = chain.propose(t++);
    const samplers::mh::MhDeltas d = samplers::mh::deltas(stripped, chain.ego(), c.masks, 2);
    sum += chain.log_acceptance(c, d, ent);
  }
  benchmark::DoNotOptimize(sum);
  state.counters["entries"] = static_cast<double>(stripped.num_edges());
}

}  // namespace

BENCHMARK(MhProposalArxiv)->Unit(benchmark::kMillisecond)->UseRealTime();
