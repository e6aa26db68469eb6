// MH-Aug's chain (issue #41) against ../shared/reference/MH-AUG.md §6: the worked example's every
// term to 1e-6 (settings A and B), the deterministic checks T1 (aggregator), T2 (exact drop
// counts), T3 (the truncated normals cancel far from the bounds), T4 (log A is antisymmetric), and
// the statistical checks S1-S3 of the ratio chain (seeded, so a pass is a pass everywhere).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/mh_aug.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using namespace gnnpipe::samplers::mh;
using graph::NodeId;

namespace {

// The worked example: undirected edges 0-1, 0-2, 1-2, 2-3, 3-4, 3-5, 4-5 as directed ids 0-13
// (each edge, then its reverse); the CSR entry of id e.
struct Example {
  std::vector<NodeId> src{0, 1, 0, 2, 1, 2, 2, 3, 3, 4, 3, 5, 4, 5};
  std::vector<NodeId> dst{1, 0, 2, 0, 2, 1, 3, 2, 4, 3, 5, 3, 5, 4};
  graph::CsrGraph g = graph::CsrGraph::from_coo(6, src, dst);
  std::size_t entry(std::size_t id) const {
    const auto row = g.in_neighbors(dst[id]);
    return static_cast<std::size_t>(g.offsets()[static_cast<std::size_t>(dst[id])] + (std::find(row.begin(), row.end(), src[id]) - row.begin()));
  }
  MhMasks masks(std::vector<std::size_t> dropped_ids, std::vector<std::size_t> masked) const {
    MhMasks m = MhMasks::keep_all(14, 6);
    for (std::size_t id : dropped_ids) m.edge_keep[entry(id)] = 0;
    for (std::size_t v : masked) m.node_keep[v] = 0;
    m.edges_dropped = static_cast<int64_t>(dropped_ids.size());
    m.nodes_masked = static_cast<int64_t>(masked.size());
    return m;
  }
  // ent_i = H(softmax z_i) / log C.
  std::vector<double> ent() const {
    const double z[6][3] = {{2, .5, -1}, {1.5, 1.2, 0}, {.2, .1, 0}, {-1, 2.5, .3}, {0, 0, 3}, {.4, .3, .5}};
    std::vector<double> out;
    for (const auto& row : z) {
      double norm = 0;
      for (double x : row) norm += std::exp(x);
      double h = 0;
      for (double x : row) h -= std::exp(x) / norm * std::log(std::exp(x) / norm);
      out.push_back(h / std::log(3.0));
    }
    return out;
  }
};

template <class A, class B>
void check_close(const A& got, const B& expected, double tolerance = 1e-6) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("entry " << i);
    CHECK(got[i] == Approx(expected[i]).margin(tolerance));
  }
}

}  // namespace

TEST_CASE("MH-Aug worked example: ego, ent and the deltas of the state and the candidate", "[samplers][mh]") {
  const Example ex;
  MhChain chain(ex.g, {});
  check_close(chain.ego(), std::vector<double>{10, 10, 14, 14, 10, 10});
  check_close(ex.ent(), std::vector<double>{.565791, .8725, .996973, .398847, .333688, .996973});
  const MhDeltas state = deltas(ex.g, chain.ego(), ex.masks({4, 12}, {5}), 2);
  const MhDeltas cand = deltas(ex.g, chain.ego(), ex.masks({0, 7, 9, 13}, {1, 4}), 2);
  check_close(state.de, std::vector<double>{.1, .1, .285714, .142857, .1, .4});
  check_close(cand.de, std::vector<double>{.2, .5, .428571, .357143, .5, .2});
  check_close(state.dv, std::vector<double>{0, 0, .071429, .214286, .3, .3});
  check_close(cand.dv, std::vector<double>{.3, .3, .285714, .285714, .3, .3});
}

