// MH-Aug's views of a batch (mh_views.hpp): exact against blocks built from the kept graph.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/mh_views.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"

using gnnpipe::graph::Block;
using gnnpipe::graph::BlockNorm;
using gnnpipe::graph::CsrGraph;
using gnnpipe::graph::MiniBatch;
using gnnpipe::graph::NodeId;
namespace mh = gnnpipe::samplers::mh;

namespace {

// An undirected graph of 6 nodes (two triangles joined by 2-3) plus a self-loop on 4 and a
// repeated entry 0 -> 1.
CsrGraph small_graph() {
  const std::vector<NodeId> src{0, 1, 0, 2, 1, 2, 2, 3, 3, 4, 3, 5, 4, 5, 4, 0};
  const std::vector<NodeId> dst{1, 0, 2, 0, 2, 1, 3, 2, 4, 3, 5, 3, 5, 4, 4, 1};
  return CsrGraph::from_coo(6, src, dst);
}

MiniBatch full_batch(const CsrGraph& g, BlockNorm norm) {
  const gnnpipe::samplers::FullBatchSampler sampler(g, {0, 1}, norm, 2);
  auto ws = sampler.make_workspace();
  return sampler.sample(sampler.plan_epoch(1).front(), *ws);
}

// The chain graph without the entries `state` drops, with `graph`'s self-loops (which views keep).
CsrGraph kept_graph(const CsrGraph& graph, const CsrGraph& chain, const mh::MhMasks& state) {
  std::vector<NodeId> src, dst;
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    for (NodeId u : graph.in_neighbors(v)) {
      if (u == v) {
        src.push_back(v);
        dst.push_back(v);
      }
    }
  }
  for (NodeId v = 0; v < chain.num_nodes(); ++v) {
    for (auto e = chain.offsets()[static_cast<std::size_t>(v)]; e < chain.offsets()[static_cast<std::size_t>(v) + 1]; ++e) {
      if (state.edge_keep[static_cast<std::size_t>(e)] == 0) continue;
      src.push_back(chain.indices()[static_cast<std::size_t>(e)]);
      dst.push_back(v);
    }
  }
  return CsrGraph::from_coo(chain.num_nodes(), src, dst);
}

template <class T>
std::vector<T> vec(const gnnpipe::graph::HostArray<T>& a) {
  return {a.begin(), a.end()};
}

mh::MhMasks drop(const CsrGraph& chain, std::vector<int64_t> entries, std::vector<NodeId> nodes) {
  mh::MhMasks m = mh::MhMasks::keep_all(chain.num_edges(), chain.num_nodes());
  for (int64_t e : entries) m.edge_keep[static_cast<std::size_t>(e)] = 0;
  for (NodeId v : nodes) m.node_keep[static_cast<std::size_t>(v)] = 0;
  m.edges_dropped = static_cast<int64_t>(entries.size());
  m.nodes_masked = static_cast<int64_t>(nodes.size());
  return m;
}

}  // namespace

TEST_CASE("MH-Aug views: the chain's graph has no self-loops, and keeping everything gives the batch's own block",
          "[samplers][mh_views]") {
  const CsrGraph g = small_graph();
  const CsrGraph chain = mh::chain_graph(g);
  CHECK(chain.count_self_loops() == 0);
  CHECK(chain.num_edges() == g.num_edges() - 1);
  for (BlockNorm norm : {BlockNorm::kGcn, BlockNorm::kMean, BlockNorm::kNone}) {
    INFO("norm " << static_cast<int>(norm));
    MiniBatch b = full_batch(g, norm);
    const mh::ViewBuilder builder(g, chain, {.norm = norm, .degrees = mh::ViewDegrees::kBatchRows});
    const mh::ViewState all = mh::ViewState::of(chain, mh::MhMasks::keep_all(chain.num_edges(), chain.num_nodes()));
    builder.attach(b, all, all);
    REQUIRE(b.views.size() == 2);
    for (const auto& v : b.views) {
      REQUIRE(v.blocks.size() == 1);
      CHECK(vec(v.blocks[0].offsets) == vec(b.blocks[0].offsets));
      CHECK(vec(v.blocks[0].indices) == vec(b.blocks[0].indices));
      CHECK(vec(v.blocks[0].weights) == vec(b.blocks[0].weights));  // bitwise: every factor is exactly 1
      CHECK(vec(v.row_factors) == std::vector<float>(6, 1.0f));
    }
    CHECK(vec(b.node_weights) == std::vector<float>(6, 1.0f / 6.0f));
  }
}

