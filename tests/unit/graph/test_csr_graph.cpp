#include <catch2/catch.hpp>

#include <tbb/global_control.h>

#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "graph_helpers.hpp"

using namespace gnnpipe::graph;
using gnnpipe::test::row;
using gnnpipe::core::DataError;

namespace {

// A random multigraph with self-loops and duplicates.
struct Coo {
  std::vector<NodeId> src, dst;
};
Coo random_coo(NodeId n, std::size_t e, uint64_t seed) {
  gnnpipe::core::Rng rng(seed, {});
  Coo c;
  for (std::size_t i = 0; i < e; ++i) {
    c.src.push_back(static_cast<NodeId>(rng.below(static_cast<uint64_t>(n))));
    c.dst.push_back(static_cast<NodeId>(rng.below(static_cast<uint64_t>(n))));
  }
  return c;
}

}  // namespace

TEST_CASE("from_coo puts each edge's source in its destination's row, sorted", "[graph][csr]") {
  // 0->1, 2->1, 1->2, 0->2, 2->2 (self-loop), 0->1 (duplicate)
  const std::vector<NodeId> src{0, 2, 1, 0, 2, 0};
  const std::vector<NodeId> dst{1, 1, 2, 2, 2, 1};
  const CsrGraph g = CsrGraph::from_coo(4, src, dst);
  CHECK(g.num_nodes() == 4);
  CHECK(g.num_edges() == 6);
  CHECK(row(g, 0).empty());
  CHECK(row(g, 1) == std::vector<NodeId>{0, 0, 2});
  CHECK(row(g, 2) == std::vector<NodeId>{0, 1, 2});
  CHECK(row(g, 3).empty());
  CHECK(g.in_degree(1) == 3);
  CHECK(g.out_degrees() == std::vector<EdgeOffset>{3, 1, 2, 0});
  CHECK(g.count_self_loops() == 1);
  CHECK(g.rows_sorted());
  CHECK_FALSE(g.rows_sorted(/*strictly=*/true));
}

TEST_CASE("dedupe, self-loop removal and addition", "[graph][csr]") {
  const std::vector<NodeId> src{0, 2, 1, 0, 2, 0, 3, 3};
  const std::vector<NodeId> dst{1, 1, 2, 2, 2, 1, 3, 3};
  const CsrGraph deduped = CsrGraph::from_coo(4, src, dst, {.dedupe = true});
  CHECK(row(deduped, 1) == std::vector<NodeId>{0, 2});
  CHECK(row(deduped, 3) == std::vector<NodeId>{3});
  const CsrGraph no_loops = CsrGraph::from_coo(4, src, dst, {.self_loops = SelfLoops::kRemove});
  CHECK(no_loops.count_self_loops() == 0);
  CHECK(row(no_loops, 2) == std::vector<NodeId>{0, 1});
  CHECK(row(no_loops, 1) == std::vector<NodeId>{0, 0, 2});
  const CsrGraph with_loops = CsrGraph::from_coo(4, src, dst, {.dedupe = true, .self_loops = SelfLoops::kAdd});
  CHECK(row(with_loops, 0) == std::vector<NodeId>{0});
  CHECK(row(with_loops, 1) == std::vector<NodeId>{0, 1, 2});
  CHECK(row(with_loops, 2) == std::vector<NodeId>{0, 1, 2});
  CHECK(row(with_loops, 3) == std::vector<NodeId>{3});  // two (3,3) became exactly one
  CHECK(with_loops.count_self_loops() == 4);
  CHECK(with_loops.rows_sorted(true));
}

