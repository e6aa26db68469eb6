#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/pagerank.hpp"
#include "gnnpipe/graph/pagerank_cache.hpp"
#include "graph_helpers.hpp"
#include "sampler_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using Catch::Contains;
using graph::CsrGraph;
using graph::NodeId;
using graph::PageRankOrigin;

namespace {

namespace fs = std::filesystem;

// Converges to the last bits, for comparisons with closed forms.
constexpr graph::PageRankOptions kTight{.damping = 0.85, .tolerance = 1e-15, .max_iterations = 5000};

CsrGraph from_edges(NodeId n, const std::vector<std::pair<NodeId, NodeId>>& edges) {
  std::vector<NodeId> src, dst;
  for (const auto& [u, v] : edges) {
    src.push_back(u);
    dst.push_back(v);
  }
  return CsrGraph::from_coo(n, src, dst);
}

double sum(const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0); }

// Dense power iteration straight from the definition, serial: the reference.
std::vector<double> dense_pagerank(const CsrGraph& g, double d, int iterations) {
  const auto n = static_cast<std::size_t>(g.num_nodes());
  std::vector<double> out(n, 0.0), pr(n, 1.0 / static_cast<double>(n));
  for (std::size_t v = 0; v < n; ++v) {
    for (NodeId u : g.in_neighbors(static_cast<NodeId>(v))) out[static_cast<std::size_t>(u)] += 1.0;
  }
  for (int it = 0; it < iterations; ++it) {
    double dangling = 0.0;
    for (std::size_t u = 0; u < n; ++u) dangling += out[u] == 0.0 ? pr[u] : 0.0;
    std::vector<double> next(n, (1.0 - d) / static_cast<double>(n) + d * dangling / static_cast<double>(n));
    for (std::size_t v = 0; v < n; ++v) {
      for (NodeId u : g.in_neighbors(static_cast<NodeId>(v))) next[v] += d * pr[static_cast<std::size_t>(u)] / out[static_cast<std::size_t>(u)];
    }
    pr = next;
  }
  return pr;
}

}  // namespace

TEST_CASE("PageRank of a directed cycle is uniform", "[graph][pagerank]") {
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId v = 0; v < 7; ++v) edges.emplace_back(v, (v + 1) % 7);
  const auto pr = graph::pagerank(from_edges(7, edges));
  CHECK(pr.converged);
  CHECK(pr.iterations <= 2);
  REQUIRE(pr.scores.size() == 7);
  for (double x : pr.scores) CHECK(x == Approx(1.0 / 7).margin(1e-15));
}

TEST_CASE("PageRank of a symmetric star has its closed form", "[graph][pagerank]") {
  // Centre 0 and k leaves, both directions: x = (1 + d k) / (n (1 + d)), each leaf (1 - x) / k.
  const NodeId k = 5;
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId leaf = 1; leaf <= k; ++leaf) {
    edges.emplace_back(0, leaf);
    edges.emplace_back(leaf, 0);
  }
  const auto pr = graph::pagerank(from_edges(k + 1, edges), kTight);
  CHECK(pr.converged);
  const double d = 0.85, n = k + 1;
  const double centre = (1 + d * k) / (n * (1 + d));
  CHECK(pr.scores[0] == Approx(centre).margin(1e-13));
  for (NodeId leaf = 1; leaf <= k; ++leaf) CHECK(pr.scores[static_cast<std::size_t>(leaf)] == Approx((1 - centre) / k).margin(1e-13));
  CHECK(sum(pr.scores) == Approx(1.0).margin(1e-13));
}

TEST_CASE("PageRank spreads the rank of dangling nodes over all nodes", "[graph][pagerank]") {
  // Leaves 1..k point at centre 0, which points nowhere; node k + 1 is isolated (also dangling).
  // Leaves and the isolated node get y = 1 / (n + d k), the centre y (1 + d k).
  const NodeId k = 4;
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (NodeId leaf = 1; leaf <= k; ++leaf) edges.emplace_back(leaf, 0);
  const auto pr = graph::pagerank(from_edges(k + 2, edges), kTight);
  CHECK(pr.converged);
  const double d = 0.85, n = k + 2;
  const double y = 1.0 / (n + d * k);
  CHECK(pr.scores[0] == Approx(y * (1 + d * k)).margin(1e-13));
  for (NodeId v = 1; v <= k + 1; ++v) CHECK(pr.scores[static_cast<std::size_t>(v)] == Approx(y).margin(1e-13));
  CHECK(sum(pr.scores) == Approx(1.0).margin(1e-13));
}

