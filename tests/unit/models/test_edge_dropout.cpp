// GAT attention dropout and the model-level dropout properties (feature dropout: test_dropout.cpp).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <tuple>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "dropout_reference.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using models::Matrix;
using namespace test::dropout_reference;

// --- GAT attention dropout: keyed by (global destination, global source, head) -------------------

namespace {

// (global dst, global src, head) -> mask bit of every edge of `block` (local ids -> global `ids`).
using EdgeBits = std::map<std::tuple<NodeId, NodeId, int64_t>, uint8_t>;

EdgeBits edge_bits(const graph::Block& block, const Ids& ids, const std::vector<uint8_t>& mask, int64_t heads) {
  EdgeBits bits;
  for (NodeId v = 0; v < block.num_dst; ++v) {
    for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
      const NodeId u = block.indices[e];
      for (int64_t h = 0; h < heads; ++h) {
        bits[{ids[static_cast<std::size_t>(v)], ids[static_cast<std::size_t>(u)], h}] = bit_of(mask, heads, e, h);
      }
    }
  }
  return bits;
}

std::vector<uint8_t> edge_mask(const graph::Block& block, const Ids& ids, core::RngKey key, float p, int64_t heads) {
  Matrix<float> alpha(block.num_edges(), heads);
  alpha.fill(0.5f);
  Matrix<float> y(block.num_edges(), heads);
  std::vector<uint8_t> mask(mask_bytes(block.num_edges(), heads), 7);
  models::cpu::edge_dropout_forward<float>(key, p, block, ids, alpha.view(), y.view(), mask);
  return mask;
}

// The block with every row's edges in reverse order (Block::from_csr would sort them back).
graph::Block reversed_rows(const graph::Block& b) {
  std::vector<NodeId> indices(b.indices.begin(), b.indices.end());
  for (NodeId v = 0; v < b.num_dst; ++v) {
    std::reverse(indices.begin() + b.offsets[v], indices.begin() + b.offsets[v + 1]);
  }
  graph::Block r;
  r.num_dst = b.num_dst;
  r.num_src = b.num_src;
  r.offsets = b.offsets;
  r.indices = graph::HostArray<NodeId>(std::move(indices));
  return r;
}

// A renumbering of a block's local ids that keeps destinations a prefix: destinations are permuted
// among themselves and so are the other sources. new_of[old] is the new local id.
Ids prefix_preserving_permutation(core::Rng& rng, NodeId num_dst, NodeId num_src) {
  Ids new_of(static_cast<std::size_t>(num_src));
  std::iota(new_of.begin(), new_of.end(), 0);
  auto shuffle = [&](NodeId first, NodeId last) {
    for (NodeId i = last - 1; i > first; --i) {
      std::swap(new_of[static_cast<std::size_t>(i)],
                new_of[static_cast<std::size_t>(first +
                                                static_cast<NodeId>(rng.below(static_cast<uint64_t>(i - first + 1))))]);
    }
  };
  shuffle(0, num_dst);
  shuffle(num_dst, num_src);
  return new_of;
}

// `b` with local ids renumbered by new_of (edges and weights carried along).
graph::Block renumbered(const graph::Block& b, const Ids& new_of) {
  std::vector<std::vector<std::pair<NodeId, float>>> rows(static_cast<std::size_t>(b.num_dst));
  for (NodeId v = 0; v < b.num_dst; ++v) {
    for (int64_t e = b.offsets[v]; e < b.offsets[v + 1]; ++e) {
      rows[static_cast<std::size_t>(new_of[static_cast<std::size_t>(v)])].emplace_back(
          new_of[static_cast<std::size_t>(b.indices[e])], b.weighted() ? b.weights[static_cast<std::size_t>(e)] : 1.0f);
    }
  }
  std::vector<graph::EdgeOffset> offsets{0};
  std::vector<NodeId> indices;
  std::vector<float> weights;
  for (const auto& row : rows) {
    for (const auto& [u, w] : row) {
      indices.push_back(u);
      if (b.weighted()) weights.push_back(w);
    }
    offsets.push_back(static_cast<graph::EdgeOffset>(indices.size()));
  }
  return graph::Block::from_csr(b.num_dst, b.num_src, graph::HostArray<graph::EdgeOffset>(std::move(offsets)),
                                graph::HostArray<NodeId>(std::move(indices)),
                                graph::HostArray<float>(std::move(weights)));
}

