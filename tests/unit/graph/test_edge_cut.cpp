#include <catch2/catch.hpp>

#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/cut_strategy.hpp"
#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/graph/pagerank.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"
#include "graph_helpers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using Catch::Contains;
using graph::BlockNorm;
using graph::CsrGraph;
using graph::CutStrategy;
using graph::CutWeights;
using graph::MiniBatch;
using graph::NodeId;

namespace {

constexpr CutStrategy kAllStrategies[] = {CutStrategy::kRandom, CutStrategy::kDegreeSum, CutStrategy::kDegreeProduct,
                                          CutStrategy::kPagerankSum, CutStrategy::kPagerankProduct};

// The whole graph as a one-block batch (num_layers uses of the shared block).
MiniBatch full_batch(const CsrGraph& g, BlockNorm norm, std::size_t num_layers = 2) {
  MiniBatch b;
  b.blocks.push_back(graph::full_graph_block(g, norm));
  b.input_nodes = graph::HostArray<NodeId>(test::all_nodes(g.num_nodes()));
  b.targets = graph::HostArray<NodeId>(test::all_nodes(g.num_nodes()));
  b.compute_shape(16, num_layers);
  return b;
}

std::vector<MiniBatch> neighbor_batches(const CsrGraph& g, BlockNorm norm, std::vector<int> fanouts, int batch_size,
                                        std::size_t count) {
  const samplers::NeighborSampler sampler(g, test::all_nodes(g.num_nodes()),
                                          {.fanouts = std::move(fanouts), .batch_size = batch_size, .seed = 3, .norm = norm});
  auto ws = sampler.make_workspace();
  std::vector<MiniBatch> out;
  for (const auto& spec : sampler.plan_epoch(1)) {
    if (out.size() == count) break;
    out.push_back(sampler.sample(spec, *ws));
  }
  return out;
}

MiniBatch saint_batch(const CsrGraph& g, BlockNorm norm) {
  const samplers::SaintSampler sampler(g, test::all_nodes(g.num_nodes()),
                                       {.mode = samplers::SaintMode::kRandomWalk, .budget = 80, .walk_length = 2,
                                        .steps_per_epoch = 2, .norm_samples = 30, .seed = 5, .norm = norm, .num_layers = 2});
  auto ws = sampler.make_workspace();
  return sampler.sample(sampler.plan_epoch(0)[1], *ws);
}

// The test's own scores: from the graph directly, not through node_scores.
std::vector<double> reference_values(const CsrGraph& g, CutStrategy s) {
  if (s == CutStrategy::kDegreeSum || s == CutStrategy::kDegreeProduct) {
    std::vector<double> d;
    for (NodeId v = 0; v < g.num_nodes(); ++v) d.push_back(static_cast<double>(g.in_degree(v)) + 1.0);
    return d;
  }
  if (s == CutStrategy::kPagerankSum || s == CutStrategy::kPagerankProduct) return graph::pagerank(g).scores;
  return {};
}

double reference_score(CutStrategy s, const std::vector<double>& value, NodeId u, NodeId v) {
  const double a = value[static_cast<std::size_t>(u)], b = value[static_cast<std::size_t>(v)];
  return s == CutStrategy::kDegreeSum || s == CutStrategy::kPagerankSum ? 1.0 / (a + b) : 1.0 / (a * b);
}

// The transpose is the exact transpose of the forward CSR: every edge once, rows sorted.
void check_transpose(const graph::Block& b) {
  REQUIRE(b.t_offsets.size() == static_cast<std::size_t>(b.num_src) + 1);
  REQUIRE(b.t_offsets[0] == 0);
  REQUIRE(b.t_offsets[static_cast<std::size_t>(b.num_src)] == b.num_edges());
  REQUIRE(b.t_indices.size() == b.indices.size());
  std::vector<int> seen(b.indices.size(), 0);
  for (std::size_t c = 0; c < static_cast<std::size_t>(b.num_src); ++c) {
    for (auto k = b.t_offsets[c]; k < b.t_offsets[c + 1]; ++k) {
      const auto e = b.t_edges[static_cast<std::size_t>(k)];
      REQUIRE(e >= 0);
      REQUIRE(e < b.num_edges());
      const auto r = static_cast<std::size_t>(b.t_indices[static_cast<std::size_t>(k)]);
      CHECK(b.indices[static_cast<std::size_t>(e)] == static_cast<NodeId>(c));
      CHECK((b.offsets[r] <= e && e < b.offsets[r + 1]));
      if (k > b.t_offsets[c]) CHECK(b.t_indices[static_cast<std::size_t>(k) - 1] <= b.t_indices[static_cast<std::size_t>(k)]);
      ++seen[static_cast<std::size_t>(e)];
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

struct RemovedEdge {
  NodeId u, v;  // global ids
};

// Compares a cut batch with its source: same node lists and block sizes, every row of `after`
// a sub-multiset of the same row of `before`, kept weights as `weights` says, transposes exact.
// Returns the removed edges.
std::vector<RemovedEdge> diff(const MiniBatch& before, const MiniBatch& after, CutWeights weights) {
  CHECK(after.epoch == before.epoch);
  CHECK(after.index == before.index);
  CHECK(test::vec(after.input_nodes) == test::vec(before.input_nodes));
  CHECK(test::vec(after.targets) == test::vec(before.targets));
  CHECK(test::vec(after.loss_rows) == test::vec(before.loss_rows));
  CHECK(test::vec(after.loss_weights) == test::vec(before.loss_weights));
  REQUIRE(after.blocks.size() == before.blocks.size());
  std::vector<RemovedEdge> removed;
  for (std::size_t l = 0; l < before.blocks.size(); ++l) {
    const graph::Block& b = before.blocks[l];
    const graph::Block& a = after.blocks[l];
    CHECK(a.num_dst == b.num_dst);
    CHECK(a.num_src == b.num_src);
    CHECK((a.weighted() == b.weighted() || a.num_edges() == 0));  // an empty block has no weights array
    check_transpose(a);
    for (std::size_t r = 0; r < static_cast<std::size_t>(b.num_dst); ++r) {
      auto j = a.offsets[r];
      const bool changed = a.offsets[r + 1] - a.offsets[r] != b.offsets[r + 1] - b.offsets[r];
      for (auto i = b.offsets[r]; i < b.offsets[r + 1]; ++i) {
        const NodeId src = b.indices[static_cast<std::size_t>(i)];
        if (j < a.offsets[r + 1] && a.indices[static_cast<std::size_t>(j)] == src) {
          if (a.weighted()) {
            const float w = a.weights[static_cast<std::size_t>(j)];
            if (weights == CutWeights::kRowMean && changed) {
              CHECK(w == 1.0f / static_cast<float>(a.offsets[r + 1] - a.offsets[r]));
            } else {
              CHECK(w == b.weights[static_cast<std::size_t>(i)]);
            }
          }
          ++j;
        } else {
          removed.push_back({before.input_nodes[static_cast<std::size_t>(src)], before.input_nodes[r]});
        }
      }
      CHECK(j == a.offsets[r + 1]);  // nothing that was not there before
    }
  }
  return removed;
}

// Cuts `batch` by `count` with `strategy` and checks everything against a brute-force ranking.
void check_cut(const CsrGraph& g, const MiniBatch& batch, CutStrategy strategy, CutWeights weights) {
  const graph::NodeScores scores = graph::node_scores(g, strategy);
  const std::vector<double> value = reference_values(g, strategy);
  if (!value.empty()) CHECK(*scores.values == value);

  // Brute force: the scores of every edge that is not a self-loop, ascending.
  std::vector<double> all;
  int64_t loops = 0;
  for (const auto& b : batch.blocks) {
    for (std::size_t r = 0; r < static_cast<std::size_t>(b.num_dst); ++r) {
      for (auto e = b.offsets[r]; e < b.offsets[r + 1]; ++e) {
        const NodeId u = batch.input_nodes[static_cast<std::size_t>(b.indices[static_cast<std::size_t>(e)])];
        const NodeId v = batch.input_nodes[r];
        if (u == v) {
          ++loops;
        } else {
          all.push_back(value.empty() ? 0.0 : reference_score(strategy, value, u, v));
        }
      }
    }
  }
  std::sort(all.begin(), all.end());
  const auto removable = static_cast<int64_t>(all.size());

  const graph::EdgeCutPlan plan(batch, scores, {.key = graph::cut_rng_key(7, batch.epoch, batch.index), .weights = weights});
  REQUIRE(plan.removable_edges() == removable);
  REQUIRE(plan.num_edges() == removable + loops);
  for (int64_t count : {int64_t{0}, int64_t{1}, removable / 3, removable - 1, removable, removable + 7}) {
    INFO("strategy " << memory::to_string(strategy) << ", remove " << count << " of " << removable);
    const graph::EdgeCut cut = plan.cut(count);
    const int64_t k = std::min(count, removable);
    CHECK(cut.removed == k);
    const std::vector<RemovedEdge> removed = diff(batch, cut.batch, weights);
    REQUIRE(static_cast<int64_t>(removed.size()) == k);
    CHECK(cut.batch.shape.total_edges() == batch.shape.total_edges() - k * static_cast<int64_t>(batch.shape.edges.size() / batch.blocks.size()));
    // Exactly the lowest scores: the removed edges' scores are the k smallest of the brute force.
    std::vector<double> got;
    for (const RemovedEdge& e : removed) {
      CHECK(e.u != e.v);  // self-loops stay
      got.push_back(value.empty() ? 0.0 : reference_score(strategy, value, e.u, e.v));
    }
    std::sort(got.begin(), got.end());
    CHECK(got == std::vector<double>(all.begin(), all.begin() + k));
    // The predicted shape is the cut batch's.
    const memory::BatchShape predicted = plan.shape_after(count);
    CHECK(predicted.edges == cut.batch.shape.edges);
    CHECK(predicted.src_nodes == batch.shape.src_nodes);
    CHECK(predicted.dst_nodes == batch.shape.dst_nodes);
    CHECK(predicted.feature_dim == batch.shape.feature_dim);
    CHECK(cut.batch.shape.src_nodes == batch.shape.src_nodes);
    CHECK(cut.batch.shape.dst_nodes == batch.shape.dst_nodes);
  }
}

}  // namespace

TEST_CASE("cut strategy names round-trip and a bad name is a ConfigError naming memory.cut", "[graph][cut]") {
  for (CutStrategy s : kAllStrategies) CHECK(memory::parse_cut_strategy(memory::to_string(s), "memory.cut") == s);
  CHECK(memory::to_string(CutStrategy::kPagerankProduct) == "pagerank_product");
  for (const std::string bad : {"pagerank", "Random", "", "degree-sum"}) {
    const std::string message = test::message_of<core::ConfigError>([&] { memory::parse_cut_strategy(bad, "memory.cut"); });
    CHECK_THAT(message, Contains("memory.cut"));
    CHECK_THAT(message, Contains("'" + bad + "'"));
    CHECK_THAT(message, Contains("random, degree_sum, degree_product, pagerank_sum, pagerank_product"));
  }
}

TEST_CASE("degree cuts on a hand-checked graph remove exactly the expected edges", "[graph][cut]") {
  // Undirected 0-1, 0-2, 0-3, 1-2: in-degree + 1 is 4, 3, 3, 2.
  // degree_sum: 0-1 and 0-2 score 1/7 (lowest), 0-3 and 1-2 score 1/6.
  // degree_product: 0-1, 0-2 score 1/12, 1-2 1/9, 0-3 1/8.
  const auto g = CsrGraph::from_coo(4, std::vector<NodeId>{0, 0, 0, 1}, std::vector<NodeId>{1, 2, 3, 2}, {.symmetrize = true});
  const MiniBatch batch = full_batch(g, BlockNorm::kMean);
  auto rows = [](const MiniBatch& b) {
    std::vector<std::vector<NodeId>> out;
    const auto& blk = b.blocks[0];
    for (std::size_t r = 0; r < 4; ++r) out.emplace_back(blk.indices.begin() + blk.offsets[r], blk.indices.begin() + blk.offsets[r + 1]);
    return out;
  };
  using Rows = std::vector<std::vector<NodeId>>;

  const auto sum_scores = graph::node_scores(g, CutStrategy::kDegreeSum);
  CHECK(*sum_scores.values == std::vector<double>{4, 3, 3, 2});
  const graph::EdgeCut by_sum = graph::cut_edges(batch, 4, sum_scores, {.weights = CutWeights::kRowMean});
  CHECK(by_sum.removed == 4);
  CHECK(rows(by_sum.batch) == Rows{{3}, {2}, {1}, {0}});
  // Rows that lost edges are re-averaged; row 3 lost none and keeps its weight.
  CHECK(test::vec(by_sum.batch.blocks[0].weights) == std::vector<float>{1, 1, 1, 1});
  CHECK(by_sum.batch.shape.edges == std::vector<int64_t>{4, 4});  // one shared block, two layers
  CHECK(by_sum.batch.shape.feature_dim == 16);

  const auto product_scores = graph::node_scores(g, CutStrategy::kDegreeProduct);
  const graph::EdgeCut by_product = graph::cut_edges(batch, 6, product_scores);
  CHECK(rows(by_product.batch) == Rows{{3}, {}, {}, {0}});
  // kKeep: the mean weights of the full graph stay (1/3 for node 0's remaining edge).
  CHECK(test::vec(by_product.batch.blocks[0].weights) == std::vector<float>{1.0f / 3.0f, 1.0f});

  const graph::EdgeCut everything = graph::cut_edges(batch, 100, product_scores);
  CHECK(everything.removed == 8);
  CHECK(rows(everything.batch) == Rows{{}, {}, {}, {}});
  CHECK(everything.batch.shape.edges == std::vector<int64_t>{0, 0});
  check_transpose(everything.batch.blocks[0]);
}

TEST_CASE("each strategy removes exactly the lowest-scored edges of neighbor-sampler batches", "[graph][cut]") {
  const CsrGraph g = test::random_graph(600, 4000, 7);
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn}) {
    const CutWeights weights = norm == BlockNorm::kMean ? CutWeights::kRowMean : CutWeights::kKeep;
    for (const MiniBatch& batch : neighbor_batches(g, norm, {6, 4}, 32, 2)) {
      for (CutStrategy s : kAllStrategies) check_cut(g, batch, s, weights);
    }
  }
}

TEST_CASE("each strategy removes exactly the lowest-scored edges of a GraphSAINT batch", "[graph][cut]") {
  // One square block shared by both layers; alpha-normalised GCN weights are kept.
  const CsrGraph g = test::random_graph(600, 4000, 8);
  for (BlockNorm norm : {BlockNorm::kGcn, BlockNorm::kSelfLoops}) {
    const MiniBatch batch = saint_batch(g, norm);
    REQUIRE(batch.blocks.size() == 1);
    REQUIRE(batch.shape.edges.size() == 2);
    for (CutStrategy s : kAllStrategies) check_cut(g, batch, s, CutWeights::kKeep);
  }
  // A full batch with mean weights, on a directed graph with repeated edges and self-loops.
  const CsrGraph directed = test::random_graph(300, 2000, 9, true);
  const MiniBatch full = full_batch(directed, BlockNorm::kMean);
  for (CutStrategy s : kAllStrategies) check_cut(directed, full, s, CutWeights::kRowMean);
}

TEST_CASE("self-loops are never removed", "[graph][cut]") {
  const CsrGraph g = test::random_graph(400, 3000, 10);
  const MiniBatch batch = std::move(neighbor_batches(g, BlockNorm::kGcn, {5, 5}, 16, 1).at(0));
  for (CutStrategy s : kAllStrategies) {
    const graph::EdgeCut cut = graph::cut_edges(batch, 1'000'000, graph::node_scores(g, s));
    // Every row keeps exactly its own loop (the sampler adds one per destination).
    for (const graph::Block& b : cut.batch.blocks) {
      REQUIRE(b.num_edges() == b.num_dst);
      for (NodeId r = 0; r < b.num_dst; ++r) CHECK(b.indices[static_cast<std::size_t>(r)] == r);
    }
    CHECK(cut.removed == batch.shape.total_edges() - cut.batch.shape.total_edges());
  }
}

TEST_CASE("the random cut is deterministic for a key, differs for another and spreads over blocks", "[graph][cut][tsan]") {
  const CsrGraph g = test::random_graph(3000, 30000, 11);
  const MiniBatch batch = std::move(neighbor_batches(g, BlockNorm::kMean, {10, 5}, 128, 1).at(0));
  const auto random = graph::node_scores(g, CutStrategy::kRandom);
  CHECK(random.values == nullptr);
  const graph::EdgeCutPlan plan(batch, random, {.key = graph::cut_rng_key(1, 0, 0), .weights = CutWeights::kRowMean});
  const int64_t half = plan.removable_edges() / 2;
  const uint64_t a = test::fingerprint(plan.cut(half).batch);
  // The same key in another plan, under one and two threads: the same batch.
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      const graph::EdgeCutPlan again(batch, random, {.key = graph::cut_rng_key(1, 0, 0), .weights = CutWeights::kRowMean});
      CHECK(test::fingerprint(again.cut(half).batch) == a);
      CHECK(std::equal(again.ranked_edges().begin(), again.ranked_edges().end(), plan.ranked_edges().begin(),
                       plan.ranked_edges().end()));
    });
  }
  // Another seed, epoch or batch: another order.
  for (const core::RngKey other : {graph::cut_rng_key(2, 0, 0), graph::cut_rng_key(1, 1, 0), graph::cut_rng_key(1, 0, 1)}) {
    const graph::EdgeCutPlan p(batch, random, {.key = other, .weights = CutWeights::kRowMean});
    CHECK(test::fingerprint(p.cut(half).batch) != a);
  }
  // Uniform over all edges: each block loses about half of its edges (4 sigma for the smaller one).
  const auto edges = plan.block_edges_after(half);
  for (std::size_t b = 0; b < batch.blocks.size(); ++b) {
    const double kept = static_cast<double>(edges[b]) / static_cast<double>(batch.blocks[b].num_edges());
    INFO("block " << b << " of " << batch.blocks[b].num_edges() << " edges keeps " << kept);
    CHECK(std::abs(kept - 0.5) < 4.0 * 0.5 / std::sqrt(static_cast<double>(batch.blocks[b].num_edges())));
  }
}

