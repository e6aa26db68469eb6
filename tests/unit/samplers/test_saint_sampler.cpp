#include <catch2/catch.hpp>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::BlockNorm;
using graph::EdgeOffset;
using graph::NodeId;
using samplers::SaintMode;
using samplers::SaintSampler;
using samplers::SaintSamplerOptions;

using test::random_graph;
using test::fingerprint;
using test::vec;
using test::all_nodes;

namespace {

// Nine nodes: a triangle 0-1-2 joined by 2-3 to a triangle 3-4-5, 5-6 (undirected), a directed
// 6 -> 7, and node 8 without edges (a dead end for walks, never drawn by the node/edge samplers).
graph::CsrGraph small_graph() {
  const std::vector<NodeId> src{0, 1, 2, 2, 3, 4, 5, 5, 1, 2, 0, 3, 4, 5, 3, 6, 6};
  const std::vector<NodeId> dst{1, 2, 0, 3, 4, 5, 3, 6, 0, 1, 2, 2, 3, 4, 5, 5, 7};
  return graph::CsrGraph::from_coo(9, src, dst);
}

// Checks C_v / N and C_{u,v} / N of a pre-sample against exact inclusion probabilities. A subgraph
// is `budget` independent draws of a unit (a node, an edge, a walk) that contains node x with
// probability a(x) and both x and y with probability a_pair(x, y), so
//   P(x in) = 1 - (1 - a_x)^b,   P(x, y in) = 1 - (1 - a_x)^b - (1 - a_y)^b + (1 - a_x - a_y + a_xy)^b.
// Each count is binomial(N, P): within 5 standard errors except with probability ~6e-7 per check.
void check_counts(const graph::CsrGraph& g, const SaintSampler& s, const std::vector<double>& a,
                  const std::function<double(NodeId, NodeId)>& a_pair, int budget) {
  const auto n_samples = static_cast<double>(s.norm_samples());
  auto tolerance = [&](double p) { return 5 * std::sqrt(p * (1 - p) / n_samples) + 1e-12; };
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const double p = 1 - std::pow(1 - a[static_cast<std::size_t>(v)], budget);
    const double got = s.node_counts()[static_cast<std::size_t>(v)] / n_samples;
    INFO("node " << v << " exact " << p << " estimated " << got);
    CHECK(std::abs(got - p) <= tolerance(p));
  }
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    for (EdgeOffset e = g.offsets()[static_cast<std::size_t>(v)]; e < g.offsets()[static_cast<std::size_t>(v) + 1]; ++e) {
      const NodeId u = g.indices()[static_cast<std::size_t>(e)];
      const double au = a[static_cast<std::size_t>(u)], av = a[static_cast<std::size_t>(v)];
      const double p = std::clamp(1 - std::pow(1 - au, budget) - std::pow(1 - av, budget) +
                                      std::pow(1 - au - av + a_pair(u, v), budget), 0.0, 1.0);
      const double got = s.edge_counts()[static_cast<std::size_t>(e)] / n_samples;
      INFO("edge " << u << " -> " << v << " exact " << p << " estimated " << got);
      CHECK(std::abs(got - p) <= tolerance(p));
    }
  }
}

double count_or_floor(uint32_t c) { return c == 0 ? 0.1 : static_cast<double>(c); }

}  // namespace

