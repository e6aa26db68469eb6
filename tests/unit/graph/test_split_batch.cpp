#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/loss.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"
#include "model_helpers.hpp"
#include "sampler_helpers.hpp"

using namespace gnnpipe;
using graph::Block;
using graph::BlockNorm;
using graph::EdgeOffset;
using graph::HostArray;
using graph::MiniBatch;
using graph::NodeId;
using test::vec;

namespace {

Block make_block(NodeId num_dst, NodeId num_src, std::vector<EdgeOffset> offsets, std::vector<NodeId> indices,
                 std::vector<float> weights) {
  return Block::from_csr(num_dst, num_src, HostArray<EdgeOffset>(std::move(offsets)),
                         HostArray<NodeId>(std::move(indices)), HostArray<float>(std::move(weights)));
}

// A two-layer neighbor-style batch by hand. Targets 0, 1, 2 (global 100, 101, 102); every node's
// row is the same in each block that has it, rows sorted by local id, as the sampler makes them:
//   0 <- {1 (.1), 3 (.2)}   1 <- {2 (.3), 3 (.4)}   2 <- {4 (.5)}       (blocks[1], the last)
//   3 <- {0 (.6), 5 (.7)}   4 <- {6 (.8)}                             (and blocks[0] adds these)
MiniBatch tiny_layerwise_batch() {
  MiniBatch b;
  b.epoch = 3;
  b.index = 5;
  b.blocks.push_back(make_block(5, 7, {0, 2, 4, 5, 7, 8}, {1, 3, 2, 3, 4, 0, 5, 6},
                                {.1f, .2f, .3f, .4f, .5f, .6f, .7f, .8f}));
  b.blocks.push_back(make_block(3, 5, {0, 2, 4, 5}, {1, 3, 2, 3, 4}, {.1f, .2f, .3f, .4f, .5f}));
  b.input_nodes = HostArray<NodeId>(std::vector<NodeId>{100, 101, 102, 103, 104, 105, 106});
  b.targets = HostArray<NodeId>(std::vector<NodeId>{100, 101, 102});
  b.loss_rows = HostArray<int32_t>(std::vector<int32_t>{0, 1, 2});
  b.compute_shape(16, 2);
  return b;
}

// One shared square block over global 20..25 (a path 5 -> 4 -> 3 -> 2 -> 1 <-> 0), loss rows 1 and 3
// with weights (GraphSAINT-style):
//   0 <- {1 (1)}   1 <- {0 (.5), 2 (.25)}   2 <- {3 (2)}   3 <- {4 (4)}   4 <- {5 (8)}   5 <- {}
MiniBatch tiny_shared_batch() {
  MiniBatch b;
  b.epoch = 1;
  b.index = 2;
  b.blocks.push_back(make_block(6, 6, {0, 1, 3, 4, 5, 6, 6}, {1, 0, 2, 3, 4, 5}, {1, .5f, .25f, 2, 4, 8}));
  b.input_nodes = HostArray<NodeId>(std::vector<NodeId>{20, 21, 22, 23, 24, 25});
  b.targets = b.input_nodes;
  b.loss_rows = HostArray<int32_t>(std::vector<int32_t>{1, 3});
  b.loss_weights = HostArray<float>(std::vector<float>{.25f, .75f});
  b.compute_shape(8, 2);
  return b;
}

// The transpose of `b` is the transpose of its forward CSR: every forward edge once, rows sorted by
// destination, t_edges pointing at an edge with that source and destination.
void check_transpose(const Block& b) {
  REQUIRE(b.t_offsets.size() == static_cast<std::size_t>(b.num_src) + 1);
  REQUIRE(b.t_offsets[static_cast<std::size_t>(b.num_src)] == b.num_edges());
  std::vector<int> seen(static_cast<std::size_t>(b.num_edges()), 0);
  std::vector<NodeId> dst_of(static_cast<std::size_t>(b.num_edges()));
  for (NodeId v = 0; v < b.num_dst; ++v) {
    for (auto e = b.offsets[static_cast<std::size_t>(v)]; e < b.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
      dst_of[static_cast<std::size_t>(e)] = v;
    }
  }
  for (NodeId u = 0; u < b.num_src; ++u) {
    for (auto k = b.t_offsets[static_cast<std::size_t>(u)]; k < b.t_offsets[static_cast<std::size_t>(u) + 1]; ++k) {
      const auto ks = static_cast<std::size_t>(k);
      const auto e = static_cast<std::size_t>(b.t_edges[ks]);
      REQUIRE(e < seen.size());
      ++seen[e];
      CHECK(b.indices[e] == u);
      CHECK(dst_of[e] == b.t_indices[ks]);
      if (k > b.t_offsets[static_cast<std::size_t>(u)]) CHECK(b.t_indices[ks - 1] <= b.t_indices[ks]);
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

std::vector<float> weights_of(const Block& b) { return vec(b.weights); }

bool shared_form(const MiniBatch& b) { return b.blocks.size() == 1 && b.blocks[0].num_dst == b.blocks[0].num_src; }

// A row of `b` as (global source id, weight bits) pairs, in edge order.
std::vector<std::pair<NodeId, uint32_t>> global_row(const MiniBatch& batch, const Block& b, NodeId v) {
  std::vector<std::pair<NodeId, uint32_t>> row;
  for (auto e = b.offsets[static_cast<std::size_t>(v)]; e < b.offsets[static_cast<std::size_t>(v) + 1]; ++e) {
    const auto es = static_cast<std::size_t>(e);
    row.emplace_back(batch.input_nodes[static_cast<std::size_t>(b.indices[es])],
                     b.weighted() ? std::bit_cast<uint32_t>(b.weights[es]) : 0u);
  }
  return row;
}

std::map<NodeId, NodeId> local_ids(const MiniBatch& b) {
  std::map<NodeId, NodeId> local;
  for (std::size_t i = 0; i < b.input_nodes.size(); ++i) local[b.input_nodes[i]] = static_cast<NodeId>(i);
  return local;
}

// Everything split_batch promises about `micros`, the split of `parent` into `parts`, checked
// against sets computed here from the parent's rows.
void check_split(const MiniBatch& parent, std::size_t num_layers, int parts, const std::vector<MiniBatch>& micros) {
  const std::size_t n = parent.loss_rows.size();
  REQUIRE(micros.size() == std::min<std::size_t>(static_cast<std::size_t>(parts), n));
  const auto parent_local = local_ids(parent);
  const bool shared = shared_form(parent);
  std::vector<NodeId> loss_targets;  // global ids, in split order
  std::vector<float> loss_weights;
  std::size_t smallest = n, largest = 0;
  const auto shapes = graph::split_shapes(parent, num_layers, parts);
  const auto sizes = graph::split_sizes(parent, num_layers, parts);
  REQUIRE(shapes.size() == micros.size());
  REQUIRE(sizes.size() == micros.size());
  for (std::size_t i = 0; i < micros.size(); ++i) {
    const MiniBatch& m = micros[i];
    INFO("micro-batch " << i << " of " << micros.size());
    CHECK(m.epoch == parent.epoch);
    CHECK(m.index == parent.index);
    const auto blocks = m.layer_blocks(num_layers);  // throws when malformed
    CHECK(m.blocks.size() == parent.blocks.size());
    CHECK(m.input_nodes.size() == static_cast<std::size_t>(m.blocks.front().num_src));
    CHECK(m.targets.size() == static_cast<std::size_t>(m.blocks.back().num_dst));
    for (std::size_t t = 0; t < m.targets.size(); ++t) CHECK(m.targets[t] == m.input_nodes[t]);
    for (std::size_t l = 0; l + 1 < m.blocks.size(); ++l) CHECK(m.blocks[l].num_dst == m.blocks[l + 1].num_src);
    for (const Block& b : m.blocks) {
      check_transpose(b);
      CHECK((b.weighted() == parent.blocks.front().weighted() || b.num_edges() == 0));
    }
    CHECK(std::set<NodeId>(m.input_nodes.begin(), m.input_nodes.end()).size() == m.input_nodes.size());
    // The loss: rows 0..m-1, the parent's weights or 1/n.
    for (std::size_t r = 0; r < m.loss_rows.size(); ++r) CHECK(m.loss_rows[r] == static_cast<int32_t>(r));
    REQUIRE(m.loss_weights.size() == m.loss_rows.size());
    for (std::size_t r = 0; r < m.loss_rows.size(); ++r) {
      loss_targets.push_back(m.targets[static_cast<std::size_t>(m.loss_rows[r])]);
      loss_weights.push_back(m.loss_weights[r]);
    }
    smallest = std::min(smallest, m.loss_rows.size());
    largest = std::max(largest, m.loss_rows.size());
    if (!shared) CHECK(m.targets.size() == m.loss_rows.size());
    // Shape: the batch's own, and split_shapes says the same.
    CHECK(m.shape.feature_dim == parent.shape.feature_dim);
    CHECK(m.shape.src_nodes == shapes[i].src_nodes);
    CHECK(m.shape.dst_nodes == shapes[i].dst_nodes);
    CHECK(m.shape.edges == shapes[i].edges);
    CHECK(shapes[i].feature_dim == parent.shape.feature_dim);
    // split_sizes: what the governor sizes a candidate by, equal to the built micro-batch.
    CHECK(sizes[i].shape.edges == m.shape.edges);
    REQUIRE(sizes[i].block_edges.size() == m.blocks.size());
    for (std::size_t b = 0; b < m.blocks.size(); ++b) CHECK(sizes[i].block_edges[b] == m.blocks[b].num_edges());
    CHECK(sizes[i].targets == m.targets.size());
    CHECK(sizes[i].loss_rows == m.loss_rows.size());
    NodeId id = 0;
    CHECK(sizes[i].identity_inputs == std::all_of(m.input_nodes.begin(), m.input_nodes.end(), [&](NodeId v) { return v == id++; }));

    // Rows: the parent's rows (global sources, weight bits, order) where kept; the node sets are
    // the computation tree of the loss targets.
    std::set<NodeId> need(loss_targets.end() - static_cast<std::ptrdiff_t>(m.loss_rows.size()), loss_targets.end());
    if (shared) {
      const Block& pb = parent.blocks[0];
      std::vector<std::set<NodeId>> s{need};  // s[j] = S_{L-j}
      for (std::size_t hop = 0; hop < num_layers; ++hop) {
        std::set<NodeId> next = s.back();
        for (NodeId v : s.back()) {
          for (const auto& [u, w] : global_row(parent, pb, parent_local.at(v))) next.insert(u);
        }
        s.push_back(next);
      }
      const std::set<NodeId>& s0 = s.back();
      const std::set<NodeId>& s1 = s[num_layers - 1];
      CHECK(std::set<NodeId>(m.input_nodes.begin(), m.input_nodes.end()) == s0);
      for (NodeId v = 0; v < m.blocks[0].num_dst; ++v) {
        const NodeId g = m.input_nodes[static_cast<std::size_t>(v)];
        if (s1.count(g)) {
          CHECK(global_row(m, m.blocks[0], v) == global_row(parent, pb, parent_local.at(g)));
        } else {
          CHECK(m.blocks[0].offsets[static_cast<std::size_t>(v)] == m.blocks[0].offsets[static_cast<std::size_t>(v) + 1]);
        }
      }
    } else {
      for (std::size_t l = m.blocks.size(); l-- > 0;) {
        const Block& b = m.blocks[l];
        CHECK(std::set<NodeId>(m.input_nodes.begin(), m.input_nodes.begin() + b.num_dst) == need);
        for (NodeId v = 0; v < b.num_dst; ++v) {
          const NodeId g = m.input_nodes[static_cast<std::size_t>(v)];
          const auto row = global_row(m, b, v);
          CHECK(row == global_row(parent, parent.blocks[l], parent_local.at(g)));
          for (const auto& [u, w] : row) need.insert(u);
        }
        CHECK(std::set<NodeId>(m.input_nodes.begin(), m.input_nodes.begin() + b.num_src) == need);
      }
    }
  }
  // Every parent loss target exactly once, in order; parts differ by at most one row.
  std::vector<NodeId> expected;
  for (int32_t r : parent.loss_rows) expected.push_back(parent.targets[static_cast<std::size_t>(r)]);
  CHECK(loss_targets == expected);
  CHECK(largest - smallest <= 1);
  if (parent.loss_weights.empty()) {
    const auto w = static_cast<float>(1.0 / static_cast<double>(n));
    CHECK(std::all_of(loss_weights.begin(), loss_weights.end(), [&](float x) { return x == w; }));
  } else {
    CHECK(loss_weights == vec(parent.loss_weights));
  }
}

}  // namespace

TEST_CASE("split_batch: a layer-wise batch keeps each target's computation tree, renumbered", "[graph][split]") {
  const MiniBatch parent = tiny_layerwise_batch();
  const auto micros = graph::split_batch(parent, 2, 2);
  REQUIRE(micros.size() == 2);
  // Loss rows {0} and {1, 2}: sizes differ by at most one, the first part is the smaller.
  const MiniBatch& a = micros[0];
  CHECK(a.epoch == 3);
  CHECK(a.index == 5);
  CHECK(vec(a.targets) == std::vector<NodeId>{100});
  CHECK(vec(a.input_nodes) == std::vector<NodeId>{100, 101, 103, 102, 105});
  CHECK(a.blocks[1].num_dst == 1);
  CHECK(a.blocks[1].num_src == 3);
  CHECK(vec(a.blocks[1].offsets) == std::vector<EdgeOffset>{0, 2});
  CHECK(vec(a.blocks[1].indices) == std::vector<NodeId>{1, 2});
  CHECK(weights_of(a.blocks[1]) == std::vector<float>{.1f, .2f});
  CHECK(a.blocks[0].num_dst == 3);
  CHECK(a.blocks[0].num_src == 5);
  CHECK(vec(a.blocks[0].offsets) == std::vector<EdgeOffset>{0, 2, 4, 6});
  // Row of 101 keeps the parent's order {102, 103}, which is {3, 2} here: rows are not re-sorted.
  CHECK(vec(a.blocks[0].indices) == std::vector<NodeId>{1, 2, 3, 2, 0, 4});
  CHECK(weights_of(a.blocks[0]) == std::vector<float>{.1f, .2f, .3f, .4f, .6f, .7f});
  CHECK(vec(a.loss_rows) == std::vector<int32_t>{0});
  CHECK(vec(a.loss_weights) == std::vector<float>{static_cast<float>(1.0 / 3.0)});
  CHECK(a.shape.src_nodes == std::vector<int64_t>{5, 3});
  CHECK(a.shape.dst_nodes == std::vector<int64_t>{3, 1});
  CHECK(a.shape.edges == std::vector<int64_t>{6, 2});
  CHECK(a.shape.feature_dim == 16);

  const MiniBatch& b = micros[1];
  CHECK(vec(b.targets) == std::vector<NodeId>{101, 102});
  CHECK(vec(b.input_nodes) == std::vector<NodeId>{101, 102, 103, 104, 100, 105, 106});
  CHECK(vec(b.blocks[1].offsets) == std::vector<EdgeOffset>{0, 2, 3});
  CHECK(vec(b.blocks[1].indices) == std::vector<NodeId>{1, 2, 3});
  CHECK(weights_of(b.blocks[1]) == std::vector<float>{.3f, .4f, .5f});
  CHECK(b.blocks[1].num_src == 4);
  CHECK(b.blocks[0].num_dst == 4);
  CHECK(b.blocks[0].num_src == 7);
  CHECK(vec(b.blocks[0].offsets) == std::vector<EdgeOffset>{0, 2, 3, 5, 6});
  CHECK(vec(b.blocks[0].indices) == std::vector<NodeId>{1, 2, 3, 4, 5, 6});
  CHECK(weights_of(b.blocks[0]) == std::vector<float>{.3f, .4f, .5f, .6f, .7f, .8f});
  CHECK(vec(b.loss_rows) == std::vector<int32_t>{0, 1});
  CHECK(vec(b.loss_weights) == std::vector<float>(2, static_cast<float>(1.0 / 3.0)));
  // The transpose follows the kept order: source 2 of a's blocks[0] is read by edges 1 (row 0) and 3 (row 1).
  CHECK(vec(a.blocks[0].t_offsets) == std::vector<EdgeOffset>{0, 1, 2, 4, 5, 6});
  CHECK(vec(a.blocks[0].t_indices) == std::vector<NodeId>{2, 0, 0, 1, 1, 2});
  CHECK(vec(a.blocks[0].t_edges) == std::vector<EdgeOffset>{4, 0, 1, 3, 2, 5});
  check_split(parent, 2, 2, micros);
}

TEST_CASE("split_batch: a shared-block batch keeps S_1's rows and empties the rest of S_0", "[graph][split]") {
  const MiniBatch parent = tiny_shared_batch();
  const auto micros = graph::split_batch(parent, 2, 2);
  REQUIRE(micros.size() == 2);
  // Loss node 21: S_2 = {21}, S_1 = {21, 20, 22}, S_0 = S_1 + {23}; 23's row is empty.
  const MiniBatch& a = micros[0];
  CHECK(vec(a.input_nodes) == std::vector<NodeId>{21, 20, 22, 23});
  CHECK(vec(a.targets) == std::vector<NodeId>{21, 20, 22, 23});
  REQUIRE(a.blocks.size() == 1);
  CHECK(a.blocks[0].num_dst == 4);
  CHECK(a.blocks[0].num_src == 4);
  CHECK(vec(a.blocks[0].offsets) == std::vector<EdgeOffset>{0, 2, 3, 4, 4});
  CHECK(vec(a.blocks[0].indices) == std::vector<NodeId>{1, 2, 0, 3});
  CHECK(weights_of(a.blocks[0]) == std::vector<float>{.5f, .25f, 1, 2});
  CHECK(vec(a.loss_rows) == std::vector<int32_t>{0});
  CHECK(vec(a.loss_weights) == std::vector<float>{.25f});
  CHECK(a.shape.src_nodes == std::vector<int64_t>{4, 4});
  CHECK(a.shape.edges == std::vector<int64_t>{4, 4});
  // Loss node 23: S_1 = {23, 24}, S_0 = {23, 24, 25}.
  const MiniBatch& b = micros[1];
  CHECK(vec(b.input_nodes) == std::vector<NodeId>{23, 24, 25});
  CHECK(vec(b.blocks[0].offsets) == std::vector<EdgeOffset>{0, 1, 2, 2});
  CHECK(vec(b.blocks[0].indices) == std::vector<NodeId>{1, 2});
  CHECK(weights_of(b.blocks[0]) == std::vector<float>{4, 8});
  CHECK(vec(b.loss_rows) == std::vector<int32_t>{0});
  CHECK(vec(b.loss_weights) == std::vector<float>{.75f});
  check_split(parent, 2, 2, micros);

  // Three layers reach one hop further; one part keeps the whole loss.
  const auto whole = graph::split_batch(parent, 3, 1);
  REQUIRE(whole.size() == 1);
  CHECK(vec(whole[0].input_nodes) == std::vector<NodeId>{21, 23, 20, 22, 24, 25});
  CHECK(vec(whole[0].loss_rows) == std::vector<int32_t>{0, 1});
  check_split(parent, 3, 1, whole);
}

TEST_CASE("split_batch: parts are clamped to the loss rows, and bad requests are errors", "[graph][split]") {
  const MiniBatch parent = tiny_layerwise_batch();
  CHECK(graph::split_batch(parent, 2, 1000).size() == 3);
  check_split(parent, 2, 1000, graph::split_batch(parent, 2, 1000));
  CHECK(graph::split_shapes(parent, 2, 1000).size() == 3);
  CHECK_THAT(test::error_of([&] { graph::split_batch(parent, 2, 0); }), Catch::Contains("parts must be >= 1, got 0"));
  CHECK_THAT(test::error_of([&] { graph::split_shapes(parent, 2, -1); }), Catch::Contains("parts must be >= 1"));
  CHECK_THAT(test::error_of([&] { graph::split_batch(parent, 3, 2); }),
             Catch::Contains("batch 5: 2 blocks for 3 layers (need one per layer, or one shared square block)"));
  MiniBatch no_loss = tiny_shared_batch();
  no_loss.loss_rows = {};
  no_loss.loss_weights = {};
  CHECK_THAT(test::error_of([&] { graph::split_batch(no_loss, 2, 2); }), Catch::Contains("batch 2 has no loss rows"));
  MiniBatch unordered = tiny_layerwise_batch();
  unordered.loss_rows = HostArray<int32_t>(std::vector<int32_t>{1, 0});
  CHECK_THAT(test::error_of([&] { graph::split_batch(unordered, 2, 2); }), Catch::Contains("not ascending"));
  MiniBatch short_inputs = tiny_layerwise_batch();
  short_inputs.input_nodes = HostArray<NodeId>(std::vector<NodeId>{100, 101});
  CHECK_THAT(test::error_of([&] { graph::split_batch(short_inputs, 2, 2); }), Catch::Contains("2 input nodes"));
}

namespace {

// The first `count` batches of epoch 0.
std::vector<MiniBatch> first_batches(const samplers::Sampler& sampler, std::size_t count) {
  auto ws = sampler.make_workspace();
  std::vector<MiniBatch> out;
  const auto plan = sampler.plan_epoch(0);
  for (std::size_t i = 0; i < std::min(count, plan.size()); ++i) out.push_back(sampler.sample(plan[i], *ws));
  return out;
}

void check_splits_of(const MiniBatch& parent, std::size_t num_layers) {
  if (parent.loss_rows.empty()) return;
  for (int parts : {1, 2, 3, 7, 1000}) {
    INFO("parts " << parts);
    check_split(parent, num_layers, parts, graph::split_batch(parent, num_layers, parts));
  }
}

std::vector<NodeId> every_other(NodeId n) {
  std::vector<NodeId> v;
  for (NodeId i = 0; i < n; i += 2) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("split_batch: micro-batches of neighbor-sampled batches are well-formed and cover the loss once",
          "[graph][split]") {
  for (bool directed : {false, true}) {
    // The directed graph keeps repeated edges and self-loops: rows with duplicate sources.
    const graph::CsrGraph g = test::random_graph(150, 700, 3, directed);
    for (const std::vector<int>& fanouts : std::vector<std::vector<int>>{{4, 3}, {2, 2, 2}, {-1, 3}, {5}})
    for (bool replace : {false, true})
    for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn, BlockNorm::kSelfLoops, BlockNorm::kNone}) {
      INFO("directed " << directed << " fanouts " << fanouts.size() << " first " << fanouts[0] << " replace "
                       << replace << " norm " << static_cast<int>(norm));
      samplers::NeighborSampler sampler(
          g, test::all_nodes(150), {.fanouts = fanouts, .batch_size = 13, .replace = replace, .seed = 4, .norm = norm});
      for (const MiniBatch& b : first_batches(sampler, 2)) check_splits_of(b, fanouts.size());
    }
  }
}

TEST_CASE("split_batch: micro-batches of GraphSAINT, Cluster-GCN and full batches are well-formed", "[graph][split]") {
  const graph::CsrGraph g = test::random_graph(120, 500, 5);
  for (samplers::SaintMode mode : {samplers::SaintMode::kNode, samplers::SaintMode::kEdge, samplers::SaintMode::kRandomWalk})
  for (bool normalize : {true, false})
  for (std::size_t layers : {1u, 2u, 3u}) {
    INFO("saint mode " << static_cast<int>(mode) << " normalize " << normalize << " layers " << layers);
    samplers::SaintSampler sampler(g, every_other(120),
                                   {.mode = mode, .budget = 25, .norm_samples = 50, .normalize = normalize, .seed = 6,
                                    .norm = layers == 2 ? BlockNorm::kGcn : BlockNorm::kMean, .num_layers = layers});
    for (const MiniBatch& b : first_batches(sampler, 2)) check_splits_of(b, layers);
  }
  for (BlockNorm norm : {BlockNorm::kMean, BlockNorm::kGcn, BlockNorm::kSelfLoops}) {
    INFO("cluster, norm " << static_cast<int>(norm));
    samplers::ClusterSampler sampler(g, every_other(120), {.num_parts = 6, .parts_per_batch = 2, .seed = 7, .norm = norm});
    for (const MiniBatch& b : first_batches(sampler, 2)) check_splits_of(b, 2);
  }
  for (std::size_t layers : {1u, 2u, 3u}) {
    INFO("full batch, layers " << layers);
    samplers::FullBatchSampler sampler(g, every_other(120), BlockNorm::kGcn, layers);
    for (const MiniBatch& b : first_batches(sampler, 1)) check_splits_of(b, layers);
  }
}

namespace {

constexpr int64_t kFeatures = 6;
constexpr int64_t kClasses = 4;

// Random features and labels for every node of the graph, looked up by global id.
struct NodeData {
  models::Matrix<double> features;
  std::vector<int32_t> labels;
};

NodeData node_data(NodeId n, uint64_t seed) {
  core::Rng rng(seed, {});
  NodeData d{test::random_matrix(rng, n, kFeatures), {}};
  for (NodeId v = 0; v < n; ++v) d.labels.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(kClasses))));
  return d;
}

struct Tolerance {
  double loss;
  double grad;
};

// x with the rows of `ids` (global) gathered from `features`.
models::Matrix<double> gather(const models::Matrix<double>& features, std::span<const NodeId> ids) {
  models::Matrix<double> x(static_cast<int64_t>(ids.size()), features.cols());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto row = features.cview().row(ids[i]);
    std::copy(row.begin(), row.end(), x.view().row(static_cast<int64_t>(i)).begin());
  }
  return x;
}

