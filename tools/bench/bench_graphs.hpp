#pragma once
// Graphs shared by the gnnpipe_bench_sampler benchmarks, each loaded or generated once per process
// on first use (inline functions: one instance across the benchmark files):
//   arxiv()     the real ogbn-arxiv graph (symmetrized, deduplicated) and its training nodes, from
//               $GNNPIPE_DATA_DIR or ../shared/datasets; nullptr when absent
//   products()  the products-size synthetic graph (2,449,029 nodes, ~61.9 M undirected edges,
//               degree exponent 2.3), generated once (~35 s)
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/synthetic.hpp"

namespace gnnpipe::bench {

struct Graph {
  graph::CsrGraph graph;
  std::vector<graph::NodeId> train;
};

inline std::filesystem::path data_dir() {
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::path(GNNPIPE_SOURCE_DIR) / ".." / "shared" / "datasets";
}

inline graph::CsrGraph symmetrized(const graph::CsrGraph& g) {
  std::vector<graph::NodeId> dst(static_cast<std::size_t>(g.num_edges()));
  for (graph::NodeId v = 0; v < g.num_nodes(); ++v) {
    std::fill(dst.begin() + g.offsets()[static_cast<std::size_t>(v)], dst.begin() + g.offsets()[static_cast<std::size_t>(v) + 1], v);
  }
  return graph::CsrGraph::from_coo(g.num_nodes(), g.indices(), dst, {.symmetrize = true, .dedupe = true});
}

inline const Graph* arxiv() {
  static const std::unique_ptr<Graph> g = [] {
    const auto path = data_dir() / "ogbn-arxiv";
    if (!std::filesystem::exists(path)) return std::unique_ptr<Graph>();
    const graph::Dataset d = graph::io::load_dataset(path);
    return std::make_unique<Graph>(Graph{symmetrized(d.graph), {d.splits.train.begin(), d.splits.train.end()}});
  }();
  return g.get();
}

inline const Graph* products() {
  static const std::unique_ptr<Graph> g = [] {
    graph::SyntheticOptions o;
    o.nodes = 2449029;
    o.avg_degree = 2.0 * 61859140 / 2449029;
    o.features = 1;
    o.classes = 47;
    o.homophily = 0.81;
    o.power_law_exponent = 2.3;
    graph::Dataset d = graph::make_synthetic(o);
    return std::make_unique<Graph>(Graph{std::move(d.graph), {d.splits.train.begin(), d.splits.train.end()}});
  }();
  return g.get();
}

}  // namespace gnnpipe::bench