TEST_CASE("PageRank sums to one and matches a dense reference on random graphs", "[graph][pagerank]") {
  for (bool directed : {false, true}) {
    INFO("directed " << directed);  // directed: repeated edges, self-loops and dangling nodes
    const CsrGraph g = test::random_graph(300, 700, 41, directed);
    const auto pr = graph::pagerank(g, kTight);
    CHECK(pr.converged);
    CHECK(sum(pr.scores) == Approx(1.0).margin(1e-12));
    const auto ref = dense_pagerank(g, 0.85, 400);
    for (std::size_t v = 0; v < ref.size(); ++v) CHECK(pr.scores[v] == Approx(ref[v]).margin(1e-14));
  }
  // The default options stop early but close: L1 error below tolerance * d / (1 - d).
  const CsrGraph g = test::random_graph(2000, 6000, 42, true);
  const auto loose = graph::pagerank(g);
  const auto tight = graph::pagerank(g, kTight);
  CHECK(loose.converged);
  CHECK(loose.iterations < tight.iterations);
  double l1 = 0.0;
  for (std::size_t v = 0; v < tight.scores.size(); ++v) l1 += std::abs(loose.scores[v] - tight.scores[v]);
  CHECK(l1 < 1e-6 * 0.85 / 0.15);
}

TEST_CASE("PageRank is bitwise equal for 1 and 2 threads", "[graph][pagerank][tsan]") {
  // Enough nodes for several reduction chunks; a directed graph has dangling nodes.
  const CsrGraph g = test::random_graph(30000, 120000, 43, true);
  auto run = [&](int threads) {
    tbb::task_arena arena(threads);
    return arena.execute([&] { return graph::pagerank(g); });
  };
  const auto one = run(1);
  const auto two = run(2);
  CHECK(one.iterations == two.iterations);
  CHECK(std::memcmp(&one.delta, &two.delta, sizeof(double)) == 0);
  REQUIRE(one.scores.size() == two.scores.size());
  CHECK(std::memcmp(one.scores.data(), two.scores.data(), one.scores.size() * sizeof(double)) == 0);
}

TEST_CASE("PageRank: edge cases and bad options", "[graph][pagerank]") {
  CHECK(graph::pagerank(CsrGraph::from_coo(0, std::vector<NodeId>{}, std::vector<NodeId>{})).scores.empty());
  const auto edgeless = graph::pagerank(CsrGraph::from_coo(4, std::vector<NodeId>{}, std::vector<NodeId>{}));
  for (double x : edgeless.scores) CHECK(x == Approx(0.25).margin(1e-15));
  // max_iterations stops an unconverged run, which says so.
  const CsrGraph g = test::random_graph(100, 300, 44, true);
  const auto capped = graph::pagerank(g, {.damping = 0.85, .tolerance = 0.0, .max_iterations = 3});
  CHECK(capped.iterations == 3);
  CHECK_FALSE(capped.converged);
  CHECK(sum(capped.scores) == Approx(1.0).margin(1e-12));

  auto config_error = [&](graph::PageRankOptions o) { return test::message_of<core::ConfigError>([&] { graph::pagerank(g, o); }); };
  CHECK_THAT(config_error({.damping = 1.0}), Contains("damping"));
  CHECK_THAT(config_error({.damping = -0.1}), Contains("damping"));
  CHECK_THAT(config_error({.tolerance = -1.0}), Contains("tolerance"));
  CHECK_THAT(config_error({.max_iterations = 0}), Contains("max_iterations"));
}

TEST_CASE("the PageRank memory cache returns the same object without recomputing", "[graph][pagerank]") {
  const CsrGraph g = test::random_graph(500, 2000, 45, true);
  const auto direct = graph::pagerank(g);
  {
    const graph::CachedPageRank first = graph::cached_pagerank(g);
    CHECK(first.origin == PageRankOrigin::kComputed);
    CHECK(first.pagerank->scores == direct.scores);

    const graph::CachedPageRank again = graph::cached_pagerank(g);
    CHECK(again.origin == PageRankOrigin::kMemory);
    CHECK(again.pagerank == first.pagerank);
    // Keyed by structure, not by object: an equal graph built separately hits the cache too.
    const CsrGraph twin = test::random_graph(500, 2000, 45, true);
    CHECK(graph::cached_pagerank(twin).pagerank == first.pagerank);
    // Other options are another entry.
    const auto other = graph::cached_pagerank(g, {.damping = 0.5});
    CHECK(other.origin == PageRankOrigin::kComputed);
    CHECK(other.pagerank != first.pagerank);
  }
  // The cache holds no reference of its own: once every holder is gone it computes again.
  const auto fresh = graph::cached_pagerank(g);
  CHECK(fresh.origin == PageRankOrigin::kComputed);
  CHECK(fresh.pagerank->scores == direct.scores);
}