// The aggregation (models' spmm) of every kept row of every micro-batch block, over inputs looked
// up by global id, is bitwise the parent's row: same edges, weights and order.
void check_aggregation_bitwise(const MiniBatch& parent, const std::vector<MiniBatch>& micros,
                               const models::Matrix<double>& features) {
  const auto parent_local = local_ids(parent);
  for (std::size_t l = 0; l < parent.blocks.size(); ++l) {
    const Block& pb = parent.blocks[l];
    const auto px = gather(features, parent.input_nodes.span().first(static_cast<std::size_t>(pb.num_src)));
    models::Matrix<double> py(pb.num_dst, features.cols());
    models::cpu::spmm<double>(pb, px.cview(), py.view());
    for (const MiniBatch& m : micros) {
      const Block& mb = m.blocks[l];
      const auto mx = gather(features, m.input_nodes.span().first(static_cast<std::size_t>(mb.num_src)));
      models::Matrix<double> my(mb.num_dst, features.cols());
      models::cpu::spmm<double>(mb, mx.cview(), my.view());
      std::size_t rows = 0, equal = 0;
      for (NodeId v = 0; v < mb.num_dst; ++v) {
        if (mb.offsets[static_cast<std::size_t>(v)] == mb.offsets[static_cast<std::size_t>(v) + 1]) continue;  // S_0 \ S_1
        const auto mine = my.cview().row(v);
        const auto theirs = py.cview().row(parent_local.at(m.input_nodes[static_cast<std::size_t>(v)]));
        ++rows;
        equal += std::memcmp(mine.data(), theirs.data(), mine.size_bytes()) == 0 ? 1 : 0;
      }
      CHECK(equal == rows);
    }
  }
}