TEST_CASE("deterministic strategies break ties the same way for any thread count", "[graph][cut][tsan]") {
  const CsrGraph g = test::random_graph(3000, 30000, 12);
  const MiniBatch batch = std::move(neighbor_batches(g, BlockNorm::kGcn, {10, 5}, 128, 1).at(0));
  const auto degrees = graph::node_scores(g, CutStrategy::kDegreeSum);
  auto cut = [&](int threads, uint64_t seed) {
    tbb::task_arena arena(threads);
    return arena.execute([&] {
      const graph::EdgeCutPlan plan(batch, degrees, {.key = graph::cut_rng_key(seed, 0, 0)});
      return test::fingerprint(plan.cut(plan.removable_edges() / 3).batch);
    });
  };
  CHECK(cut(1, 5) == cut(2, 5));
  CHECK(cut(1, 5) != cut(1, 6));  // the key only picks among equal scores: degree scores tie a lot

  // A batch big enough for the ranking's merge rounds (over 2^15 edges per sorted run): the ranked
  // positions are every non-loop edge once, in non-decreasing score, the same for 1 and 2 threads.
  const CsrGraph big = test::random_graph(20000, 120000, 15, true);
  const MiniBatch full = full_batch(big, BlockNorm::kGcn);
  const graph::Block& block = full.blocks[0];
  REQUIRE(block.num_edges() > 3 * (1 << 15));
  std::vector<NodeId> row_of(static_cast<std::size_t>(block.num_edges()));
  for (NodeId r = 0; r < block.num_dst; ++r) {
    for (auto e = block.offsets[static_cast<std::size_t>(r)]; e < block.offsets[static_cast<std::size_t>(r) + 1]; ++e) row_of[static_cast<std::size_t>(e)] = r;
  }
  for (CutStrategy s : {CutStrategy::kDegreeProduct, CutStrategy::kPagerankSum}) {
    INFO(memory::to_string(s));
    const auto scores = graph::node_scores(big, s);
    const std::vector<double> value = reference_values(big, s);
    std::vector<int64_t> ranked[2];
    for (int threads : {1, 2}) {
      tbb::task_arena arena(threads);
      arena.execute([&] {
        const graph::EdgeCutPlan plan(full, scores, {.key = graph::cut_rng_key(5, 0, 0)});
        ranked[threads - 1].assign(plan.ranked_edges().begin(), plan.ranked_edges().end());
      });
    }
    CHECK(ranked[0] == ranked[1]);
    std::vector<int> seen(static_cast<std::size_t>(block.num_edges()), 0);
    double previous = 0.0;
    bool ascending = true;
    for (int64_t pos : ranked[0]) {
      const auto e = static_cast<std::size_t>(pos);
      ++seen[e];
      const double score = reference_score(s, value, block.indices[e], row_of[e]);
      ascending = ascending && score >= previous;
      previous = score;
    }
    CHECK(ascending);
    for (std::size_t e = 0; e < seen.size(); ++e) {
      if (seen[e] != (block.indices[e] == row_of[e] ? 0 : 1)) FAIL("edge " << e << " ranked " << seen[e] << " times");
    }
  }
}