TEST_CASE("symmetrize adds every reverse edge, transposed reverses edges", "[graph][csr]") {
  const std::vector<NodeId> src{0, 0, 1};
  const std::vector<NodeId> dst{1, 2, 2};
  const CsrGraph g = CsrGraph::from_coo(3, src, dst);
  CHECK_FALSE(g.is_symmetric());
  const CsrGraph t = g.transposed();
  CHECK(row(t, 0) == std::vector<NodeId>{1, 2});
  CHECK(row(t, 1) == std::vector<NodeId>{2});
  CHECK(row(t, 2).empty());
  const CsrGraph s = CsrGraph::from_coo(3, src, dst, {.symmetrize = true, .dedupe = true});
  CHECK(s.is_symmetric());
  CHECK(row(s, 0) == std::vector<NodeId>{1, 2});
  CHECK(row(s, 1) == std::vector<NodeId>{0, 2});
  CHECK(row(s, 2) == std::vector<NodeId>{0, 1});
}

TEST_CASE("invariants on a random multigraph", "[graph][csr]") {
  const NodeId n = 500;
  const Coo c = random_coo(n, 20000, 3);
  const CsrGraph g = CsrGraph::from_coo(n, c.src, c.dst);
  REQUIRE(g.num_edges() == 20000);
  // Every input edge is in its row, with its multiplicity: compare to a per-row count.
  std::vector<std::vector<NodeId>> expect(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < c.src.size(); ++i) expect[static_cast<std::size_t>(c.dst[i])].push_back(c.src[i]);
  for (NodeId v = 0; v < n; ++v) {
    auto& e = expect[static_cast<std::size_t>(v)];
    std::sort(e.begin(), e.end());
    REQUIRE(row(g, v) == e);
  }
  CHECK(g.transposed().transposed().structure_hash() == g.structure_hash());
  const CsrGraph s = CsrGraph::from_coo(n, c.src, c.dst, {.symmetrize = true});
  CHECK(s.num_edges() == 40000);
  CHECK(s.is_symmetric());
  const CsrGraph clean = g.normalized({.dedupe = true, .self_loops = SelfLoops::kRemove});
  CHECK(clean.rows_sorted(true));
  CHECK(clean.count_self_loops() == 0);
}

TEST_CASE("results do not depend on the thread count", "[graph][csr][tsan]") {
  const Coo c = random_coo(3000, 200000, 11);
  uint64_t h1 = 0, h2 = 0;
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    h1 = CsrGraph::from_coo(3000, c.src, c.dst, {.symmetrize = true, .dedupe = true}).structure_hash();
  }
  h2 = CsrGraph::from_coo(3000, c.src, c.dst, {.symmetrize = true, .dedupe = true}).structure_hash();
  CHECK(h1 == h2);
  CHECK(h1 != CsrGraph::from_coo(3000, c.src, c.dst).structure_hash());
}

TEST_CASE("bad edges and bad CSR arrays are DataErrors that say what is wrong", "[graph][csr]") {
  const std::vector<NodeId> src{0, 5};
  const std::vector<NodeId> dst{1, 1};
  CHECK_THROWS_WITH(CsrGraph::from_coo(3, src, dst), Catch::Contains("edge 1 (5 -> 1)") && Catch::Contains("[0, 3)"));
  CHECK_THROWS_AS(CsrGraph::from_coo(3, std::vector<NodeId>{0}, dst), DataError);
  auto arrays = [](std::vector<EdgeOffset> o, std::vector<NodeId> i) {
    return CsrGraph::from_arrays(HostArray<EdgeOffset>(std::move(o)), HostArray<NodeId>(std::move(i)), "adj.npz");
  };
  CHECK(arrays({0, 1, 2}, {1, 0}).num_edges() == 2);
  CHECK_THROWS_WITH(arrays({1, 1, 2}, {1, 0}), Catch::Contains("adj.npz: offsets[0] is 1"));
  CHECK_THROWS_WITH(arrays({0, 2, 1, 2}, {1, 0}), Catch::Contains("offsets decrease at row 1"));
  CHECK_THROWS_WITH(arrays({0, 1, 3}, {1, 0}), Catch::Contains("offsets end at 3 but there are 2 indices"));
  CHECK_THROWS_WITH(arrays({0, 1, 2}, {1, 2}), Catch::Contains("index 2 at position 1 is outside [0, 2)"));
  CHECK_THROWS_AS(arrays({}, {}), DataError);
}
