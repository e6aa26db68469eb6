// What the neighbor sampler draws, beyond the structural invariants: exactly fanouts[hop]
// neighbors per node in the hop that first reached it (min(fanout, degree) without replacement,
// exactly fanout with replacement), uniform subsets without replacement and uniform draws with
// replacement (chi-square over many batches on a small graph).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using samplers::NeighborSampler;

namespace {

// The hop in which the sampler first reached local node v: 0 for the seeds, h for a node first
// seen as a neighbor in hop h - 1. blocks[L - 1 - h] has the nodes reached before hop h as its
// destinations, so the hop is the first h whose block lists v as a destination.
std::size_t hop_of(const graph::MiniBatch& b, NodeId v) {
  const std::size_t layers = b.blocks.size();
  for (std::size_t h = 0; h < layers; ++h) {
    if (v < b.blocks[layers - 1 - h].num_dst) return h;
  }
  return layers;
}

// The expected row length of a node expanded with `fanout` that has `degree` in-neighbors.
int64_t expected_draws(int fanout, int64_t degree, bool replace) {
  if (degree == 0) return 0;
  if (fanout < 0) return degree;
  return replace ? fanout : std::min<int64_t>(fanout, degree);
}

// The chi-square statistic of observed counts against equal expected counts.
double chi_square_uniform(const std::vector<int64_t>& counts) {
  double total = 0;
  for (int64_t c : counts) total += static_cast<double>(c);
  const double expected = total / static_cast<double>(counts.size());
  double chi2 = 0;
  for (int64_t c : counts) chi2 += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected) / expected;
  return chi2;
}

// The upper 0.1% point of the chi-square distribution with `df` degrees of freedom
// (Wilson-Hilferty; within 1% of the exact quantile for df >= 9). A correct sampler exceeds it
// with probability 0.001, and the draws are seeded, so a pass is a pass on every machine.
double chi_square_critical_999(int df) {
  const double k = df, z = 3.090232;  // the standard normal's 0.999 quantile
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

// A star: node 0 has in-neighbors 1..degree, and nothing else has edges.
graph::CsrGraph star(NodeId degree) {
  std::vector<NodeId> src, dst;
  for (NodeId i = 1; i <= degree; ++i) {
    src.push_back(i);
    dst.push_back(0);
  }
  return graph::CsrGraph::from_coo(degree + 1, src, dst);
}

}  // namespace

TEST_CASE("each node gets fanouts[hop] neighbors in the hop that reached it: min(fanout, degree), or exactly fanout with replacement",
          "[samplers][neighbor]") {
  // Degrees from 0 to ~30, so fanouts 7 / 4 / 2 / -1 meet degrees below, at and above them.
  const auto g = test::random_graph(1500, 9000, 21, /*directed=*/true);
  for (bool replace : {false, true}) {
    for (const std::vector<int>& fanouts : {std::vector<int>{7, 4, 2}, std::vector<int>{2, -1}, std::vector<int>{25, 3}}) {
      INFO("replace " << replace << ", fanouts " << fanouts.size() << " hops starting " << fanouts[0]);
      NeighborSampler sampler(g, test::all_nodes(1500),
                              {.fanouts = fanouts, .batch_size = 100, .replace = replace, .seed = 3, .norm = graph::BlockNorm::kNone});
      auto ws = sampler.make_workspace();
      std::map<std::size_t, int64_t> rows_per_hop;
      int64_t capped = 0;  // rows where the degree, not the fanout, decided (without replacement)
      for (const auto& spec : sampler.plan_epoch(1)) {
        const graph::MiniBatch b = sampler.sample(spec, *ws);
        REQUIRE(b.blocks.size() == fanouts.size());
        for (const graph::Block& block : b.blocks) {
          for (NodeId v = 0; v < block.num_dst; ++v) {
            const std::size_t hop = hop_of(b, v);
            REQUIRE(hop < fanouts.size());
            const NodeId global = b.input_nodes[static_cast<std::size_t>(v)];
            const int64_t degree = static_cast<int64_t>(g.in_neighbors(global).size());
            const int64_t drawn = block.offsets[static_cast<std::size_t>(v) + 1] - block.offsets[static_cast<std::size_t>(v)];
            INFO("hop " << hop << ", node " << global << ", degree " << degree);
            REQUIRE(drawn == expected_draws(fanouts[hop], degree, replace));
            if (&block == &b.blocks.front()) ++rows_per_hop[hop];  // the deepest block lists every expanded node
            if (!replace && fanouts[hop] > 0 && degree < fanouts[hop] && degree > 0) ++capped;
          }
        }
      }
      // Every hop was exercised, and some rows were decided by the degree.
      for (std::size_t h = 0; h < fanouts.size(); ++h) CHECK(rows_per_hop[h] > 0);
      if (!replace) CHECK(capped > 0);
    }
  }
}