TEST_CASE("forced random walks on a chain give exact subgraphs and subgraph weights", "[samplers][saint]") {
  // Node v's only in-neighbor is v + 1 (edge v + 1 -> v); node 5 has none. A walk of length 2
  // from root r visits r, r + 1, r + 2 (stopping at 5), so the subgraph is a chain of 1 to 3 nodes.
  const auto g = graph::CsrGraph::from_coo(6, std::vector<NodeId>{1, 2, 3, 4, 5}, std::vector<NodeId>{0, 1, 2, 3, 4});
  const std::vector<NodeId> train{0, 2, 4};
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn}) {
    INFO("norm " << static_cast<int>(norm));
    const SaintSampler sampler(g, train, {.mode = SaintMode::kRandomWalk, .budget = 1, .walk_length = 2,
                                          .steps_per_epoch = 12, .normalize = false, .seed = 3, .norm = norm});
    CHECK(sampler.norm_samples() == 0);
    CHECK(sampler.node_counts().empty());
    auto ws = sampler.make_workspace();
    std::set<NodeId> roots;
    for (const auto& spec : sampler.plan_epoch(0)) {
      const graph::MiniBatch b = sampler.sample(spec, *ws);
      const NodeId r = b.input_nodes[0];
      roots.insert(r);
      const NodeId k = std::min(r + 2, 5) - r + 1;
      std::vector<NodeId> nodes(static_cast<std::size_t>(k));
      for (NodeId i = 0; i < k; ++i) nodes[static_cast<std::size_t>(i)] = r + i;
      REQUIRE(vec(b.input_nodes) == nodes);
      REQUIRE(vec(b.targets) == nodes);
      REQUIRE(b.blocks.size() == 1);
      const graph::Block& block = b.blocks[0];
      REQUIRE(block.num_dst == k);
      REQUIRE(block.num_src == k);
      // Row i holds i + 1 when it is in the chain, and the self-loop i for kGcn.
      std::vector<EdgeOffset> offsets{0};
      std::vector<NodeId> indices;
      std::vector<float> weights;
      for (NodeId i = 0; i < k; ++i) {
        const bool next = i + 1 < k;
        if (norm == BlockNorm::kGcn) {
          const double di = next ? 2 : 1, dn = i + 2 < k ? 2 : 1;  // subgraph in-degrees with self-loops
          indices.push_back(i);
          weights.push_back(static_cast<float>(1 / di));
          if (next) {
            indices.push_back(i + 1);
            weights.push_back(static_cast<float>(1 / std::sqrt(di * dn)));
          }
        } else if (next) {
          indices.push_back(i + 1);
          weights.push_back(1.0f);  // 1 / subgraph in-degree
        }
        offsets.push_back(static_cast<EdgeOffset>(indices.size()));
      }
      CHECK(vec(block.offsets) == offsets);
      CHECK(vec(block.indices) == indices);
      CHECK(vec(block.weights) == weights);
      CHECK(b.shape.edges == std::vector<int64_t>(2, static_cast<int64_t>(indices.size())));
      std::vector<int32_t> loss_rows;
      for (NodeId i = 0; i < k; ++i) {
        if (std::count(train.begin(), train.end(), r + i) > 0) loss_rows.push_back(i);
      }
      CHECK(vec(b.loss_rows) == loss_rows);
      CHECK(b.loss_weights.empty());
    }
    CHECK(roots.size() >= 3);  // the batches do not all repeat one walk
  }
}

TEST_CASE("subgraphs that cover a tiny graph equal the full-graph block", "[samplers][saint]") {
  // 200 roots on 5 nodes: every node is a root in every subgraph except with probability ~2e-19.
  // Node 2 has its own self-loops (two, after symmetrizing): kGcn and kSelfLoops keep exactly one,
  // as full_graph_block does, and kGcn's degrees count it once.
  const auto g = graph::CsrGraph::from_coo(5, std::vector<NodeId>{0, 0, 0, 1, 3, 2}, std::vector<NodeId>{1, 2, 3, 2, 4, 2},
                                           {.symmetrize = true});
  REQUIRE(g.count_self_loops() == 2);
  const std::vector<NodeId> train{1, 3, 4};
  for (bool normalize : {false, true})
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn, BlockNorm::kSelfLoops, BlockNorm::kNone}) {
    INFO("normalize " << normalize << " norm " << static_cast<int>(norm));
    const SaintSampler sampler(g, train, {.mode = SaintMode::kRandomWalk, .budget = 200, .walk_length = 1,
                                          .norm_samples = 20, .normalize = normalize, .seed = 1, .norm = norm});
    CHECK(sampler.steps_per_epoch() == 1);  // one subgraph already covers the graph
    auto ws = sampler.make_workspace();
    const graph::MiniBatch b = sampler.sample(sampler.plan_epoch(0)[0], *ws);
    // With full coverage C_v = C_{u,v} = N, so alpha^-1 = 1 and the weights are the full graph's.
    const graph::Block full = graph::full_graph_block(g, norm);
    REQUIRE(b.blocks.size() == 1);
    CHECK(vec(b.input_nodes) == all_nodes(5));
    CHECK(vec(b.blocks[0].offsets) == vec(full.offsets));
    CHECK(vec(b.blocks[0].indices) == vec(full.indices));
    CHECK(vec(b.blocks[0].weights) == vec(full.weights));
    CHECK(vec(b.loss_rows) == std::vector<int32_t>{1, 3, 4});
    if (normalize) {
      CHECK(sampler.norm_samples() == 20);
      CHECK(vec(b.loss_weights) == std::vector<float>(3, static_cast<float>(20.0 / (20.0 * 3))));
    } else {
      CHECK(b.loss_weights.empty());
    }
  }
}