TEST_CASE("MH-Aug worked example: setting A (the defaults) accepts with log A = .000177", "[samplers][mh]") {
  const Example ex;
  const MhAugOptions o;
  MhChain chain(ex.g, o);
  chain.set_state(ex.masks({4, 12}, {5}));
  MhCandidate c{.delta_e = .30, .delta_v = .35, .masks = ex.masks({0, 7, 9, 13}, {1, 4})};
  const MhDeltas cd = deltas(ex.g, chain.ego(), c.masks, 2);
  CHECK(log_target(chain.state_deltas(), ex.ent(), o) == Approx(-.000243).margin(1e-6));
  CHECK(log_target(cd, ex.ent(), o) == Approx(-.000065).margin(1e-6));
  CHECK(log_truncated_normal(.30, 1.0 / 7, o.sigma_delta_e) == Approx(-11.131201).margin(1e-6));
  CHECK(log_truncated_normal(1.0 / 7, .30, o.sigma_delta_e) == Approx(-11.131201).margin(1e-6));
  CHECK(log_truncated_normal(.35, 1.0 / 6, o.sigma_delta_v) == Approx(-16.085220).margin(1e-6));
  CHECK(chain.log_acceptance(c, cd, ex.ent()) == Approx(.000177).margin(1e-6));
}

TEST_CASE("MH-Aug worked example: setting B, every term of log A = 4.591192", "[samplers][mh]") {
  const Example ex;
  MhAugOptions o;
  o.sigma_delta_e = o.sigma_delta_v = .1;
  o.a_e = o.a_v = 1;
  o.b_e = o.b_v = .1;
  o.lambda1_e = o.lambda1_v = o.lambda2_e = o.lambda2_v = 1;
  MhChain chain(ex.g, o);
  chain.set_state(ex.masks({4, 12}, {5}));
  const MhCandidate c{.delta_e = .30, .delta_v = .35, .masks = ex.masks({0, 7, 9, 13}, {1, 4})};
  const MhDeltas cd = deltas(ex.g, chain.ego(), c.masks, 2);
  check_close(log_target_terms(chain.state_deltas(), ex.ent(), o),
              std::vector<double>{-.327109, -.153317, -.04791, -.420303, -.691175, -.020775});
  check_close(log_target_terms(cd, ex.ent(), o), std::vector<double>{-.191754, -.010574, -.015264, -.133267, -.053167, -.070636});
  CHECK(log_target(chain.state_deltas(), ex.ent(), o) == Approx(-1.660589).margin(1e-6));
  CHECK(log_target(cd, ex.ent(), o) == Approx(-.474661).margin(1e-6));
  CHECK(log_truncated_normal(1.0 / 7, .30, .1) == Approx(.150303).margin(1e-6));
  CHECK(log_truncated_normal(.30, 1.0 / 7, .1) == Approx(.228606).margin(1e-6));
  CHECK(log_truncated_normal(1.0 / 6, .35, .1) == Approx(-.296676).margin(1e-6));
  CHECK(log_truncated_normal(.35, 1.0 / 6, .1) == Approx(-.247939).margin(1e-6));
  CHECK(betaln(14 - 2 + 1, 2 + 1) == Approx(-7.21891).margin(1e-5));
  CHECK(betaln(14 - 4.2 + 1, 4.2 + 1) == Approx(-9.779654).margin(1e-6));
  CHECK(betaln(6 - 1 + 1, 1 + 1) == Approx(-3.73767).margin(1e-5));
  CHECK(betaln(6 - 2.1 + 1, 2.1 + 1) == Approx(-4.709229).margin(1e-6));
  CHECK(log_proposal(1.0 / 7, 1.0 / 6, .30, .35, 2, 1, 14, 6, o) == Approx(-11.102952).margin(1e-6));
  CHECK(log_proposal(.30, .35, 1.0 / 7, 1.0 / 6, 4.2, 2.1, 14, 6, o) == Approx(-14.508216).margin(1e-6));
  CHECK(chain.log_acceptance(c, cd, ex.ent()) == Approx(4.591192).margin(1e-6));
}

