#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/graph_partition.hpp"
#include "graph_helpers.hpp"
#include "temp_dir.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using Catch::Contains;
using graph::NodeId;

using test::random_graph;
using test::fingerprint;
using test::vec;

namespace {

namespace fs = std::filesystem;

// Two cliques {0..k-1} and {k..2k-1} joined by the single edge (k-1, k).
graph::CsrGraph two_cliques(NodeId k) {
  std::vector<NodeId> src, dst;
  auto edge = [&](NodeId u, NodeId v) {
    src.push_back(u);
    dst.push_back(v);
  };
  for (NodeId c = 0; c < 2; ++c) {
    for (NodeId u = 0; u < k; ++u) {
      for (NodeId v = u + 1; v < k; ++v) edge(c * k + u, c * k + v);
    }
  }
  edge(k - 1, k);
  return graph::CsrGraph::from_coo(2 * k, src, dst, {.symmetrize = true});
}

}  // namespace

TEST_CASE("METIS puts each of two cliques joined by one edge into its own part", "[samplers][cluster][metis]") {
  const auto g = two_cliques(10);
  const auto parts = samplers::partition_graph(g, 2, 0);
  REQUIRE(parts.size() == 20);
  for (NodeId v = 0; v < 10; ++v) CHECK(parts[static_cast<std::size_t>(v)] == parts[0]);
  for (NodeId v = 10; v < 20; ++v) CHECK(parts[static_cast<std::size_t>(v)] == parts[10]);
  CHECK(parts[0] != parts[10]);
}

TEST_CASE("partitions are deterministic for a seed and every node lies in 0 to P-1", "[samplers][cluster][metis]") {
  for (bool directed : {false, true}) {
    INFO("directed " << directed);
    const auto g = random_graph(600, 3000, 3, directed);
    for (int p : {1, 2, 7, 40}) {
      const auto a = samplers::partition_graph(g, p, 5);
      CHECK(a == samplers::partition_graph(g, p, 5));
      REQUIRE(a.size() == 600);
      CHECK(std::all_of(a.begin(), a.end(), [&](int32_t x) { return x >= 0 && x < p; }));
      if (p > 1) CHECK(std::set<int32_t>(a.begin(), a.end()).size() > 1);
    }
  }
  // P = N and a graph without edges are fine too.
  const auto edgeless = graph::CsrGraph::from_coo(12, std::vector<NodeId>{}, std::vector<NodeId>{});
  const auto e = samplers::partition_graph(edgeless, 3, 0);
  CHECK(std::all_of(e.begin(), e.end(), [](int32_t x) { return x >= 0 && x < 3; }));
  const auto small = two_cliques(4);
  const auto every = samplers::partition_graph(small, 8, 0);
  CHECK(std::all_of(every.begin(), every.end(), [](int32_t x) { return x >= 0 && x < 8; }));
}

TEST_CASE("the partition cache is written once and then loaded", "[samplers][cluster][metis]") {
  const test::TempDir dir;
  const auto g = random_graph(500, 3000, 18);
  const fs::path cache = dir / "cache";  // created on first use
  const auto parts = samplers::load_or_partition(g, 6, 7, cache);
  const fs::path file = cache / samplers::partition_cache_name(g, 6, 7);
  REQUIRE(fs::exists(file));
  CHECK(fs::file_size(file) == 40 + 4 * 500);
  CHECK(file.filename().string().starts_with("metis-"));
  CHECK(file.filename().string().ends_with("-p6-s7.parts"));
  CHECK(parts == samplers::partition_graph(g, 6, 7));

  // The second call reads the file: proven by a valid partition that METIS would not produce.
  std::string bytes = test::read_file(file);
  std::vector<int32_t> planted(500);
  for (std::size_t v = 0; v < 500; ++v) planted[v] = static_cast<int32_t>(v % 6);
  std::memcpy(bytes.data() + 40, planted.data(), planted.size() * sizeof(int32_t));
  test::write_file(file, bytes);
  const auto written = fs::last_write_time(file);
  CHECK(samplers::load_or_partition(g, 6, 7, cache) == planted);
  CHECK(fs::last_write_time(file) == written);
  CHECK(test::read_file(file) == bytes);

  // Another seed or part count is another file.
  samplers::load_or_partition(g, 6, 8, cache);
  samplers::load_or_partition(g, 5, 7, cache);
  CHECK(fs::exists(cache / samplers::partition_cache_name(g, 6, 8)));
  CHECK(fs::exists(cache / samplers::partition_cache_name(g, 5, 7)));
  CHECK(samplers::partition_cache_name(g, 6, 8) != samplers::partition_cache_name(g, 6, 7));
  CHECK(samplers::partition_cache_name(g, 5, 7) != samplers::partition_cache_name(g, 6, 7));
  CHECK(samplers::partition_cache_name(random_graph(500, 3000, 19), 6, 7) != samplers::partition_cache_name(g, 6, 7));
  // No temporary files are left behind.
  for (const auto& entry : fs::directory_iterator(cache)) CHECK(entry.path().extension() == ".parts");
}