struct StepResult {
  double loss = 0;
  models::Matrix<double> logits;
};

// forward + loss + backward of `b` (gradients accumulate into the model's).
StepResult train_step(models::GnnModel<double>& model, const MiniBatch& b, const NodeData& data) {
  const auto blocks = b.layer_blocks(model.num_layers());
  const models::Matrix<double> x = gather(data.features, b.input_nodes.span());
  std::vector<int32_t> labels;
  for (NodeId t : b.targets) labels.push_back(data.labels[static_cast<std::size_t>(t)]);
  const auto key = core::rng_key(9, {static_cast<uint64_t>(b.epoch), static_cast<uint64_t>(b.index)});
  const auto logits = model.forward(blocks, x.cview(), b.input_nodes.span(), true, key);
  StepResult r{0, models::Matrix<double>(logits.rows, logits.cols, std::vector<double>(logits.data, logits.data + logits.size()))};
  models::Matrix<double> dlogits(logits.rows, logits.cols);
  r.loss = models::cpu::log_softmax_nll<double>(logits, labels, b.loss_rows.span(), b.loss_weights.span(), dlogits.view());
  model.backward(blocks, dlogits.cview());
  return r;
}

// The parent step against the sum of its micro-batches' steps, for k = 2, 3 and 7. The loss rows'
// logits are compared to 1e-14 of the largest logit, not bitwise: OpenBLAS's gemm does not give a
// row the same bits at every row count and offset (measured: dgemm of a row subset differs from
// the full product in some rows whenever K >= 8), so the dense transforms of a smaller batch may
// round differently even though every aggregation is bitwise the parent's (checked above).
void check_exact_split(models::GnnModel<double>& model, const MiniBatch& parent, const NodeData& data, Tolerance tol) {
  const std::size_t layers = model.num_layers();
  model.params().zero_grad();
  const StepResult whole = train_step(model, parent, data);
  const std::vector<double> grads(model.params().grads().begin(), model.params().grads().end());
  double scale = 0;
  for (double g : grads) scale = std::max(scale, std::abs(g));
  REQUIRE(scale > 0);
  double logit_scale = 0;
  for (double v : whole.logits.flat()) logit_scale = std::max(logit_scale, std::abs(v));
  std::map<NodeId, int64_t> parent_row;
  for (std::size_t i = 0; i < parent.targets.size(); ++i) parent_row[parent.targets[i]] = static_cast<int64_t>(i);

  for (int k : {2, 3, 7}) {
    INFO("k = " << k << ", " << parent.loss_rows.size() << " loss rows");
    const auto micros = graph::split_batch(parent, layers, k);
    check_aggregation_bitwise(parent, micros, data.features);
    model.params().zero_grad();
    double loss = 0, logit_error = 0;
    std::size_t bitwise = 0, compared = 0;
    for (const MiniBatch& m : micros) {
      const StepResult part = train_step(model, m, data);
      loss += part.loss;
      for (int32_t r : m.loss_rows) {
        const auto mine = part.logits.cview().row(r);
        const auto theirs = whole.logits.cview().row(parent_row.at(m.targets[static_cast<std::size_t>(r)]));
        ++compared;
        bitwise += std::memcmp(mine.data(), theirs.data(), mine.size_bytes()) == 0 ? 1 : 0;
        for (std::size_t c = 0; c < mine.size(); ++c) logit_error = std::max(logit_error, std::abs(mine[c] - theirs[c]));
      }
    }
    INFO(bitwise << " of " << compared << " loss rows' logits bitwise equal, largest difference " << logit_error
                 << " of logits up to " << logit_scale);
    CHECK(compared == parent.loss_rows.size());
    CHECK(logit_error <= 1e-14 * logit_scale);
    CHECK(std::abs(loss - whole.loss) <= tol.loss * std::abs(whole.loss));
    double worst = 0;
    for (std::size_t i = 0; i < grads.size(); ++i) worst = std::max(worst, std::abs(model.params().grads()[i] - grads[i]));
    INFO("largest gradient difference " << worst << " of gradients up to " << scale);
    CHECK(worst <= tol.grad * scale);
  }
}