TEST_CASE("without replacement, every fanout-subset of a neighborhood is equally likely (chi-square)",
          "[samplers][neighbor]") {
  // Node 0 has 8 in-neighbors and fanout 3: C(8, 3) = 56 subsets. 11,200 batches (one per epoch)
  // expect 200 draws of each.
  const auto g = star(8);
  NeighborSampler sampler(g, {0}, {.fanouts = {3}, .batch_size = 1, .replace = false, .seed = 11, .norm = graph::BlockNorm::kNone});
  auto ws = sampler.make_workspace();
  std::map<std::vector<NodeId>, int64_t> subsets;
  std::vector<int64_t> per_neighbor(8, 0);
  const int batches = 11200;
  for (int epoch = 0; epoch < batches; ++epoch) {
    const graph::MiniBatch b = sampler.sample(sampler.plan_epoch(epoch)[0], *ws);
    const graph::Block& block = b.blocks.back();
    REQUIRE(block.num_edges() == 3);
    std::vector<NodeId> picked;
    for (NodeId local : block.indices.span()) picked.push_back(b.input_nodes[static_cast<std::size_t>(local)]);
    std::sort(picked.begin(), picked.end());
    REQUIRE(std::adjacent_find(picked.begin(), picked.end()) == picked.end());  // distinct
    for (NodeId u : picked) ++per_neighbor[static_cast<std::size_t>(u - 1)];
    ++subsets[picked];
  }
  REQUIRE(subsets.size() == 56);  // every subset occurs
  std::vector<int64_t> counts;
  for (const auto& [subset, n] : subsets) counts.push_back(n);
  const double chi2 = chi_square_uniform(counts);
  INFO("chi-square over the 56 subsets: " << chi2 << " (critical " << chi_square_critical_999(55) << ")");
  CHECK(chi2 < chi_square_critical_999(55));
  // Each neighbor is in 3/8 of the draws; a biased pick (e.g. favouring the last positions) shows here too.
  for (int64_t n : per_neighbor) CHECK(std::abs(static_cast<double>(n) / batches - 3.0 / 8.0) < 0.02);
}

TEST_CASE("with replacement, each of fanout draws is uniform over the neighborhood (chi-square)", "[samplers][neighbor]") {
  // Node 0 has 6 in-neighbors and fanout 9 > 6: every batch draws exactly 9, with repeats.
  const auto g = star(6);
  NeighborSampler sampler(g, {0}, {.fanouts = {9}, .batch_size = 1, .replace = true, .seed = 5, .norm = graph::BlockNorm::kNone});
  auto ws = sampler.make_workspace();
  std::vector<int64_t> counts(6, 0);
  int64_t batches_with_repeats = 0;
  for (int epoch = 0; epoch < 2000; ++epoch) {
    const graph::MiniBatch b = sampler.sample(sampler.plan_epoch(epoch)[0], *ws);
    const graph::Block& block = b.blocks.back();
    REQUIRE(block.num_edges() == 9);
    std::vector<NodeId> picked;
    for (NodeId local : block.indices.span()) picked.push_back(b.input_nodes[static_cast<std::size_t>(local)]);
    for (NodeId u : picked) ++counts[static_cast<std::size_t>(u - 1)];
    std::sort(picked.begin(), picked.end());
    if (std::adjacent_find(picked.begin(), picked.end()) != picked.end()) ++batches_with_repeats;
  }
  CHECK(batches_with_repeats == 2000);  // 9 draws from 6 always repeat
  const double chi2 = chi_square_uniform(counts);
  INFO("chi-square over 6 neighbors, 18,000 draws: " << chi2 << " (critical " << chi_square_critical_999(5) << ")");
  // df = 5 is below Wilson-Hilferty's comfort zone; the exact 0.999 quantile is 20.52.
  CHECK(chi2 < 20.52);
}