TEST_CASE("GraphSAINT batches are induced subgraphs on a random graph for every mode", "[samplers][saint]") {
  const auto g = random_graph(5000, 25000, 7);
  std::vector<NodeId> train;
  for (NodeId v = 0; v < 5000; v += 4) train.push_back(v);
  // Budget 8 gives sets that are put in order by sorting, 200 sets dense enough for a scan.
  for (int budget : {8, 200})
  for (SaintMode mode : {SaintMode::kNode, SaintMode::kEdge, SaintMode::kRandomWalk})
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn, BlockNorm::kSelfLoops})
  for (bool normalize : {false, true}) {
    INFO("budget " << budget << " mode " << static_cast<int>(mode) << " norm " << static_cast<int>(norm)
                   << " normalize " << normalize);
    const SaintSampler sampler(g, train, {.mode = mode, .budget = budget, .walk_length = 3, .steps_per_epoch = 3,
                                          .norm_samples = 50, .normalize = normalize, .seed = 11, .norm = norm,
                                          .num_layers = 3});
    const bool self_loops = norm != BlockNorm::kMean;
    auto ws = sampler.make_workspace();
    for (const auto& spec : sampler.plan_epoch(2)) {
      const graph::MiniBatch b = sampler.sample(spec, *ws);
      REQUIRE(b.blocks.size() == 1);
      const graph::Block& block = b.blocks[0];
      const auto nodes = vec(b.input_nodes);
      const auto k = static_cast<NodeId>(nodes.size());
      REQUIRE(k >= 1);
      REQUIRE(block.num_dst == k);
      REQUIRE(block.num_src == k);
      REQUIRE(vec(b.targets) == nodes);
      REQUIRE(std::adjacent_find(nodes.begin(), nodes.end(), std::greater_equal<>()) == nodes.end());  // ascending
      REQUIRE(b.layer_blocks(3).size() == 3);
      REQUIRE(b.shape.edges == std::vector<int64_t>(3, block.num_edges()));
      REQUIRE(block.weighted() == (norm != BlockNorm::kSelfLoops && block.num_edges() > 0));
      if (mode == SaintMode::kNode) REQUIRE(k <= budget);
      if (mode == SaintMode::kEdge) REQUIRE(k <= 2 * budget);
      if (mode == SaintMode::kRandomWalk) REQUIRE(k <= budget * 4);
      auto local_of = [&](NodeId global) -> NodeId {
        const auto it = std::lower_bound(nodes.begin(), nodes.end(), global);
        return it != nodes.end() && *it == global ? static_cast<NodeId>(it - nodes.begin()) : -1;
      };
      std::vector<int> touched(static_cast<std::size_t>(k), 0);  // subgraph edges at each node (no loops)
      for (NodeId v = 0; v < k; ++v) {
        // Exactly the full-graph in-neighbors that were chosen, plus one self-loop where added.
        std::vector<NodeId> expected;
        for (NodeId gu : g.in_neighbors(nodes[static_cast<std::size_t>(v)])) {
          if (const NodeId u = local_of(gu); u >= 0) {
            expected.push_back(u);
            ++touched[static_cast<std::size_t>(u)];
            ++touched[static_cast<std::size_t>(v)];
          }
        }
        if (self_loops) expected.push_back(v);
        std::sort(expected.begin(), expected.end());
        const std::vector<NodeId> got(block.indices.begin() + block.offsets[static_cast<std::size_t>(v)],
                                      block.indices.begin() + block.offsets[static_cast<std::size_t>(v) + 1]);
        REQUIRE(got == expected);
      }
      // Node sampler: only nodes with in-edges are drawn. Edge sampler: every node is an endpoint
      // of a drawn edge, which the induced subgraph contains.
      for (NodeId v = 0; v < k; ++v) {
        if (mode == SaintMode::kNode) REQUIRE(g.in_degree(nodes[static_cast<std::size_t>(v)]) > 0);
        if (mode == SaintMode::kEdge) REQUIRE(touched[static_cast<std::size_t>(v)] > 0);
      }
      // The transpose lists exactly the forward edges.
      REQUIRE(block.t_offsets[static_cast<std::size_t>(k)] == block.num_edges());
      for (NodeId u = 0; u < k; ++u) {
        for (auto t = block.t_offsets[static_cast<std::size_t>(u)]; t < block.t_offsets[static_cast<std::size_t>(u) + 1]; ++t) {
          const auto e = static_cast<std::size_t>(block.t_edges[static_cast<std::size_t>(t)]);
          REQUIRE(block.indices[e] == u);
          const NodeId v = block.t_indices[static_cast<std::size_t>(t)];
          REQUIRE(static_cast<EdgeOffset>(e) >= block.offsets[static_cast<std::size_t>(v)]);
          REQUIRE(static_cast<EdgeOffset>(e) < block.offsets[static_cast<std::size_t>(v) + 1]);
        }
      }
      // Loss rows: exactly the training nodes among the targets, ascending.
      std::vector<int32_t> loss_rows;
      for (NodeId v = 0; v < k; ++v) {
        if (nodes[static_cast<std::size_t>(v)] % 4 == 0) loss_rows.push_back(v);
      }
      REQUIRE(vec(b.loss_rows) == loss_rows);
      REQUIRE(b.loss_weights.size() == (normalize ? loss_rows.size() : 0));
    }
  }
}

