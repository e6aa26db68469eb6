// gnnpipe_bench_synth: measures the synthetic generator (wall time, peak RSS) and how realistic
// its graphs are for mini-batch sampling: the distinct nodes touched by a neighbor sample with
// fanouts [15, 10, 5] from 1,024 training seeds (PyG NeighborLoader order: the seeds take 15
// in-neighbors without replacement, the nodes new in that hop take 10, the next new ones 5).
//
// Usage: gnnpipe_bench_synth [--preset products|arxiv] [--nodes N] [--avg-degree D] [--features F]
//                            [--classes K] [--homophily H] [--exponent G] [--seed S] [--batches B]
//        gnnpipe_bench_synth --dataset PATH [--symmetrize] [--seed S] [--batches B]
//          (a real dataset instead of a generated one: load time, then the same sample count;
//           --symmetrize adds reverse edges first, as PyG's to_undirected does)
// Presets match the ogbn graphs in size: products 2,449,029 nodes, 61.86 M undirected edges, 100
// features, 47 classes, edge homophily 0.81, and degree exponent 2.3 (measured: with it a
// [15,10,5] sample touches ~0.44 M nodes, inside the 0.40-0.46 M published for ogbn-products;
// 2.5 gives ~0.53 M, 2.2 ~0.38 M); arxiv 169,343 nodes, 1.17 M undirected edges, 128
// features, 40 classes, edge homophily 0.65.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/synthetic.hpp"

namespace {

using gnnpipe::graph::CsrGraph;
using gnnpipe::graph::NodeId;
using gnnpipe::graph::SyntheticOptions;

// Distinct nodes of one [fanouts] neighbor sample from `seeds` (distinct). `seen` is all-false
// scratch of num_nodes entries and is all-false again on return.
std::size_t count_sampled_nodes(const CsrGraph& g, std::span<const NodeId> seeds, std::span<const int> fanouts,
                                gnnpipe::core::Rng& rng, std::vector<char>& seen) {
  std::vector<NodeId> nodes(seeds.begin(), seeds.end());
  for (NodeId s : seeds) seen[static_cast<std::size_t>(s)] = 1;
  std::vector<std::size_t> picked;
  auto visit = [&](NodeId u) {
    if (!seen[static_cast<std::size_t>(u)]) {
      seen[static_cast<std::size_t>(u)] = 1;
      nodes.push_back(u);
    }
  };
  std::size_t begin = 0;
  for (int fanout : fanouts) {
    const std::size_t end = nodes.size();
    const auto k = static_cast<std::size_t>(fanout);
    for (std::size_t i = begin; i < end; ++i) {
      const auto row = g.in_neighbors(nodes[i]);
      if (row.size() <= k) {
        for (NodeId u : row) visit(u);
        continue;
      }
      // Floyd's algorithm: k distinct positions out of row.size().
      picked.clear();
      for (std::size_t j = row.size() - k; j < row.size(); ++j) {
        const std::size_t t = rng.below(j + 1);
        picked.push_back(std::find(picked.begin(), picked.end(), t) == picked.end() ? t : j);
      }
      for (std::size_t p : picked) visit(row[p]);
    }
    begin = end;
  }
  for (NodeId u : nodes) seen[static_cast<std::size_t>(u)] = 0;
  return nodes.size();
}

double edge_homophily(const CsrGraph& g, std::span<const int32_t> labels) {
  std::size_t same = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    for (NodeId u : g.in_neighbors(v)) same += labels[static_cast<std::size_t>(u)] == labels[static_cast<std::size_t>(v)];
  }
  return static_cast<double>(same) / static_cast<double>(g.num_edges());
}