// ids'[new_of[i]] = ids[i].
Ids renumbered_ids(const Ids& ids, const Ids& new_of) {
  Ids out(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) out[static_cast<std::size_t>(new_of[i])] = ids[i];
  return out;
}

}  // namespace

TEST_CASE("edge dropout: bit (e, h) follows the draw at id(src) * H + h of key.with(id(dst)), rate 1 - p",
          "[models][dropout][gat]") {
  core::Rng rng(21, {1});
  const graph::Block block = test::random_block(rng, 300, 700, 40, false);
  const Ids ids = distinct_ids(rng, 100'000, 700);
  const core::RngKey key = core::rng_key(7, {1, 2, 3});
  for (const auto& [heads, p] : {std::pair<int64_t, float>{1, 0.25f}, {3, 0.6f}, {8, 0.5f}, {11, 0.25f}, {11, 0.6f}}) {
    INFO("heads " << heads << ", p " << p);
    Matrix<float> alpha(block.num_edges(), heads);
    alpha.fill(0.5f);
    Matrix<float> y(block.num_edges(), heads);
    std::vector<uint8_t> mask(mask_bytes(block.num_edges(), heads));
    models::cpu::edge_dropout_forward<float>(key, p, block, ids, alpha.view(), y.view(), mask);
    bool consistent = true;
    int64_t kept = 0;
    for (NodeId v = 0; v < block.num_dst; ++v) {
      const core::RngKey dst_key = key.with(static_cast<uint64_t>(ids[static_cast<std::size_t>(v)]));
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        const auto src = static_cast<uint64_t>(ids[static_cast<std::size_t>(block.indices[e])]);
        for (int64_t h = 0; h < heads; ++h) {
          const bool expected = reference_keep(dst_key, src * heads + h, static_cast<double>(p));
          const int64_t i = e * heads + h;
          consistent = consistent && bit_of(mask, heads, e, h) == expected &&
                       y.data()[i] == (expected ? 0.5f * (1.0f / (1.0f - p)) : 0.0f);
          kept += expected;
        }
      }
    }
    CHECK(consistent);
    CHECK(padding_clear(mask, block.num_edges(), heads));
    const double n = static_cast<double>(alpha.size());
    const double q = 1.0 - static_cast<double>(p);
    CHECK(std::abs(static_cast<double>(kept) - q * n) < 7 * std::sqrt(n * q * (1 - q)));
    // p = 0 is the identity: every bit set but the padding.
    std::vector<uint8_t> all(mask.size(), 7);
    models::cpu::edge_dropout_forward<float>(key, 0.0f, block, ids, alpha.view(), y.view(), all);
    bool all_set = padding_clear(all, block.num_edges(), heads);
    for (int64_t e = 0; e < block.num_edges(); ++e) {
      for (int64_t h = 0; h < heads; ++h) all_set = all_set && bit_of(all, heads, e, h);
    }
    CHECK(all_set);
    CHECK(test::values_of(y.cview()) == test::values_of(alpha.cview()));
  }
}

