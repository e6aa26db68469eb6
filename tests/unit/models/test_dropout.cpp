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


TEST_CASE("dropout: the mask layout is one bit per element, rows padded to whole bytes", "[models][dropout]") {
  CHECK(models::dropout_mask_row_bytes(1) == 1);
  CHECK(models::dropout_mask_row_bytes(8) == 1);
  CHECK(models::dropout_mask_row_bytes(9) == 2);
  CHECK(models::dropout_mask_row_bytes(1433) == 180);
  CHECK(models::dropout_mask_bytes(2708, 1433) == 2708u * 180u);
  CHECK(models::dropout_mask_bytes(0, 5) == 0);
  CHECK(models::dropout_mask_bytes(3, 0) == 0);
  // p resolved to 1/65536, rounded to nearest.
  CHECK(models::dropout_threshold(0.0) == 0);
  CHECK(models::dropout_threshold(0.5) == 32768);
  CHECK(models::dropout_threshold(static_cast<double>(0.3f)) == 19661);  // 19660.8
  CHECK(models::dropout_threshold(0.6) == 39322);                         // 39321.6
  CHECK(models::dropout_threshold(1.0 / 262144) == 0);                    // below 2^-17: keeps everything
  CHECK(models::dropout_threshold(1.0 - 1.0 / 262144) == 65536);          // drops everything
}

TEST_CASE("dropout: p = 0 is the identity", "[models][dropout]") {
  core::Rng rng(1, {2});
  const Matrix<double> x = test::random_matrix(rng, 5, 4);
  for (const Ids& ids : {Ids{}, Ids{9, 3, 0, 100, 7}}) {
    Matrix<double> y(5, 4);
    std::vector<uint8_t> mask(5, 7);
    models::cpu::dropout_forward<double>(core::rng_key(3, {1}), 0.0, x.view(), ids, y.view(), mask);
    CHECK(test::values_of(y.cview()) == test::values_of(x.cview()));
    CHECK(mask == std::vector<uint8_t>(5, 0x0f));  // four bits per row, the padding 0
    Matrix<double> dx(5, 4);
    models::cpu::dropout_backward<double>(mask, 0.0, x.view(), dx.view());
    CHECK(test::values_of(dx.cview()) == test::values_of(x.cview()));
  }
  // 11 columns: one full byte and three bits per row.
  const Matrix<double> wide = test::random_matrix(rng, 2, 11);
  Matrix<double> y(2, 11);
  std::vector<uint8_t> mask(4, 7);
  models::cpu::dropout_forward<double>(core::rng_key(3, {1}), 0.0, wide.view(), {}, y.view(), mask);
  CHECK(mask == std::vector<uint8_t>{0xff, 0x07, 0xff, 0x07});
  CHECK(test::values_of(y.cview()) == test::values_of(wide.cview()));
}

TEST_CASE("dropout: a tiny case bit by bit against the rule drawn from Philox here", "[models][dropout]") {
  // 3 rows of 11 columns, ids far apart: row 0 starts mid-block (5 * 11 = 55 = 8 * 6 + 7), row 1 at
  // position 0, row 2 across position 2^32 (390451572 * 11 = 2^32 - 4).
  const core::RngKey key = core::rng_key(42, {0, 1, 2});
  const Ids ids{5, 0, 390451572};
  const int64_t rows = 3, cols = 11;
  core::Rng rng(2, {7});
  const Matrix<double> x = test::random_matrix(rng, rows, cols);
  // 8 bits a decision with refinement (0.1, 0.3, 0.9) and without (129 / 256), 4 (0.375), 2 (0.25,
  // 0.75), 1 (0.5).
  for (const double p : {0.1, 0.3, 0.5, 0.9, 0.25, 0.75, 0.375, 129.0 / 256}) {
    INFO("p " << p);
    Matrix<double> y(rows, cols);
    std::vector<uint8_t> mask(mask_bytes(rows, cols), 0xaa);
    models::cpu::dropout_forward<double>(key, p, x.view(), ids, y.view(), mask);
    std::vector<uint8_t> expected(mask_bytes(rows, cols), 0);
    int64_t kept = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const bool keep = reference_keep(key, static_cast<uint64_t>(ids[static_cast<std::size_t>(r)]) * cols + c, p);
        if (keep) expected[static_cast<std::size_t>(r * 2 + c / 8)] |= static_cast<uint8_t>(1u << (c % 8));
        CHECK(y(r, c) == (keep ? x(r, c) * (1.0 / (1.0 - p)) : 0.0));
        kept += keep;
      }
    }
    CHECK(mask == expected);
    CHECK(kept > 0);
    CHECK(kept < rows * cols);  // both outcomes occur for these p (checked once: the draw is fixed)
  }
}