models::ModelOptions model_options(models::ModelType type, int layers) {
  models::ModelOptions o;
  o.type = type;
  o.layers = layers;
  o.hidden = 8;
  o.dropout = 0.3;  // masks keyed by global node id: a node draws the same bits in every micro-batch
  o.heads = 2;
  o.attention_dropout = o.type == models::ModelType::kGat ? 0.2 : 0.0;  // keyed by (global dst, src, head)
  o.activation = layers == 3 ? models::Activation::kElu : models::Activation::kRelu;
  return o;
}

BlockNorm norm_for(models::ModelType type) {
  return type == models::ModelType::kGcn ? BlockNorm::kGcn
         : type == models::ModelType::kSage ? BlockNorm::kMean
                                            : BlockNorm::kSelfLoops;
}

}  // namespace

TEST_CASE("split_batch: micro-batches give the parent's loss, gradient and logits (gcn, sage, gat)",
          "[graph][split][models]") {
  constexpr NodeId kNodes = 140;
  const graph::CsrGraph g = test::random_graph(kNodes, 700, 8);
  const NodeData data = node_data(kNodes, 10);
  std::vector<NodeId> train;  // 64 nodes: the mean's 1/64 is exact in float
  for (NodeId v = 0; v < 128; v += 2) train.push_back(v);
  const Tolerance exact{1e-12, 1e-10};
  for (models::ModelType type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat})
  for (int layers : {2, 3}) {
    INFO(to_string(type) << ", " << layers << " layers");
    models::GnnModel<double> model(model_options(type, layers), kFeatures, kClasses, 12);
    const BlockNorm norm = norm_for(type);
    {
      INFO("neighbor sampler, 32 seeds");
      samplers::NeighborSampler sampler(g, test::all_nodes(kNodes),
                                        {.fanouts = std::vector<int>(static_cast<std::size_t>(layers), 4),
                                         .batch_size = 32, .seed = 13, .norm = norm});
      check_exact_split(model, first_batches(sampler, 1).front(), data, exact);
    }
    {
      INFO("GraphSAINT random walks (weighted loss)");
      samplers::SaintSampler sampler(g, train, {.budget = 30, .norm_samples = 40, .seed = 14, .norm = norm,
                                                .num_layers = static_cast<std::size_t>(layers)});
      const MiniBatch b = std::move(first_batches(sampler, 1).front());
      REQUIRE(b.loss_rows.size() >= 7);
      check_exact_split(model, b, data, exact);
    }
    {
      INFO("full batch");
      samplers::FullBatchSampler sampler(g, train, norm, static_cast<std::size_t>(layers));
      check_exact_split(model, first_batches(sampler, 1).front(), data, exact);
    }
  }
}

TEST_CASE("split_batch: a mean over a count that is not a power of two costs float(1/n) for 1/n",
          "[graph][split][models]") {
  // 1/12 is not a float: each micro-batch weighs its rows by float(1/12), so the sum differs from the
  // parent's mean by at most 2^-24 relative (plus summation order); the logits are unaffected.
  constexpr NodeId kNodes = 100;
  const graph::CsrGraph g = test::random_graph(kNodes, 400, 15);
  const NodeData data = node_data(kNodes, 16);
  models::GnnModel<double> model(model_options(models::ModelType::kSage, 2), kFeatures, kClasses, 17);
  samplers::NeighborSampler sampler(g, test::all_nodes(kNodes), {.fanouts = {5, 5}, .batch_size = 12, .seed = 18});
  check_exact_split(model, first_batches(sampler, 1).front(), data, {1e-7, 1e-7});
}