TEST_CASE("MH-Aug T1: the aggregator's closed form and its extremes", "[samplers][mh][tsan]") {
  const graph::CsrGraph g = test::random_graph(200, 900, 3);
  MhChain chain(g, {});
  // ego_i = (d_i + 1) + sum over j -> i of (d_j + 1) for K = 2.
  for (NodeId i = 0; i < g.num_nodes(); ++i) {
    double expected = static_cast<double>(g.in_degree(i) + 1);
    for (NodeId j : g.in_neighbors(i)) expected += static_cast<double>(g.in_degree(j) + 1);
    CHECK(chain.ego()[static_cast<std::size_t>(i)] == expected);
  }
  const MhDeltas none = deltas(g, chain.ego(), MhMasks::keep_all(g.num_edges(), g.num_nodes()), 2);
  CHECK(std::all_of(none.de.begin(), none.de.end(), [](double x) { return x == 0; }));
  CHECK(std::all_of(none.dv.begin(), none.dv.end(), [](double x) { return x == 0; }));
  MhMasks all = MhMasks::keep_all(g.num_edges(), g.num_nodes());
  std::fill(all.edge_keep.begin(), all.edge_keep.end(), 0);
  std::fill(all.node_keep.begin(), all.node_keep.end(), 0);
  const MhDeltas every = deltas(g, chain.ego(), all, 2);
  for (std::size_t i = 0; i < every.de.size(); ++i) {
    CHECK(every.de[i] == Approx(1.0 - 1.0 / chain.ego()[i]));
    CHECK(every.dv[i] == 1.0);
  }
  // Self-loops are the aggregator's: a graph with one is refused, naming the node.
  const auto looped = graph::CsrGraph::from_coo(3, std::vector<NodeId>{0, 1}, std::vector<NodeId>{1, 1});
  CHECK_THROWS_WITH(MhChain(looped, {}), Catch::Contains("node 1 has a self-loop"));
}

TEST_CASE("MH-Aug T2: a proposal drops exactly floor(m delta') entries and floor(N delta') nodes", "[samplers][mh]") {
  const graph::CsrGraph g = test::random_graph(300, 1500, 4);
  MhAugOptions o;
  o.sigma_delta_e = o.sigma_delta_v = .2;
  MhChain chain(g, o);
  for (int64_t t = 0; t < 50; ++t) {
    const MhCandidate c = chain.propose(t);
    CHECK(c.masks.edges_dropped == static_cast<int64_t>(std::floor(static_cast<double>(g.num_edges()) * c.delta_e)));
    CHECK(c.masks.nodes_masked == static_cast<int64_t>(std::floor(static_cast<double>(g.num_nodes()) * c.delta_v)));
    CHECK(std::count(c.masks.edge_keep.begin(), c.masks.edge_keep.end(), 0) == c.masks.edges_dropped);
    CHECK(std::count(c.masks.node_keep.begin(), c.masks.node_keep.end(), 0) == c.masks.nodes_masked);
    // Positional: the same proposal number draws the same candidate.
    CHECK(chain.propose(t).masks.edge_keep == c.masks.edge_keep);
  }
  // The view's features: masked rows 0, the others times N / (N - c_V); nodes and their edges stay.
  const MhCandidate c = chain.propose(7);
  REQUIRE(c.masks.nodes_masked > 0);
  const int64_t cols = 3;
  std::vector<float> x(static_cast<std::size_t>(g.num_nodes() * cols));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(k % 7) - 2.5f;
  const std::vector<float> y = masked_features(x, cols, c.masks);
  const auto scale = static_cast<float>(300.0 / (300.0 - static_cast<double>(c.masks.nodes_masked)));
  for (std::size_t k = 0; k < x.size(); ++k) {
    CHECK(y[k] == (c.masks.node_keep[k / cols] == 0 ? 0.0f : x[k] * scale));
  }
  CHECK(feature_row_factor(MhMasks::keep_all(5, 4), 2) == 1.0f);
  CHECK_THROWS_AS(masked_features(std::vector<float>(5), 3, c.masks), core::DataError);
}