TEST_CASE("node-sampler counts match the exact inclusion probabilities", "[samplers][saint]") {
  // One draw picks node x with probability in-degree(x) / E and never two nodes at once.
  const auto g = small_graph();
  const int budget = 3;
  const SaintSampler sampler(g, all_nodes(9), {.mode = SaintMode::kNode, .budget = budget, .norm_samples = 20000, .seed = 5});
  REQUIRE(sampler.norm_samples() == 20000);
  std::vector<double> a(9);
  for (NodeId x = 0; x < 9; ++x) a[static_cast<std::size_t>(x)] = static_cast<double>(g.in_degree(x)) / static_cast<double>(g.num_edges());
  check_counts(g, sampler, a, [](NodeId, NodeId) { return 0.0; }, budget);
  CHECK(sampler.node_counts()[8] == 0);  // no in-edges: never drawn
}

TEST_CASE("edge-sampler counts match the exact inclusion probabilities", "[samplers][saint]") {
  // One draw picks edge u -> v with probability proportional to 1/deg(u) + 1/deg(v) (in-degrees,
  // at least 1) and contains both endpoints. Besides the small graph, a sparse one whose ~300
  // edges join only every third of 90 nodes (no self-loops), so the edge -> row lookup crosses empty rows.
  std::vector<NodeId> src, dst;
  core::Rng rng(12, {});
  for (int i = 0; i < 200; ++i) {
    src.push_back(static_cast<NodeId>(3 * rng.below(30)));
    dst.push_back(static_cast<NodeId>(3 * rng.below(30)));
  }
  const auto sparse = graph::CsrGraph::from_coo(90, src, dst, {.symmetrize = true, .dedupe = true, .self_loops = graph::SelfLoops::kRemove});
  REQUIRE(sparse.num_edges() > 256);
  for (const graph::CsrGraph& g : {small_graph(), sparse}) {
    const NodeId n = g.num_nodes();
    const int budget = 2;
    const SaintSampler sampler(g, all_nodes(n), {.mode = SaintMode::kEdge, .budget = budget, .norm_samples = 20000, .seed = 6});
    auto inv_deg = [&](NodeId x) { return 1.0 / static_cast<double>(std::max<EdgeOffset>(1, g.in_degree(x))); };
    double total = 0;
    for (NodeId v = 0; v < n; ++v) {
      for (NodeId u : g.in_neighbors(v)) total += inv_deg(u) + inv_deg(v);
    }
    std::vector<double> a(static_cast<std::size_t>(n));
    std::map<std::pair<NodeId, NodeId>, double> pair;
    for (NodeId v = 0; v < n; ++v) {
      for (NodeId u : g.in_neighbors(v)) {
        const double p = (inv_deg(u) + inv_deg(v)) / total;
        a[static_cast<std::size_t>(u)] += p;
        a[static_cast<std::size_t>(v)] += p;
        pair[{std::min(u, v), std::max(u, v)}] += p;
      }
    }
    check_counts(g, sampler, a, [&](NodeId x, NodeId y) { return pair[{std::min(x, y), std::max(x, y)}]; }, budget);
  }
}