TEST_CASE("edge dropout: reordering a row's edges or renumbering the nodes keeps each (dst, src, head) bit",
          "[models][dropout][gat]") {
  core::Rng rng(22, {1});
  const core::RngKey key = core::rng_key(3, {9});
  for (const int64_t heads : {1, 2, 5}) {
    INFO("heads " << heads);
    const graph::Block block = test::random_block(rng, 80, 200, 12, false);
    const Ids ids = distinct_ids(rng, 50'000, 200);
    const EdgeBits bits = edge_bits(block, ids, edge_mask(block, ids, key, 0.5f, heads), heads);
    const graph::Block reversed = reversed_rows(block);
    CHECK(edge_bits(reversed, ids, edge_mask(reversed, ids, key, 0.5f, heads), heads) == bits);
    const Ids new_of = prefix_preserving_permutation(rng, block.num_dst, block.num_src);
    const graph::Block moved = renumbered(block, new_of);
    const Ids moved_ids = renumbered_ids(ids, new_of);
    CHECK(edge_bits(moved, moved_ids, edge_mask(moved, moved_ids, key, 0.5f, heads), heads) == bits);
    // A different key draws different bits.
    CHECK(edge_bits(block, ids, edge_mask(block, ids, key.with(1), 0.5f, heads), heads) != bits);
  }
}

TEST_CASE("edge dropout: an edge sampled twice shares its mask bits, and the backward is dropout_backward",
          "[models][dropout][gat]") {
  // dst 0 <- {1, 1, 2}, dst 1 <- {0, 1, 1}: (1 -> 0) and (1 -> 1) appear twice.
  const graph::Block block = graph::Block::from_csr(
      2, 3, graph::HostArray<graph::EdgeOffset>(std::vector<graph::EdgeOffset>{0, 3, 6}),
      graph::HostArray<NodeId>(std::vector<NodeId>{1, 1, 2, 0, 1, 1}), graph::HostArray<float>());
  const Ids ids{40, 7, 1000};
  const int64_t heads = 16;
  for (uint64_t k = 0; k < 8; ++k) {
    const auto mask = edge_mask(block, ids, core::rng_key(k, {}), 0.5f, heads);
    CHECK(row_of(mask, heads, 0) == row_of(mask, heads, 1));
    CHECK(row_of(mask, heads, 4) == row_of(mask, heads, 5));
  }
  // Finite differences through forward (fixed mask) and dropout_backward.
  core::Rng rng(5, {5});
  Matrix<double> alpha = test::random_matrix(rng, 6, 3);
  const Matrix<double> r = test::random_matrix(rng, 6, 3);
  Matrix<double> y(6, 3);
  std::vector<uint8_t> mask(mask_bytes(6, 3));
  auto loss = [&] {
    models::cpu::edge_dropout_forward<double>(core::rng_key(1, {1}), 0.4, block, ids, alpha.view(), y.view(), mask);
    return test::dot(y.view(), r.view());
  };
  loss();
  Matrix<double> dalpha(6, 3);
  models::cpu::dropout_backward<double>(mask, 0.4, r.view(), dalpha.view());
  CHECK(test::check_gradient(loss, alpha.flat(), dalpha.flat()).max_error < 1e-6);
}

TEST_CASE("edge dropout: bad shapes and row ids are refused", "[models][dropout][gat][errors]") {
  const graph::Block block = test::tiny_block(false);  // 3 destinations, 4 sources, 4 edges
  Matrix<double> alpha(4, 2);
  std::vector<uint8_t> mask(mask_bytes(4, 2));
  const Ids ids{1, 2, 3, 4}, short_ids{1, 2, 3};
  CHECK(test::error_of([&] {
          models::cpu::edge_dropout_forward<double>(core::RngKey{}, 0.5, block, short_ids, alpha.view(), alpha.view(),
                                                    mask);
        }).find("3 row ids for 4 rows") != std::string::npos);
  Matrix<double> wrong(3, 2);
  CHECK(test::error_of([&] {
          models::cpu::edge_dropout_forward<double>(core::RngKey{}, 0.5, block, ids, wrong.view(), wrong.view(), mask);
        }).find("alpha (E x H)") != std::string::npos);
  std::vector<uint8_t> short_mask(3);
  CHECK(test::error_of([&] {
          models::cpu::edge_dropout_forward<double>(core::RngKey{}, 0.5, block, ids, alpha.view(), alpha.view(),
                                                    short_mask);
        }).find("mask of 3 bytes for alpha [4 x 2] (needs 4)") != std::string::npos);
}

// --- the model: masks follow the nodes, so a renumbered batch is the same computation --------------

TEST_CASE("a model's training forward and gradients do not depend on the batch's local numbering, dropout included",
          "[models][dropout][layers]") {
  // A 2-layer neighbor-style batch: block 0 is 60 destinations of 150 sources, block 1 20 of those
  // 60; global ids random. Renumbering the local ids (destinations stay a prefix) and permuting the
  // features and ids along must give the same logits per global node and the same parameter
  // gradients, up to summation order: the micro-batches of a split batch rely on it (docs/DESIGN.md §4).
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kSage, models::ModelType::kGat}) {
    INFO(models::to_string(type));
    core::Rng rng(31, {static_cast<uint64_t>(type)});
    const bool weighted = type != models::ModelType::kGat;
    const graph::Block b0 = test::random_block(rng, 60, 150, 8, weighted);
    const graph::Block b1 = test::random_block(rng, 20, 60, 8, weighted);
    const Ids ids = distinct_ids(rng, 1'000'000, 150);
    const Matrix<double> x = test::random_matrix(rng, 150, 6);
    const Matrix<double> r = test::random_matrix(rng, 20, 3);
    models::ModelOptions o;
    o.type = type;
    o.layers = 2;
    o.hidden = 8;
    o.heads = 2;
    o.dropout = 0.5;
    o.attention_dropout = 0.3;
    models::GnnModel<double> model(o, 6, 3, 17);
    const core::RngKey key = core::rng_key(2, {4, 9});

    // The renumbered batch: new_of maps old local ids to new ones, keeping [0, 20), [20, 60) and
    // [60, 150) in place as sets, so each block's destinations stay a prefix of its sources.
    Ids new_of(150);
    std::iota(new_of.begin(), new_of.end(), 0);
    for (const auto& [first, last] : {std::pair{0, 20}, std::pair{20, 60}, std::pair{60, 150}}) {
      for (int i = last - 1; i > first; --i) {
        std::swap(new_of[static_cast<std::size_t>(i)],
                  new_of[static_cast<std::size_t>(first +
                                                  static_cast<int>(rng.below(static_cast<uint64_t>(i - first + 1))))]);
      }
    }
    const graph::Block m0 = renumbered(b0, new_of);
    const graph::Block m1 = renumbered(b1, Ids(new_of.begin(), new_of.begin() + 60));
    const Ids moved_ids = renumbered_ids(ids, new_of);
    Matrix<double> moved_x(150, 6);
    Matrix<double> moved_r(20, 3);
    for (std::size_t i = 0; i < 150; ++i) {
      const auto to = static_cast<int64_t>(new_of[i]);
      for (int64_t c = 0; c < 6; ++c) moved_x(to, c) = x(static_cast<int64_t>(i), c);
      if (i < 20) {
        for (int64_t c = 0; c < 3; ++c) moved_r(to, c) = r(static_cast<int64_t>(i), c);
      }
    }

    auto run = [&](const graph::Block& a, const graph::Block& b, const Matrix<double>& features, const Ids& row_ids,
                   const Matrix<double>& dlogits) {
      const std::vector<const graph::Block*> blocks{&a, &b};
      const auto logits = model.forward(blocks, features.cview(), row_ids, true, key);
      Matrix<double> out(logits.rows, logits.cols, std::vector<double>(logits.data, logits.data + logits.size()));
      model.params().zero_grad();
      model.backward(blocks, dlogits.cview());
      return std::pair{std::move(out),
                       std::vector<double>(model.params().grads().begin(), model.params().grads().end())};
    };
    const auto [logits, grads] = run(b0, b1, x, ids, r);
    const auto [moved_logits, moved_grads] = run(m0, m1, moved_x, moved_ids, moved_r);
    double worst = 0, scale = 1e-12;
    for (int64_t t = 0; t < 20; ++t) {
      for (int64_t c = 0; c < 3; ++c) {
        worst = std::max(worst, std::abs(logits(t, c) - moved_logits(new_of[static_cast<std::size_t>(t)], c)));
        scale = std::max(scale, std::abs(logits(t, c)));
      }
    }
    CHECK(worst <= 1e-12 * scale);
    double worst_grad = 0, grad_scale = 1e-12;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      worst_grad = std::max(worst_grad, std::abs(grads[i] - moved_grads[i]));
      grad_scale = std::max(grad_scale, std::abs(grads[i]));
    }
    CHECK(worst_grad <= 1e-12 * grad_scale);
    // Dropout is on: with other ids (same positions) the logits change.
    Ids other_ids = ids;
    for (NodeId& id : other_ids) id += 1'000'000;
    const auto [other_logits, other_grads] = run(b0, b1, x, other_ids, r);
    CHECK(test::values_of(other_logits.cview()) != test::values_of(logits.cview()));
  }
}

TEST_CASE("a model refuses to train without the global id of every input row", "[models][dropout][errors]") {
  models::ModelOptions o;
  o.type = models::ModelType::kGcn;
  o.layers = 1;
  models::GnnModel<double> model(o, 4, 2, 1);
  const graph::Block block = test::tiny_block(true);  // 4 sources
  const std::vector<const graph::Block*> blocks{&block};
  const Matrix<double> x(4, 4);
  CHECK(test::error_of([&] { model.forward(blocks, x.cview(), {}, true, core::RngKey{}); }).find("0 ids for 4 rows") !=
        std::string::npos);
  const Ids ids{5, 6, 7, 8};
  CHECK_NOTHROW(model.forward(blocks, x.cview(), ids, true, core::RngKey{}));
  CHECK_NOTHROW(model.forward(blocks, x.cview(), {}, false, core::RngKey{}));  // inference: no ids needed
}