TEST_CASE("MH-Aug views: a full batch's view is the block of the kept graph, re-normalised", "[samplers][mh_views]") {
  const CsrGraph g = small_graph();
  const CsrGraph chain = mh::chain_graph(g);
  // Every entry of node 3's row and one of the repeated 0 -> 1 entries.
  std::vector<int64_t> dropped;
  for (auto e = chain.offsets()[3]; e < chain.offsets()[4]; ++e) dropped.push_back(e);
  dropped.push_back(chain.offsets()[1]);  // row 1's first entry: 0 -> 1 (one of two)
  const mh::MhMasks state = drop(chain, dropped, {2, 5});
  const mh::ViewState view_state = mh::ViewState::of(chain, state);
  for (BlockNorm norm : {BlockNorm::kGcn, BlockNorm::kMean}) {
    INFO("norm " << static_cast<int>(norm));
    MiniBatch b = full_batch(g, norm);
    const mh::ViewBuilder builder(g, chain, {.norm = norm, .degrees = mh::ViewDegrees::kBatchRows});
    const auto entries = builder.chain_entries(b);
    const auto v = builder.view(b, entries, view_state);
    const Block expected = gnnpipe::graph::full_graph_block(kept_graph(g, chain, state), norm);
    REQUIRE(vec(v.blocks[0].offsets) == vec(expected.offsets));
    REQUIRE(vec(v.blocks[0].indices) == vec(expected.indices));
    for (std::size_t e = 0; e < expected.weights.size(); ++e) {
      CHECK(v.blocks[0].weights[e] == Approx(expected.weights[e]).epsilon(1e-6));
    }
    const float factor = 6.0f / 4.0f;
    CHECK(vec(v.row_factors) == std::vector<float>{factor, factor, 0.0f, factor, factor, 0.0f});
  }
}

TEST_CASE("MH-Aug views: GraphSAINT's normalised weights keep alpha and take the kept full-graph degrees",
          "[samplers][mh_views]") {
  const CsrGraph g = small_graph();
  const CsrGraph chain = mh::chain_graph(g);
  gnnpipe::samplers::SaintSampler sampler(g, {0, 1, 2, 3, 4, 5},
                                          {.mode = gnnpipe::samplers::SaintMode::kRandomWalk, .budget = 3,
                                           .walk_length = 2, .norm_samples = 40, .seed = 1, .norm = BlockNorm::kGcn});
  const auto support = sampler.augment_support();
  REQUIRE(support.has_value());
  CHECK(support->degrees == mh::ViewDegrees::kFullGraph);
  const mh::ViewBuilder builder(g, chain, *support);
  std::vector<int64_t> dropped{chain.offsets()[2], chain.offsets()[3]};  // one in-entry of 2 and of 3
  const mh::ViewState state = mh::ViewState::of(chain, drop(chain, dropped, {}));
  auto ws = sampler.make_workspace();
  for (const auto& spec : sampler.plan_epoch(1)) {
    const MiniBatch b = sampler.sample(spec, *ws);
    const auto entries = builder.chain_entries(b);
    const auto v = builder.view(b, entries, state);
    const Block& block = b.blocks[0];
    // Each kept entry's weight is the original's times sqrt(d_u d_v / (d'_u d'_v)), d = the
    // chain's in-degree + 1 and d' without the dropped entries.
    const auto d = [&](NodeId x) { return static_cast<double>(chain.in_degree(x)) + 1.0; };
    const auto kept = [&](NodeId x) { return d(x) - state.dropped_in[static_cast<std::size_t>(x)]; };
    std::size_t out = 0;
    for (NodeId i = 0; i < block.num_dst; ++i) {
      for (auto e = block.offsets[static_cast<std::size_t>(i)]; e < block.offsets[static_cast<std::size_t>(i) + 1]; ++e) {
        const int64_t c = entries[0][static_cast<std::size_t>(e)];
        if (c >= 0 && state.masks.edge_keep[static_cast<std::size_t>(c)] == 0) continue;
        const NodeId u = b.input_nodes[static_cast<std::size_t>(block.indices[static_cast<std::size_t>(e)])];
        const NodeId w = b.input_nodes[static_cast<std::size_t>(i)];
        const double expected = block.weights[static_cast<std::size_t>(e)] * std::sqrt(d(u) * d(w) / (kept(u) * kept(w)));
        REQUIRE(out < v.blocks[0].weights.size());
        CHECK(v.blocks[0].weights[out] == Approx(expected).epsilon(1e-6));
        ++out;
      }
    }
    CHECK(out == v.blocks[0].weights.size());
    // Node weights N_pre / (C_v N): the batch's share of a mean over all nodes.
    for (std::size_t k = 0; k < b.targets.size(); ++k) {
      const double c_v = std::max(0.1, static_cast<double>(sampler.node_counts()[static_cast<std::size_t>(b.targets[k])]));
      CHECK(builder.node_weights(b)[k] == Approx(sampler.norm_samples() / (c_v * 6.0)));
    }
  }
}