int run(int argc, char** argv) {
  SyntheticOptions o;
  int batches = 20;
  std::string dataset_path;
  bool symmetrize = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--symmetrize") {
      symmetrize = true;
      continue;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (value == nullptr) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return 2;
    }
    ++i;
    if (arg == "--preset" && std::string_view(value) == "products") {
      o.nodes = 2449029, o.avg_degree = 2.0 * 61859140 / 2449029, o.features = 100, o.classes = 47, o.homophily = 0.81,
      o.power_law_exponent = 2.3;
    } else if (arg == "--preset" && std::string_view(value) == "arxiv") {
      o.nodes = 169343, o.avg_degree = 2.0 * 1166243 / 169343, o.features = 128, o.classes = 40, o.homophily = 0.65;
    } else if (arg == "--nodes") {
      o.nodes = std::atoll(value);
    } else if (arg == "--avg-degree") {
      o.avg_degree = std::atof(value);
    } else if (arg == "--features") {
      o.features = std::atoi(value);
    } else if (arg == "--classes") {
      o.classes = std::atoi(value);
    } else if (arg == "--homophily") {
      o.homophily = std::atof(value);
    } else if (arg == "--exponent") {
      o.power_law_exponent = std::atof(value);
    } else if (arg == "--seed") {
      o.seed = std::strtoull(value, nullptr, 10);
    } else if (arg == "--dataset") {
      dataset_path = value;
    } else if (arg == "--batches") {
      batches = std::atoi(value);
    } else {
      std::fprintf(stderr, "unknown argument %s %s\n", argv[i - 1], value);
      return 2;
    }
  }

  const auto start = std::chrono::steady_clock::now();
  gnnpipe::graph::Dataset d =
      dataset_path.empty() ? gnnpipe::graph::make_synthetic(o) : gnnpipe::graph::io::load_dataset(dataset_path);
  if (symmetrize) {
    std::vector<NodeId> src(static_cast<std::size_t>(d.graph.num_edges()));
    for (NodeId v = 0; v < d.graph.num_nodes(); ++v) {
      std::fill(src.begin() + d.graph.offsets()[static_cast<std::size_t>(v)],
                src.begin() + d.graph.offsets()[static_cast<std::size_t>(v) + 1], v);
    }
    // Edge (row v, column u) is u -> v: build with sources = columns, destinations = rows.
    d.graph = CsrGraph::from_coo(d.graph.num_nodes(), d.graph.indices(), src, {.symmetrize = true, .dedupe = true});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const CsrGraph& g = d.graph;
  std::printf("%s\n", dataset_path.empty() ? d.synthesized.front().c_str() : ("dataset " + d.name).c_str());
  std::printf("%s: %.2f s, peak RSS %.0f MiB\n", dataset_path.empty() ? "generation" : "load", seconds, static_cast<double>(gnnpipe::core::peak_rss_bytes()) / (1 << 20));

  std::vector<gnnpipe::graph::EdgeOffset> degrees(static_cast<std::size_t>(g.num_nodes()));
  for (NodeId v = 0; v < g.num_nodes(); ++v) degrees[static_cast<std::size_t>(v)] = g.in_degree(v);
  std::sort(degrees.begin(), degrees.end());
  std::printf("graph: %d nodes, %lld undirected edges (avg degree %.2f), degree median %lld, p99 %lld, max %lld, "
              "isolated %lld, edge homophily %.3f\n",
              g.num_nodes(), static_cast<long long>(g.num_edges() / 2),
              static_cast<double>(g.num_edges()) / g.num_nodes(), static_cast<long long>(degrees[degrees.size() / 2]),
              static_cast<long long>(degrees[degrees.size() * 99 / 100]), static_cast<long long>(degrees.back()),
              static_cast<long long>(std::count(degrees.begin(), degrees.end(), 0)),
              edge_homophily(g, d.labels.single.span()));

  // Seeds: disjoint batches of 1,024 from a seeded shuffle of the training nodes.
  constexpr std::size_t kBatch = 1024;
  const std::vector<int> fanouts{15, 10, 5};
  std::vector<NodeId> train(d.splits.train.begin(), d.splits.train.end());
  gnnpipe::core::Rng rng(o.seed, {0xbe7c4});
  for (std::size_t i = train.size(); i > 1; --i) std::swap(train[i - 1], train[rng.below(i)]);
  std::vector<char> seen(static_cast<std::size_t>(g.num_nodes()), 0);
  std::vector<std::size_t> counts;
  for (int b = 0; b < batches && (static_cast<std::size_t>(b) + 1) * kBatch <= train.size(); ++b) {
    const auto seeds = std::span<const NodeId>(train).subspan(static_cast<std::size_t>(b) * kBatch, kBatch);
    counts.push_back(count_sampled_nodes(g, seeds, fanouts, rng, seen));
  }
  if (counts.empty()) {
    std::printf("sample: fewer than %zu training nodes, nothing sampled\n", kBatch);
    return 0;
  }
  double mean = 0;
  for (std::size_t c : counts) mean += static_cast<double>(c) / static_cast<double>(counts.size());
  std::printf("sample [15,10,5] x 1024 seeds: %.0f distinct nodes on average over %zu batches (min %zu, max %zu)\n",
              mean, counts.size(), *std::min_element(counts.begin(), counts.end()),
              *std::max_element(counts.begin(), counts.end()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const gnnpipe::core::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.message().c_str());
    return 2;
  }
}