TEST_CASE("removing nothing shares the batch's arrays and bad inputs are errors", "[graph][cut]") {
  const CsrGraph g = test::random_graph(300, 2000, 13);
  const MiniBatch batch = std::move(neighbor_batches(g, BlockNorm::kMean, {4, 3}, 16, 1).at(0));
  const auto degrees = graph::node_scores(g, CutStrategy::kDegreeProduct);
  const graph::EdgeCut none = graph::cut_edges(batch, 0, degrees);
  CHECK(none.removed == 0);
  CHECK(test::fingerprint(none.batch) == test::fingerprint(batch));
  for (std::size_t b = 0; b < batch.blocks.size(); ++b) CHECK(none.batch.blocks[b].indices.data() == batch.blocks[b].indices.data());
  CHECK(none.batch.input_nodes.data() == batch.input_nodes.data());
  CHECK(none.batch.shape.edges == batch.shape.edges);

  const graph::EdgeCutPlan plan(batch, degrees);
  CHECK_THAT(test::message_of<core::Error>([&] { plan.cut(-1); }), Contains("cannot remove -1 edges"));
  CHECK_THAT(test::message_of<core::Error>([&] { graph::cut_edges(batch, 1, {.strategy = CutStrategy::kPagerankSum, .values = nullptr}); }),
             Contains("needs node values"));
  const graph::NodeScores short_values{.strategy = CutStrategy::kDegreeSum,
                                       .values = std::make_shared<const std::vector<double>>(10, 1.0)};
  CHECK_THAT(test::message_of<core::Error>([&] { graph::cut_edges(batch, 1, short_values); }), Contains("has no value"));
  const graph::NodeScores zero{.strategy = CutStrategy::kDegreeSum,
                               .values = std::make_shared<const std::vector<double>>(300, 0.0)};
  CHECK_THAT(test::message_of<core::Error>([&] { graph::cut_edges(batch, 1, zero); }), Contains("finite and > 0"));
  // Blocks whose local ids do not chain through input_nodes.
  MiniBatch broken;
  broken.blocks.push_back(batch.blocks[0]);
  broken.blocks.push_back(batch.blocks[0]);
  broken.input_nodes = batch.input_nodes;
  CHECK_THAT(test::message_of<core::Error>([&] { graph::cut_edges(broken, 1, degrees); }), Contains("destinations but block 1"));
}