TEST_CASE("dropout: element (r, c) follows the draw at row_ids[r] * cols + c, kept values scaled",
          "[models][dropout]") {
  const core::RngKey key = core::rng_key(42, {0, 1, 2});
  core::Rng rng(8, {1});
  // 8 bits a decision with refinement (0.3) and without (129 / 256), 4, 2 and 1 (0.375, 0.25, 0.5).
  for (const float p : {0.3f, 129.0f / 256, 0.375f, 0.25f, 0.5f}) {
    for (const int64_t cols : {1, 3, 8, 13, 501, 4099}) {  // odd widths: rows straddle Philox blocks
      INFO("p " << p << ", cols " << cols);
      const int64_t rows = 4000 / cols + 3;
      Ids ids = distinct_ids(rng, 1'000'000, static_cast<NodeId>(rows));
      // A row across block 2^32, where the counter's low word carries (an id above those drawn).
      if (cols >= 16) ids[1] = static_cast<NodeId>((uint64_t{1} << 39) / static_cast<uint64_t>(cols));
      if (rows > 3) ids[2] = ids[0] + 1;  // consecutive ids: rows meeting inside one block
      Matrix<float> x(rows, cols);
      x.fill(2.0f);
      Matrix<float> y(rows, cols);
      std::vector<uint8_t> mask(mask_bytes(rows, cols));
      models::cpu::dropout_forward<float>(key, p, x.view(), ids, y.view(), mask);
      bool consistent = true;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const uint64_t position = static_cast<uint64_t>(ids[static_cast<std::size_t>(r)]) * cols + c;
          const bool expected = reference_keep(key, position, static_cast<double>(p));
          const int64_t i = r * cols + c;
          consistent = consistent && (bit_of(mask, cols, r, c) == expected) &&
                       (y.data()[i] == (expected ? 2.0f * (1.0f / (1.0f - p)) : 0.0f));
        }
      }
      CHECK(consistent);
      CHECK(padding_clear(mask, rows, cols));
      CHECK(feature_mask(key, p, rows, cols, ids) == mask);                           // deterministic per key
      CHECK(feature_mask(core::rng_key(42, {0, 1, 3}), p, rows, cols, ids) != mask);  // another layer's key
      // In place (y = x) gives the same values.
      std::vector<uint8_t> again(mask.size());
      Matrix<float> z(rows, cols);
      z.fill(2.0f);
      models::cpu::dropout_forward<float>(key, p, z.view(), ids, z.view(), again);
      CHECK(again == mask);
      CHECK(test::values_of(z.cview()) == test::values_of(y.cview()));
    }
  }
}

TEST_CASE("dropout: the keep rate over a million elements is 1 - p", "[models][dropout]") {
  // 1,000 x 1,000 Bernoulli draws: the rate's standard deviation is at most 0.0005, so 0.005 is
  // ten of them (and the draw is fixed by the key: the check cannot flake).
  const int64_t rows = 1000, cols = 1000;
  core::Rng rng(6, {1});
  const Ids ids = distinct_ids(rng, 10'000'000, static_cast<NodeId>(rows));
  for (const float p : {0.1f, 0.5f, 0.8f}) {
    INFO("p " << p);
    const auto mask = feature_mask(core::rng_key(13, {static_cast<uint64_t>(p * 10)}), p, rows, cols, ids);
    int64_t kept = 0;
    for (const uint8_t byte : mask) kept += std::popcount(byte);
    const double rate = static_cast<double>(kept) / static_cast<double>(rows * cols);
    CHECK(std::abs(rate - (1.0 - static_cast<double>(p))) < 0.005);
  }
}

TEST_CASE("dropout: without row ids row r is node r (the flat index r * cols + c)", "[models][dropout]") {
  const core::RngKey key = core::rng_key(5, {4});
  const int64_t rows = 37, cols = 13;
  Ids iota(static_cast<std::size_t>(rows));
  std::iota(iota.begin(), iota.end(), 0);
  const auto mask = feature_mask(key, 0.5f, rows, cols, {});
  CHECK(mask == feature_mask(key, 0.5f, rows, cols, iota));
  bool flat = true;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      flat = flat && bit_of(mask, cols, r, c) == reference_keep(key, static_cast<uint64_t>(r * cols + c), 0.5);
    }
  }
  CHECK(flat);
}