TEST_CASE("random-walk counts match an exact enumeration of the walks", "[samplers][saint]") {
  // Enumerates every walk (uniform root, then uniform in-neighbors, stopping at a dead end) with
  // its probability, and adds it to each node and node pair it visits.
  const auto g = small_graph();
  const int budget = 2, walk_length = 2;
  const SaintSampler sampler(g, all_nodes(9), {.mode = SaintMode::kRandomWalk, .budget = budget, .walk_length = walk_length,
                                               .norm_samples = 20000, .seed = 7});
  std::vector<double> a(9);
  std::map<std::pair<NodeId, NodeId>, double> pair;
  std::function<void(NodeId, int, double, std::set<NodeId>)> walk = [&](NodeId v, int left, double p, std::set<NodeId> seen) {
    seen.insert(v);
    const auto nb = g.in_neighbors(v);
    if (left == 0 || nb.empty()) {
      for (NodeId x : seen) {
        a[static_cast<std::size_t>(x)] += p;
        for (NodeId y : seen) {
          if (x < y) pair[{x, y}] += p;
        }
      }
      return;
    }
    for (NodeId u : nb) walk(u, left - 1, p / static_cast<double>(nb.size()), seen);
  };
  for (NodeId r = 0; r < 9; ++r) walk(r, walk_length, 1.0 / 9, {});
  check_counts(g, sampler, a, [&](NodeId x, NodeId y) { return pair[{std::min(x, y), std::max(x, y)}]; }, budget);
}