TEST_CASE("MH-Aug T3 and T4: the proposal terms cancel far from the bounds, and log A is antisymmetric", "[samplers][mh]") {
  MhAugOptions o;  // lambda2 = 0
  const int64_t m = 10000, n = 1000;
  // T3: both ratios more than 5 sigma inside [0, 1].
  const double forward = log_proposal(.42, .33, .40, .30, m * .42, n * .33, m, n, o);
  const double backward = log_proposal(.40, .30, .42, .33, 4000, 300, m, n, o);
  CHECK(std::abs(forward - backward) < 1e-9);
  // T4: integer drop counts and a fixed ent; the chain moves between two states both ways.
  const graph::CsrGraph g = test::random_graph(300, 1500, 5);
  o.lambda2_e = o.lambda2_v = 1;
  o.a_e = o.a_v = 1;
  o.b_e = o.b_v = .2;
  MhChain chain(g, o);
  const std::vector<double> ent(static_cast<std::size_t>(g.num_nodes()), .5);
  const MhCandidate one = chain.propose(1), two = chain.propose(2);
  const auto integral = [&](const MhCandidate& c) {  // drawn ratios = the realised ones
    MhCandidate r = c;
    r.delta_e = c.masks.delta_e(chain.num_entries());
    r.delta_v = c.masks.delta_v(g.num_nodes());
    return r;
  };
  chain.set_state(one.masks);
  const double there = chain.log_acceptance(integral(two), deltas(g, chain.ego(), two.masks, 2), ent);
  chain.set_state(two.masks);
  const double back = chain.log_acceptance(integral(one), deltas(g, chain.ego(), one.masks, 2), ent);
  CHECK(there == Approx(-back).margin(1e-9));
  CHECK(there != 0);
}

namespace {

// The ratio chain of MH-AUG.md §6 (m = 1e4 entries, no graph): `steps` proposals from TN(delta,
// sigma), accepted by log A with the target `log_p(realised ratio)`; the mean and variance of the
// state's ratio over the last 80 %.
template <class LogP>
std::pair<double, double> ratio_chain(const MhAugOptions& o, int steps, LogP&& log_p) {
  const int64_t m = 10000;
  const core::RngKey key = core::rng_key(7, {1});
  double delta = .5;
  int64_t dropped = 5000;
  double sum = 0, sum2 = 0;
  int kept = 0;
  for (int t = 0; t < steps; ++t) {
    samplers::DrawCursor draws = samplers::DrawCursor::at(key, static_cast<uint64_t>(t));
    const double drawn = sample_truncated_normal(delta, o.sigma_delta_e, draws);
    const auto count = static_cast<int64_t>(std::floor(static_cast<double>(m) * drawn));
    const double realised = static_cast<double>(count) / static_cast<double>(m);
    const double log_a = log_p(realised) - log_p(delta) +
                         log_proposal(delta, .5, drawn, .5, static_cast<double>(dropped), 0, m, 1, o) -
                         log_proposal(drawn, .5, delta, .5, static_cast<double>(m) * drawn, 0, m, 1, o);
    const double log_u = std::log(1.0 - static_cast<double>(draws.next_u32()) / 4294967296.0);
    if (log_u < log_a) {
      delta = realised;
      dropped = count;
    }
    if (t >= steps / 5) {
      sum += delta;
      sum2 += delta * delta;
      ++kept;
    }
  }
  const double mean = sum / kept;
  return {mean, sum2 / kept - mean * mean};
}

}  // namespace

TEST_CASE("MH-Aug S1-S3: the ratio chain's stationary distributions", "[samplers][mh]") {
  MhAugOptions o;
  o.lambda2_v = 0;
  SECTION("S1: no target and no subset term: uniform on [0, 1]") {
    o.sigma_delta_e = .1;
    const auto [mean, var] = ratio_chain(o, 60000, [](double) { return 0.0; });
    CHECK(mean == Approx(.5).margin(.03));
    CHECK(var == Approx(1.0 / 12).margin(.008));
  }
  SECTION("S2: the subset term alone: delta proportional to C(m, k), mean .5, sd .005") {
    o.sigma_delta_e = .01;
    o.lambda2_e = 1;
    const auto [mean, var] = ratio_chain(o, 40000, [](double) { return 0.0; });
    CHECK(mean == Approx(.5).margin(.002));
    CHECK(std::sqrt(var) == Approx(.005).margin(.001));
  }
  SECTION("S3: a mock target of 100 nodes with Delta e = delta: N(.6, .05^2)") {
    o.sigma_delta_e = .05;
    const auto [mean, var] = ratio_chain(o, 40000, [](double d) { return 100 * -(d - .6) * (d - .6) / (2 * .5 * .5); });
    CHECK(mean == Approx(.6).margin(.01));
    CHECK(std::sqrt(var) == Approx(.05).margin(.006));
  }
}