TEST_CASE("the PageRank disk cache is written once and then loaded", "[graph][pagerank]") {
  const test::TempDir dir;
  const fs::path cache = dir / "cache";  // created on first use
  const CsrGraph g = test::random_graph(400, 1500, 46, true);
  const auto direct = graph::pagerank(g);
  const fs::path file = cache / graph::pagerank_cache_name(g);
  CHECK(file.filename().string().starts_with("pagerank-"));
  CHECK(graph::cached_pagerank(g, {}, cache).origin == PageRankOrigin::kComputed);
  REQUIRE(fs::exists(file));
  CHECK(fs::file_size(file) == 64 + 8 * 400);

  // Nobody holds the first result, so the second call reads the file: proven by planted scores.
  std::string bytes = test::read_file(file);
  std::vector<double> planted(400, 1.0 / 400);
  std::memcpy(bytes.data() + 64, planted.data(), planted.size() * sizeof(double));
  test::write_file(file, bytes);
  const auto written = fs::last_write_time(file);
  const auto loaded = graph::cached_pagerank(g, {}, cache);
  CHECK(loaded.origin == PageRankOrigin::kDisk);
  CHECK(loaded.pagerank->scores == planted);
  CHECK(loaded.pagerank->iterations == direct.iterations);
  CHECK(fs::last_write_time(file) == written);
  // While it is held, the memory cache answers.
  CHECK(graph::cached_pagerank(g, {}, cache).origin == PageRankOrigin::kMemory);

  // Other options are another file; no temporary files are left behind.
  CHECK(graph::pagerank_cache_name(g, {.damping = 0.5}) != graph::pagerank_cache_name(g));
  CHECK(graph::pagerank_cache_name(test::random_graph(400, 1500, 47, true)) != graph::pagerank_cache_name(g));
  graph::cached_pagerank(g, {.damping = 0.5}, cache);
  CHECK(fs::exists(cache / graph::pagerank_cache_name(g, {.damping = 0.5})));
  for (const auto& entry : fs::directory_iterator(cache)) CHECK(entry.path().extension() == ".f64");
}

TEST_CASE("a corrupt or mismatching PageRank cache file is recomputed and rewritten", "[graph][pagerank]") {
  const test::TempDir dir;
  const CsrGraph g = test::random_graph(300, 1200, 48, true);
  const auto direct = graph::pagerank(g);
  const fs::path file = dir.path() / graph::pagerank_cache_name(g);
  graph::cached_pagerank(g, {}, dir.path());
  const std::string good = test::read_file(file);
  REQUIRE(good.size() == 64 + 8 * 300);

  auto corrupt = [&](const std::string& what, const std::string& bytes) {
    INFO(what);
    test::write_file(file, bytes);
    const auto result = graph::cached_pagerank(g, {}, dir.path());
    CHECK(result.origin == PageRankOrigin::kComputed);
    CHECK(result.pagerank->scores == direct.scores);
    CHECK(test::read_file(file) == good);
  };
  auto patched = [&](std::size_t at, const void* value, std::size_t size) {
    std::string bad = good;
    std::memcpy(bad.data() + at, value, size);
    return bad;
  };
  corrupt("empty", "");
  corrupt("truncated", good.substr(0, 40));
  corrupt("short by one score", good.substr(0, good.size() - 8));
  corrupt("magic", patched(0, "X", 1));
  const uint32_t version = 9;
  corrupt("version", patched(8, &version, 4));
  const int32_t max_iterations = 7;
  corrupt("max_iterations", patched(12, &max_iterations, 4));
  const double damping = 0.5;
  corrupt("damping", patched(24, &damping, 8));
  const uint64_t hash = 12345;
  corrupt("hash", patched(40, &hash, 8));
  const int32_t iterations = 0;
  corrupt("iterations", patched(48, &iterations, 4));
  const double negative = -1e-3, nan = std::nan(""), big = 0.5;
  corrupt("negative score", patched(64 + 8 * 5, &negative, 8));
  corrupt("NaN score", patched(64 + 8 * 6, &nan, 8));
  corrupt("scores that do not sum to 1", patched(64 + 8 * 7, &big, 8));
}

TEST_CASE("an unusable PageRank cache folder is a warning and not an error", "[graph][pagerank]") {
  const test::TempDir dir;
  const CsrGraph g = test::random_graph(200, 800, 49, true);
  test::write_file(dir / "file", "not a folder");
  const auto result = graph::cached_pagerank(g, {}, dir / "file" / "cache");
  CHECK(result.origin == PageRankOrigin::kComputed);
  CHECK(result.pagerank->scores == graph::pagerank(g).scores);
}