TEST_CASE("a corrupt or mismatching cache file is recomputed and rewritten", "[samplers][cluster][metis]") {
  const test::TempDir dir;
  const auto g = random_graph(300, 2000, 20);
  const auto fresh = samplers::partition_graph(g, 4, 1);
  const fs::path file = dir.path() / samplers::partition_cache_name(g, 4, 1);
  samplers::load_or_partition(g, 4, 1, dir.path());
  const std::string good = test::read_file(file);
  REQUIRE(good.size() == 40 + 4 * 300);

  auto corrupt = [&](const std::string& what, std::string bytes) {
    INFO(what);
    test::write_file(file, bytes);
    CHECK(samplers::load_or_partition(g, 4, 1, dir.path()) == fresh);
    CHECK(test::read_file(file) == good);
  };
  corrupt("truncated", good.substr(0, 10));
  corrupt("empty", "");
  corrupt("short by one part", good.substr(0, good.size() - 4));
  std::string bad = good;
  bad[0] = 'X';
  corrupt("magic", bad);
  bad = good;
  bad[8] = 9;  // version
  corrupt("version", bad);
  bad = good;
  bad[12] = 3;  // num_parts
  corrupt("part count", bad);
  bad = good;
  bad[24] ^= 1;  // seed
  corrupt("seed", bad);
  bad = good;
  bad[32] ^= 1;  // structure hash
  corrupt("hash", bad);
  bad = good;
  const int32_t out_of_range = 4;
  std::memcpy(bad.data() + 40 + 4 * 17, &out_of_range, sizeof out_of_range);
  corrupt("part id", bad);
}

TEST_CASE("an unusable cache folder is a warning and not an error", "[samplers][cluster][metis]") {
  const test::TempDir dir;
  const auto g = random_graph(200, 1000, 21);
  test::write_file(dir / "file", "not a folder");
  CHECK(samplers::load_or_partition(g, 3, 0, dir / "file" / "cache") == samplers::partition_graph(g, 3, 0));
  // An empty path means no cache at all.
  CHECK(samplers::load_or_partition(g, 3, 0, {}) == samplers::partition_graph(g, 3, 0));
}


TEST_CASE("a part count outside 1 to N is a ConfigError naming the key", "[samplers][cluster][metis]") {
  const auto g = random_graph(10, 20, 1);
  CHECK_THAT(test::message_of<core::ConfigError>([&] { samplers::partition_graph(g, 0, 0); }),
             Contains("sampler.num_parts: must be in [1, 10] (10 nodes), got 0"));
  CHECK_THAT(test::message_of<core::ConfigError>([&] { samplers::partition_graph(g, 11, 0); }),
             Contains("sampler.num_parts: must be in [1, 10] (10 nodes), got 11"));
  const test::TempDir dir;
  CHECK_THAT(test::message_of<core::ConfigError>([&] { samplers::load_or_partition(g, 11, 0, dir.path()); }),
             Contains("sampler.num_parts"));
  CHECK(fs::is_empty(dir.path()));
}