TEST_CASE("MH-Aug views: a batch entry the graph lacks is a DataError naming it", "[samplers][mh_views]") {
  const CsrGraph g = small_graph();
  const CsrGraph chain = mh::chain_graph(g);
  MiniBatch b = full_batch(g, BlockNorm::kNone);
  const CsrGraph other = CsrGraph::from_coo(6, std::vector<NodeId>{5}, std::vector<NodeId>{0});
  const CsrGraph other_chain = mh::chain_graph(other);  // the builder keeps references
  const mh::ViewBuilder builder(other, other_chain, {});
  CHECK_THROWS_AS(builder.chain_entries(b), gnnpipe::core::DataError);
}

TEST_CASE("MH-Aug views: a neighbor batch's views filter every layer's block and re-weight GCN's full-graph degrees",
          "[samplers][mh_views]") {
  const CsrGraph g = small_graph();
  const CsrGraph chain = mh::chain_graph(g);
  const gnnpipe::samplers::NeighborSampler sampler(
      g, {0, 1, 2, 3, 4, 5}, {.fanouts = {3, 2}, .batch_size = 2, .seed = 4, .norm = BlockNorm::kGcn});
  const auto support = sampler.augment_support();
  REQUIRE(support.has_value());
  const mh::ViewBuilder builder(g, chain, *support);
  const mh::ViewState all = mh::ViewState::of(chain, mh::MhMasks::keep_all(chain.num_edges(), chain.num_nodes()));
  std::vector<int64_t> dropped;
  for (auto e = chain.offsets()[0]; e < chain.offsets()[6]; e += 2) dropped.push_back(e);  // every other entry
  const mh::ViewState state = mh::ViewState::of(chain, drop(chain, dropped, {1}));
  auto ws = sampler.make_workspace();
  for (const auto& spec : sampler.plan_epoch(1)) {
    MiniBatch b = sampler.sample(spec, *ws);
    builder.attach(b, all, state);
    REQUIRE(b.views.size() == 2);
    REQUIRE(b.views[0].blocks.size() == b.blocks.size());
    for (std::size_t l = 0; l < b.blocks.size(); ++l) {
      CHECK(vec(b.views[0].blocks[l].indices) == vec(b.blocks[l].indices));  // everything kept
      CHECK(vec(b.views[0].blocks[l].weights) == vec(b.blocks[l].weights));
      CHECK(b.views[1].blocks[l].num_dst == b.blocks[l].num_dst);
      CHECK(b.views[1].blocks[l].num_src == b.blocks[l].num_src);
      CHECK(b.views[1].blocks[l].num_edges() <= b.blocks[l].num_edges());
    }
    CHECK(b.node_weights.size() == b.targets.size());
    CHECK(b.node_weights[0] == 1.0f / static_cast<float>(b.targets.size()));
    CHECK(b.views[1].row_factors.size() == static_cast<std::size_t>(b.blocks[0].num_src));
    // Entries kept in the new view: their weight is the original's times sqrt(d_u d_v / (d'_u d'_v)),
    // d = the full graph's in-degree + 1 (its self-loop on 4 counted).
    const auto entries = builder.chain_entries(b);
    for (std::size_t l = 0; l < b.blocks.size(); ++l) {
      const gnnpipe::graph::Block& block = b.blocks[l];
      const gnnpipe::graph::Block& view = b.views[1].blocks[l];
      std::size_t out = 0;
      for (NodeId i = 0; i < block.num_dst; ++i) {
        for (auto e = block.offsets[static_cast<std::size_t>(i)]; e < block.offsets[static_cast<std::size_t>(i) + 1]; ++e) {
          const int64_t c = entries[l][static_cast<std::size_t>(e)];
          if (c >= 0 && state.masks.edge_keep[static_cast<std::size_t>(c)] == 0) continue;
          const auto degree = [&](NodeId x) { return static_cast<double>(g.in_degree(x)) + 1.0; };
          const auto kept = [&](NodeId x) { return degree(x) - state.dropped_in[static_cast<std::size_t>(x)]; };
          const NodeId u = b.input_nodes[static_cast<std::size_t>(block.indices[static_cast<std::size_t>(e)])];
          const NodeId w = b.input_nodes[static_cast<std::size_t>(i)];
          REQUIRE(out < view.weights.size());
          CHECK(view.weights[out] == Approx(block.weights[static_cast<std::size_t>(e)] *
                                            std::sqrt(degree(u) * degree(w) / (kept(u) * kept(w))))
                                         .epsilon(1e-6));
          ++out;
        }
      }
      CHECK(out == view.weights.size());
    }
  }
}