TEST_CASE("dropout: the vector, portable and scalar draws give the same bytes", "[models][dropout]") {
  INFO("AVX2 path: " << models::cpu::dropout_uses_avx2());
  core::Rng rng(9, {9});
  // Runs of consecutive blocks (a long row), scattered blocks (short rows), and blocks around the
  // 2^32 carry of the counter's low word; lengths not multiples of the vector widths.
  std::vector<uint64_t> blocks;
  for (uint64_t b = 0; b < 1000; ++b) blocks.push_back(b);
  for (int i = 0; i < 333; ++i) blocks.push_back(rng.next_u64() >> static_cast<unsigned>(rng.below(64)));
  for (uint64_t b = 0xfffffff0ull; b < 0x100000013ull; ++b) blocks.push_back(b);
  for (const uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{9}, uint64_t{33}, blocks.size()}) {
    // 8 bits a decision with refinement (1, 19661, 65535, 255, 257), without (33024 = 129 * 256,
    // 256), 4 (24576 = 6 * 4096, 61440), 2 (16384, 49152), 1 (32768), and the constant ends.
    for (const uint32_t threshold : {0u, 1u, 19661u, 65535u, 255u, 257u, 33024u, 256u, 24576u, 61440u, 16384u, 49152u,
                                     32768u, 65536u}) {
      INFO(n << " blocks, threshold " << threshold);
      const core::RngKey key = core::rng_key(77, {n, threshold});
      const std::span<const uint64_t> list(blocks.data(), n);
      const std::size_t bytes_per_block = 16 / reference_bits(threshold);
      std::vector<uint8_t> expected(n * bytes_per_block);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < bytes_per_block; ++j) {
          for (unsigned q = 0; q < 8; ++q) {
            if (reference_decision(key, blocks[i], static_cast<unsigned>(8 * j + q), threshold)) {
              expected[i * bytes_per_block + j] |= static_cast<uint8_t>(1u << q);
            }
          }
        }
      }
      for (const auto path :
           {models::cpu::DrawPath::kFastest, models::cpu::DrawPath::kPortable, models::cpu::DrawPath::kScalar}) {
        std::vector<uint8_t> out(expected.size(), 0x5a);
        models::cpu::dropout_draw_blocks(key, list, threshold, out, path);
        CHECK(out == expected);
      }
      if (threshold == 19661 && n == blocks.size()) {  // ties occur, so the refinement is exercised
        int64_t ties = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const core::PhiloxCounter words = key.block(blocks[i]);
          for (unsigned m = 0; m < 16; ++m) ties += ((words[m / 4] >> (8 * (m % 4))) & 0xffu) == 19661u / 256;
        }
        CHECK(ties > 20);
      }
      if (threshold == 0) CHECK(std::all_of(expected.begin(), expected.end(), [](uint8_t v) { return v == 0xff; }));
      if (threshold == 65536) CHECK(std::all_of(expected.begin(), expected.end(), [](uint8_t v) { return v == 0; }));
    }
  }
  std::vector<uint8_t> wrong(3);
  CHECK_THROWS_WITH(models::cpu::dropout_draw_blocks(core::rng_key(1, {}), std::vector<uint64_t>{1, 2, 3}, 32768, wrong),
                    Catch::Contains("3 output bytes for 3 blocks of 16 bytes"));
}

TEST_CASE("dropout: p resolved to 1/65536 keeps or drops everything at the ends", "[models][dropout]") {
  core::Rng rng(3, {1});
  const Matrix<double> x = test::random_matrix(rng, 40, 70);
  Matrix<double> y(40, 70);
  std::vector<uint8_t> mask(mask_bytes(40, 70));
  const double tiny = 1.0 / 262144;  // rounds to threshold 0: all kept, scaled by 1 / (1 - p)
  models::cpu::dropout_forward<double>(core::rng_key(1, {2}), tiny, x.view(), {}, y.view(), mask);
  int64_t kept = 0;
  for (const uint8_t byte : mask) kept += std::popcount(byte);
  CHECK(kept == 40 * 70);
  CHECK(y(3, 5) == x(3, 5) * (1.0 / (1.0 - tiny)));
  models::cpu::dropout_forward<double>(core::rng_key(1, {2}), 1.0 - tiny, x.view(), {}, y.view(), mask);
  CHECK(std::all_of(mask.begin(), mask.end(), [](uint8_t v) { return v == 0; }));
  CHECK(test::values_of(y.cview()) == std::vector<double>(40 * 70, 0.0));
}