TEST_CASE("normalized weights are base times C_v over C_uv and loss weights N over C_v times train", "[samplers][saint]") {
  const auto g = random_graph(300, 1200, 3);
  std::vector<NodeId> train;
  for (NodeId v = 0; v < 300; v += 3) train.push_back(v);
  // norm_samples 3 leaves many zero counts (read as 0.1); 300 leaves few.
  for (int norm_samples : {3, 300})
  for (SaintMode mode : {SaintMode::kNode, SaintMode::kEdge, SaintMode::kRandomWalk})
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn}) {
    INFO("norm_samples " << norm_samples << " mode " << static_cast<int>(mode) << " norm " << static_cast<int>(norm));
    const SaintSampler sampler(g, train, {.mode = mode, .budget = 25, .steps_per_epoch = 2, .norm_samples = norm_samples,
                                          .seed = 2, .norm = norm});
    REQUIRE(sampler.node_counts().size() == 300);
    REQUIRE(sampler.edge_counts().size() == static_cast<std::size_t>(g.num_edges()));
    auto ws = sampler.make_workspace();
    for (const auto& spec : sampler.plan_epoch(0)) {
      const graph::MiniBatch b = sampler.sample(spec, *ws);
      const graph::Block& block = b.blocks[0];
      for (NodeId v = 0; v < block.num_dst; ++v) {
        const NodeId gv = b.input_nodes[static_cast<std::size_t>(v)];
        const double c_v = count_or_floor(sampler.node_counts()[static_cast<std::size_t>(gv)]);
        for (auto e = block.offsets[static_cast<std::size_t>(v)]; e < block.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
          const NodeId gu = b.input_nodes[static_cast<std::size_t>(block.indices[static_cast<std::size_t>(e)])];
          double expected = 0;
          if (gu == gv) {  // the added self-loop: alpha^-1 = 1
            REQUIRE(norm == BlockNorm::kGcn);
            expected = 1.0 / static_cast<double>(g.in_degree(gv) + 1);
          } else {
            const auto row = g.in_neighbors(gv);
            const auto pos = g.offsets()[static_cast<std::size_t>(gv)] + (std::lower_bound(row.begin(), row.end(), gu) - row.begin());
            const double alpha_inv = std::min(c_v / count_or_floor(sampler.edge_counts()[static_cast<std::size_t>(pos)]), 1e4);
            const double base = norm == BlockNorm::kMean
                                    ? 1.0 / static_cast<double>(g.in_degree(gv))
                                    : 1.0 / std::sqrt(static_cast<double>((g.in_degree(gu) + 1) * (g.in_degree(gv) + 1)));
            expected = base * alpha_inv;
          }
          REQUIRE(block.weights[static_cast<std::size_t>(e)] == Approx(expected).epsilon(1e-6));
        }
      }
      REQUIRE(b.loss_weights.size() == b.loss_rows.size());
      for (std::size_t i = 0; i < b.loss_rows.size(); ++i) {
        const NodeId gv = b.input_nodes[static_cast<std::size_t>(b.loss_rows[i])];
        const double expected = norm_samples / (count_or_floor(sampler.node_counts()[static_cast<std::size_t>(gv)]) * 100.0);
        REQUIRE(b.loss_weights[i] == Approx(expected).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("GraphSAINT batches and norms are identical with 1 2 and 8 threads", "[samplers][saint][tsan]") {
  const auto g = random_graph(3000, 30000, 8);
  for (SaintMode mode : {SaintMode::kNode, SaintMode::kEdge, SaintMode::kRandomWalk}) {
    INFO("mode " << static_cast<int>(mode));
    const SaintSamplerOptions options{.mode = mode, .budget = 150, .walk_length = 2, .steps_per_epoch = 0,
                                      .norm_samples = 64, .seed = 4, .norm = BlockNorm::kGcn};
    auto build = [&](int threads) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
      return std::make_unique<SaintSampler>(g, all_nodes(3000), options);
    };
    const auto sampler = build(1);
    const auto sampler8 = build(8);
    CHECK(sampler8->steps_per_epoch() == sampler->steps_per_epoch());
    CHECK(std::ranges::equal(sampler8->node_counts(), sampler->node_counts()));
    CHECK(std::ranges::equal(sampler8->edge_counts(), sampler->edge_counts()));

    const auto plan = sampler->plan_epoch(1);
    REQUIRE(plan.size() >= 2);
    auto run = [&](int threads) {
      tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
      std::vector<uint64_t> prints(plan.size());
      tbb::parallel_for(std::size_t{0}, plan.size(), core::tsan::fork_join([&](std::size_t i) {
        auto ws = sampler->make_workspace();
        prints[i] = fingerprint(sampler->sample(plan[i], *ws));
      }));
      return prints;
    };
    const auto one = run(1);
    CHECK(run(2) == one);
    CHECK(run(8) == one);
    // A reused workspace gives the same batches as fresh ones; batches differ from each other.
    auto ws = sampler->make_workspace();
    for (std::size_t i = 0; i < plan.size(); ++i) REQUIRE(fingerprint(sampler->sample(plan[i], *ws)) == one[i]);
    CHECK(one[0] != one[1]);
    CHECK(fingerprint(sampler->sample(sampler->plan_epoch(2)[0], *ws)) != one[0]);
  }
}

TEST_CASE("auto steps_per_epoch and norm_samples resolve to sane values", "[samplers][saint]") {
  const auto g = random_graph(2000, 8000, 2);
  const SaintSampler rw(g, all_nodes(2000), {.mode = SaintMode::kRandomWalk, .budget = 100, .walk_length = 2});
  // A subgraph holds between 100 (roots alone) and 300 nodes.
  CHECK(rw.steps_per_epoch() >= 2000 / 300);
  CHECK(rw.steps_per_epoch() <= 2000 / 100);
  CHECK(static_cast<int>(rw.plan_epoch(0).size()) == rw.steps_per_epoch());
  CHECK(rw.norm_samples() >= 50 * 2000 / 300);
  CHECK(rw.norm_samples() <= 50 * 2000 / 100 + 1);
  // Pre-sampled coverage is ~50 per node on average.
  double covered = 0;
  for (uint32_t c : rw.node_counts()) covered += c;
  CHECK(covered / 2000 == Approx(50).epsilon(0.1));

  // A budget that covers the graph gives one step; explicit values are kept.
  const SaintSampler big(g, all_nodes(2000), {.mode = SaintMode::kNode, .budget = 100000});
  CHECK(big.steps_per_epoch() == 1);
  const SaintSampler fixed(g, all_nodes(2000), {.mode = SaintMode::kEdge, .budget = 10, .steps_per_epoch = 7,
                                                .norm_samples = 9});
  CHECK(fixed.steps_per_epoch() == 7);
  CHECK(fixed.norm_samples() == 9);
  const SaintSampler plain(g, all_nodes(2000), {.mode = SaintMode::kEdge, .budget = 10, .norm_samples = 9, .normalize = false});
  CHECK(plain.norm_samples() == 0);
  CHECK(plain.edge_counts().empty());
  CHECK(plain.steps_per_epoch() >= 1);
}

TEST_CASE("bad GraphSAINT options are ConfigErrors naming the key", "[samplers][saint]") {
  const auto g = random_graph(10, 20, 1);
  const std::vector<NodeId> train{0, 1};
  CHECK_THROWS_WITH(SaintSampler(g, train, {.budget = 0}), Catch::Contains("sampler.batch_size: must be >= 1, got 0"));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.mode = SaintMode::kRandomWalk, .walk_length = 0}),
                    Catch::Contains("sampler.walk_length: must be >= 1, got 0"));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.steps_per_epoch = -1}), Catch::Contains("sampler.steps_per_epoch: must be >= 0"));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.norm_samples = -2}), Catch::Contains("sampler.norm_samples: must be >= 0"));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.num_layers = 0}), Catch::Contains("model.layers: must be >= 1, got 0"));
  // Bounds that keep the pre-sampling finite: draws per batch within 1024 per node and edge.
  CHECK_THROWS_WITH(SaintSampler(g, train, {.mode = SaintMode::kRandomWalk, .budget = 100, .walk_length = 1000000000}),
                    Catch::Contains("sampler.batch_size x (walk_length + 1): 100000000100 draws a batch, more than 1024 "
                                    "per node and edge of this graph (10 nodes, "));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.mode = SaintMode::kNode, .budget = 2000000000}),
                    Catch::Contains("sampler.batch_size: 2000000000 draws a batch"));
  CHECK_THROWS_WITH(SaintSampler(g, train, {.norm_samples = 2000000000}),
                    Catch::Contains("sampler.norm_samples: at most 1000000, got 2000000000"));
  CHECK_THROWS_AS(SaintSampler(g, train, {.budget = 0}), core::ConfigError);
  CHECK_THROWS_AS(SaintSampler(g, {10}, {}), core::DataError);
  CHECK_THROWS_AS(SaintSampler(g, {-1}, {}), core::DataError);

  // Node and edge samplers draw from the edges: a graph without any is refused, not looped on.
  const auto empty = graph::CsrGraph::from_coo(4, std::vector<NodeId>{}, std::vector<NodeId>{});
  CHECK_THROWS_WITH(SaintSampler(empty, train, {.mode = SaintMode::kNode}), Catch::Contains("saint_node draws from the edges"));
  CHECK_THROWS_WITH(SaintSampler(empty, train, {.mode = SaintMode::kEdge}), Catch::Contains("saint_edge draws from the edges"));
  CHECK_THROWS_AS(SaintSampler(empty, train, {.mode = SaintMode::kEdge}), core::ConfigError);
  const auto no_nodes = graph::CsrGraph::from_coo(0, std::vector<NodeId>{}, std::vector<NodeId>{});
  CHECK_THROWS_AS(SaintSampler(no_nodes, {}, {}), core::ConfigError);
  // Random walks need no edges: each walk stops at its root.
  const SaintSampler rw(empty, train, {.mode = SaintMode::kRandomWalk, .budget = 3, .walk_length = 4});
  auto ws = rw.make_workspace();
  const graph::MiniBatch b = rw.sample(rw.plan_epoch(0)[0], *ws);
  CHECK(b.blocks[0].num_edges() == 0);
  CHECK(b.input_nodes.size() >= 1);
  CHECK(b.input_nodes.size() <= 3);
}