TEST_CASE("dropout: a row's mask depends only on its global id, not on its position in the batch",
          "[models][dropout]") {
  const core::RngKey key = core::rng_key(11, {2, 5, 1});
  core::Rng rng(3, {3});
  for (const int64_t cols : {1, 3, 4, 8, 130, 1433}) {
    INFO("cols " << cols);
    const Ids ids = distinct_ids(rng, 5000, 300);
    const auto mask = feature_mask(key, 0.4f, 300, cols, ids);
    // Permuting the rows (and their ids) permutes the mask rows.
    Ids perm(ids.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (std::size_t i = perm.size(); i-- > 1;) std::swap(perm[i], perm[rng.below(i + 1)]);
    Ids permuted_ids(ids.size());
    for (std::size_t k = 0; k < perm.size(); ++k) permuted_ids[k] = ids[static_cast<std::size_t>(perm[k])];
    const auto permuted = feature_mask(key, 0.4f, 300, cols, permuted_ids);
    bool rows_follow = true;
    for (std::size_t k = 0; k < perm.size(); ++k) {
      rows_follow = rows_follow && row_of(permuted, cols, static_cast<int64_t>(k)) == row_of(mask, cols, perm[k]);
    }
    CHECK(rows_follow);
    // Another batch (other rows around it, a different size) holding some of the same nodes: each
    // shared node draws the same mask row.
    Ids other = distinct_ids(rng, 5000, 120);
    for (std::size_t k = 0; k < 40; ++k) other[3 * k] = ids[7 * k];  // 40 shared nodes at new positions
    const auto other_mask = feature_mask(key, 0.4f, 120, cols, other);
    bool shared_equal = true;
    for (std::size_t k = 0; k < 40; ++k) {
      shared_equal = shared_equal && row_of(other_mask, cols, static_cast<int64_t>(3 * k)) ==
                                         row_of(mask, cols, static_cast<int64_t>(7 * k));
    }
    CHECK(shared_equal);
    // A node alone in a batch of one row draws its row of the big batch.
    for (std::size_t k = 0; k < 300; k += 37) {
      CHECK(feature_mask(key, 0.4f, 1, cols, Ids{ids[k]}) == row_of(mask, cols, static_cast<int64_t>(k)));
    }
  }
}

TEST_CASE("dropout: the backward reads the forward's bits", "[models][dropout]") {
  core::Rng rng(12, {1});
  for (const int64_t cols : {5, 8, 37}) {
    INFO("cols " << cols);
    const Matrix<double> x = test::random_matrix(rng, 50, cols);
    const Matrix<double> dy = test::random_matrix(rng, 50, cols);
    const Ids ids = distinct_ids(rng, 100'000, 50);
    Matrix<double> y(50, cols);
    std::vector<uint8_t> mask(mask_bytes(50, cols));
    models::cpu::dropout_forward<double>(core::rng_key(4, {static_cast<uint64_t>(cols)}), 0.35, x.view(), ids, y.view(), mask);
    Matrix<double> dx(50, cols);
    models::cpu::dropout_backward<double>(mask, 0.35, dy.view(), dx.view());
    bool follows = true;
    for (int64_t r = 0; r < 50; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const bool kept = bit_of(mask, cols, r, c);
        follows = follows && (y(r, c) != 0.0) == kept && dx(r, c) == (kept ? dy(r, c) * (1.0 / 0.65) : 0.0);
      }
    }
    CHECK(follows);
    // In place (dx = dy).
    Matrix<double> in_place(50, cols, test::values_of(dy.cview()));
    models::cpu::dropout_backward<double>(mask, 0.35, in_place.view(), in_place.view());
    CHECK(test::values_of(in_place.cview()) == test::values_of(dx.cview()));
  }
}

TEST_CASE("dropout: without a mask the output is bitwise the same, zero groups undrawn", "[models][dropout]") {
  core::Rng rng(14, {1});
  const core::RngKey key = core::rng_key(3, {1, 4});
  for (const int64_t cols : {1, 3, 8, 13, 130, 1433}) {
    INFO("cols " << cols);
    const int64_t rows = 60;
    // Sparse rows: mostly +0, some -0 (not taken for zero), some values; one all-zero row.
    Matrix<float> x(rows, cols);
    for (int64_t r = 1; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const uint64_t u = rng.below(20);
        x(r, c) = u == 0 ? rng.uniform() + 0.5f : u == 1 ? -0.0f : 0.0f;
      }
    }
    const Ids ids = distinct_ids(rng, 100'000, static_cast<NodeId>(rows));
    const auto bits = [](const Matrix<float>& m) {
      std::vector<uint32_t> out(static_cast<std::size_t>(m.size()));
      std::memcpy(out.data(), m.data(), out.size() * sizeof(float));
      return out;
    };
    Matrix<float> without(rows, cols);
    for (const float p : {0.4f, 0.5f, 0.75f}) {  // 8 (refined), 1 and 2 bits a decision
      INFO("p " << p);
      Matrix<float> with_mask(rows, cols);
      std::vector<uint8_t> mask(mask_bytes(rows, cols));
      models::cpu::dropout_forward<float>(key, p, x.view(), ids, with_mask.view(), mask);
      without.fill(7.0f);  // every element must be written
      models::cpu::dropout_forward<float>(key, p, x.view(), ids, without.view(), {});
      CHECK(bits(without) == bits(with_mask));
      Matrix<float> in_place(rows, cols, test::values_of(x.cview()));
      models::cpu::dropout_forward<float>(key, p, in_place.view(), ids, in_place.view(), {});
      CHECK(bits(in_place) == bits(with_mask));
    }
    // p = 0 without a mask: the identity.
    models::cpu::dropout_forward<float>(key, 0.0f, x.view(), ids, without.view(), {});
    CHECK(bits(without) == bits(x));
  }
}

TEST_CASE("dropout: finite-difference gradient for a fixed mask", "[models][dropout][gradcheck]") {
  core::Rng rng(4, {4});
  Matrix<double> x = test::random_matrix(rng, 6, 5);
  const Matrix<double> r = test::random_matrix(rng, 6, 5);
  const core::RngKey key = core::rng_key(9, {9});
  const Ids ids{12, 4, 99, 0, 7, 31};
  Matrix<double> y(6, 5);
  std::vector<uint8_t> mask(mask_bytes(6, 5));
  auto loss = [&] {
    models::cpu::dropout_forward<double>(key, 0.4, x.view(), ids, y.view(), mask);
    return test::dot(y.view(), r.view());
  };
  loss();
  Matrix<double> dx(6, 5);
  models::cpu::dropout_backward<double>(mask, 0.4, r.view(), dx.view());
  CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
}

TEST_CASE("dropout: bad p, mask sizes and row ids are refused", "[models][dropout][errors]") {
  Matrix<double> x(2, 2);
  std::vector<uint8_t> mask(2);
  std::vector<uint8_t> short_mask(1);
  std::vector<uint8_t> byte_mask(4);  // a byte per element: the old layout
  for (const double bad : {1.0, 1.5, -0.1}) {
    CHECK(test::error_of([&] {
            models::cpu::dropout_forward<double>(core::RngKey{}, bad, x.view(), {}, x.view(), mask);
          }).find("p must be in [0, 1)") != std::string::npos);
    CHECK(test::error_of([&] { models::cpu::dropout_backward<double>(mask, bad, x.view(), x.view()); })
              .find("p must be in [0, 1)") != std::string::npos);
  }
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 1.0, x.view(), {}, x.view(), mask);
        }).find("p must be in [0, 1), got 1") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 0.5, x.view(), {}, x.view(), short_mask);
        }).find("mask of 1 bytes for x [2 x 2] (needs 2, or none)") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 0.5, x.view(), {}, x.view(), byte_mask);
        }).find("mask of 4 bytes for x [2 x 2] (needs 2, or none)") != std::string::npos);
  CHECK(test::error_of([&] { models::cpu::dropout_backward<double>(byte_mask, 0.5, x.view(), x.view()); })
            .find("mask of 4 bytes for dy [2 x 2] (needs 2)") != std::string::npos);
  const Ids three{1, 2, 3}, negative{4, -1};
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 0.5, x.view(), three, x.view(), mask);
        }).find("3 row ids for 2 rows") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 0.5, x.view(), negative, x.view(), mask);
        }).find("negative row id") != std::string::npos);
}
