// The sparse first-layer input (ops/sparse_input.hpp): the CSR dropout is dropout_forward's output
// bit for bit, the sparse products match dense ones, and a model trained on sparse features takes
// the sparse path with the dense path's logits and gradients.
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "model_gradient.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using graph::NodeId;
using models::Matrix;
using models::SparseRowsView;

namespace {

// rows x cols with about `per_row` non-zeros per row at random columns (values in [-1, 1), never 0).
template <class T>
Matrix<T> sparse_matrix(core::Rng& rng, int64_t rows, int64_t cols, int64_t per_row) {
  Matrix<T> m(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < per_row; ++k) {
      const auto c = static_cast<int64_t>(rng.below(static_cast<uint64_t>(cols)));
      m.view()(r, c) = static_cast<T>(rng.uniform_double() < 0.5 ? -0.5 - rng.uniform_double() / 2
                                                                  : 0.5 + rng.uniform_double() / 2);
    }
  }
  return m;
}

template <class T>
Matrix<T> densify(SparseRowsView<T> a) {
  Matrix<T> m(a.rows, a.cols);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t e = a.offsets[r]; e < a.offsets[r + 1]; ++e) m.view()(r, a.columns[e]) = a.values[e];
  }
  return m;
}

template <class T>
bool bitwise_equal(models::MatrixView<const T> a, models::MatrixView<const T> b) {
  return a.rows == b.rows && a.cols == b.cols &&
         std::memcmp(a.data, b.data, static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

// A buffer of the dense dropped copy's size, as the model gives it (8-byte aligned).
template <class T>
std::vector<std::byte> dense_buffer(int64_t rows, int64_t cols) {
  return std::vector<std::byte>(static_cast<std::size_t>(rows * cols) * sizeof(T));
}

std::vector<NodeId> shuffled_ids(core::Rng& rng, int64_t rows, NodeId base) {
  std::vector<NodeId> ids(static_cast<std::size_t>(rows));
  std::iota(ids.begin(), ids.end(), base);
  for (std::size_t i = ids.size(); i-- > 1;) std::swap(ids[i], ids[rng.below(i + 1)]);
  return ids;
}

// A graph in which every node has three in-edges from random nodes (repeats and self-loops allowed).
graph::CsrGraph three_in_edges(core::Rng& rng, int64_t nodes) {
  std::vector<NodeId> src, dst;
  for (NodeId v = 0; v < nodes; ++v) {
    for (int k = 0; k < 3; ++k) {
      src.push_back(static_cast<NodeId>(rng.below(static_cast<uint64_t>(nodes))));
      dst.push_back(v);
    }
  }
  return graph::CsrGraph::from_coo(nodes, src, dst);
}

models::ModelOptions two_layers(models::ModelType type, double dropout) {
  models::ModelOptions options;
  options.type = type;
  options.layers = 2;
  options.hidden = 8;
  options.dropout = dropout;
  options.heads = 2;
  return options;
}

}  // namespace

TEMPLATE_TEST_CASE("the CSR dropout holds exactly the non-zeros of dropout_forward's output", "[models][sparse_input]",
                   float, double) {
  using T = TestType;
  core::Rng rng(3, {});
  for (const int64_t cols : {64, 200, 1433, 4500}) {  // 4500: rows span several scan segments
    for (const double p : {0.5, 0.1, 0.9}) {
      const int64_t rows = 97;
      const Matrix<T> x = sparse_matrix<T>(rng, rows, cols, cols / 40 + 1);
      const auto ids = shuffled_ids(rng, rows, 1'000'003);  // large global ids: positions beyond 2^32
      const core::RngKey key = core::rng_key(5, {static_cast<uint64_t>(cols), 1});
      Matrix<T> dense(rows, cols);
      models::cpu::dropout_forward<T>(key, static_cast<T>(p), x.cview(), ids, dense.view(), {});
      auto buffer = dense_buffer<T>(rows, cols);
      const auto sparse = models::cpu::dropout_forward_sparse<T>(key, static_cast<T>(p), x.cview(), ids, buffer);
      INFO("cols " << cols << ", p " << p);
      REQUIRE(sparse.has_value());
      CHECK(sparse->rows == rows);
      CHECK(sparse->cols == cols);
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(std::is_sorted(sparse->columns + sparse->offsets[r], sparse->columns + sparse->offsets[r + 1]));
        for (int64_t e = sparse->offsets[r]; e < sparse->offsets[r + 1]; ++e) CHECK(sparse->values[e] != T{0});
      }
      CHECK(bitwise_equal<T>(densify(*sparse).cview(), dense.cview()));
    }
  }
}

TEST_CASE("the CSR dropout keeps a -0 input it keeps, as dropout_forward does", "[models][sparse_input]") {
  const int64_t rows = 4, cols = 64;
  Matrix<float> x(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += 9) x.view()(r, c) = -0.0f;
  }
  const core::RngKey key = core::rng_key(9, {});
  Matrix<float> dense(rows, cols);
  models::cpu::dropout_forward<float>(key, 0.5f, x.cview(), {}, dense.view(), {});
  auto buffer = dense_buffer<float>(rows, cols);
  const auto sparse = models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), {}, buffer);
  REQUIRE(sparse.has_value());
  CHECK(sparse->nnz() > 0);
  CHECK(bitwise_equal<float>(densify(*sparse).cview(), dense.cview()));
}

TEST_CASE("the CSR form takes a few long rows, and is refused for many and for narrow inputs",
          "[models][sparse_input]") {
  const core::RngKey key = core::rng_key(1, {});
  const auto matches_dense = [&](const Matrix<float>& x, const std::vector<NodeId>& ids) {
    Matrix<float> dense(x.rows(), x.cols());
    models::cpu::dropout_forward<float>(key, 0.5f, x.cview(), ids, dense.view(), {});
    auto buffer = dense_buffer<float>(x.rows(), x.cols());
    const auto sparse = models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), ids, buffer);
    return sparse.has_value() && bitwise_equal<float>(densify(*sparse).cview(), dense.cview());
  };
  SECTION("long rows among short ones are drawn on their own, bitwise as dropout_forward") {
    Matrix<float> x(200, 128);  // limit 16 per row; at most 200 / 64 + 1 = 4 long rows
    for (int64_t r = 0; r < 200; ++r) x.view()(r, (r * 13) % 128) = 1.0f + static_cast<float>(r);
    std::vector<NodeId> ids(200);
    std::iota(ids.begin(), ids.end(), NodeId{1000});
    for (const int64_t r : {0, 37, 38, 199}) {
      for (int64_t c = 0; c < 128; c += 2) x.view()(r, c) = 0.5f + static_cast<float>(c);  // 64 non-zeros
    }
    CHECK(matches_dense(x, {}));
    CHECK(matches_dense(x, ids));
    for (int64_t c = 0; c < 128; c += 2) x.view()(100, c) = 2.0f;  // a fifth long row: too many
    auto buffer = dense_buffer<float>(200, 128);
    CHECK_FALSE(models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), {}, buffer).has_value());
  }
  SECTION("a long first row moves the rows after it; kept entries beyond rows x limit refuse the matrix") {
    Matrix<float> x(2, 128);  // limit 16, 32 entries in all; row 0 keeps about 64 of its 128
    for (int64_t c = 0; c < 128; ++c) x.view()(0, c) = 1.0f;
    x.view()(1, 5) = 3.0f;
    auto buffer = dense_buffer<float>(2, 128);
    CHECK_FALSE(models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), {}, buffer).has_value());
    Matrix<float> y(8, 128);  // limit 16, 128 entries in all
    for (int64_t c = 0; c < 128; c += 4) y.view()(0, c) = 1.0f + static_cast<float>(c);  // 32 non-zeros
    for (int64_t r = 1; r < 8; ++r) y.view()(r, r) = static_cast<float>(r);
    CHECK(matches_dense(y, {}));
  }
  SECTION("fewer than 64 columns") {
    Matrix<float> x(10, 63);
    auto buffer = dense_buffer<float>(10, 63);
    CHECK_FALSE(models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), {}, buffer).has_value());
  }
  SECTION("no rows") {
    Matrix<float> x(0, 128);
    std::vector<std::byte> buffer(64);
    CHECK_FALSE(models::cpu::dropout_forward_sparse<float>(key, 0.5f, x.cview(), {}, buffer).has_value());
  }
}

TEST_CASE("the CSR limit is an eighth of the columns and always fits the dense copy's bytes",
          "[models][sparse_input]") {
  using models::cpu::sparse_row_limit;
  CHECK(sparse_row_limit(2708, 1433, 2708 * 1433 * 4, 4) == 179);
  CHECK(sparse_row_limit(2708, 1433, 2708 * 1433 * 8, 8) == 179);
  CHECK(sparse_row_limit(10, 63, 10 * 63 * 4, 4) == 0);
  CHECK(sparse_row_limit(10, 64, 10 * 64 * 4, 4) == 8);
  CHECK(sparse_row_limit(0, 128, 1024, 4) == 0);
  // A smaller buffer lowers the limit: 1,000 bytes for 10 rows = 88 for offsets + 912 / (10 x 8) = 11.
  CHECK(sparse_row_limit(10, 1000, 1000, 4) == 11);
  CHECK(sparse_row_limit(10, 1000, 500, 4) == 0);
  for (const int64_t cols : {64, 65, 100, 1433, 8415}) {
    for (const int64_t rows : {1, 2, 7, 1000}) {
      for (const std::size_t value : {std::size_t{4}, std::size_t{8}}) {
        const std::size_t bytes = static_cast<std::size_t>(rows * cols) * value;
        const int64_t limit = sparse_row_limit(rows, cols, bytes, value);
        CHECK(limit >= 8);
        CHECK(static_cast<std::size_t>(rows + 1) * 8 + static_cast<std::size_t>(rows * limit) * (value + 4) <= bytes);
      }
    }
  }
}

TEST_CASE("csr_gemm and csr_gemm_tn match dense products, on any number of threads", "[models][sparse_input]") {
  core::Rng rng(11, {});
  const int64_t m = 300, k = 256, n = 16;
  const Matrix<double> x = sparse_matrix<double>(rng, m, k, 12);
  auto buffer = dense_buffer<double>(m, k);
  // p = 0 keeps every non-zero: the CSR form of x itself.
  const auto a = models::cpu::dropout_forward_sparse<double>(core::rng_key(1, {}), 0.0, x.cview(), {}, buffer);
  REQUIRE(a.has_value());
  REQUIRE(bitwise_equal<double>(densify(*a).cview(), x.cview()));
  const Matrix<double> b = test::random_matrix(rng, k, n);
  const Matrix<double> dh = test::random_matrix(rng, m, n);
  Matrix<double> want(m, n), got(m, n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t j = 0; j < n; ++j) want.view()(r, j) += x.view()(r, c) * b.view()(c, j);
    }
  }
  std::fill(got.flat().begin(), got.flat().end(), 7.0);  // overwritten
  models::cpu::csr_gemm<double>(*a, b.cview(), got.view());
  for (int64_t i = 0; i < want.size(); ++i) CHECK(got.flat()[i] == Approx(want.flat()[i]).margin(1e-12));

  Matrix<double> want_t(k, n), got_t(k, n);
  for (double& v : want_t.flat()) v = 0.25;  // accumulates into what is there
  for (double& v : got_t.flat()) v = 0.25;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t j = 0; j < n; ++j) want_t.view()(c, j) += x.view()(r, c) * dh.view()(r, j);
    }
  }
  models::cpu::csr_gemm_tn<double>(*a, dh.cview(), got_t.view());
  for (int64_t i = 0; i < want_t.size(); ++i) CHECK(got_t.flat()[i] == Approx(want_t.flat()[i]).margin(1e-12));

  // Threads change only who computes which rows: the same bits.
  Matrix<double> one(m, n), one_t(k, n);
  {
    oneapi::tbb::global_control single(oneapi::tbb::global_control::max_allowed_parallelism, 1);
    models::cpu::csr_gemm<double>(*a, b.cview(), one.view());
    for (double& v : one_t.flat()) v = 0.25;
    models::cpu::csr_gemm_tn<double>(*a, dh.cview(), one_t.view());
  }
  CHECK(bitwise_equal<double>(one.cview(), got.cview()));
  CHECK(bitwise_equal<double>(one_t.cview(), got_t.cview()));
}

TEST_CASE("a model on sparse features trains through the sparse path with the dense path's results",
          "[models][sparse_input]") {
  const auto type = GENERATE(models::ModelType::kGcn, models::ModelType::kGat, models::ModelType::kSage);
  core::Rng rng(17, {});
  const int64_t nodes = 40, features = 96;
  const graph::CsrGraph g = three_in_edges(rng, nodes);
  const auto norm = type == models::ModelType::kGcn    ? graph::BlockNorm::kGcn
                    : type == models::ModelType::kSage ? graph::BlockNorm::kMean
                                                       : graph::BlockNorm::kSelfLoops;
  const graph::Block normed = graph::full_graph_block(g, norm);
  const models::ModelOptions options = two_layers(type, 0.4);
  const Matrix<double> x = sparse_matrix<double>(rng, nodes, features, 5);
  const Matrix<double> r = test::random_matrix(rng, nodes, 3);
  const auto ids = shuffled_ids(rng, nodes, 100);
  const std::vector<const graph::Block*> blocks(2, &normed);
  const core::RngKey key = core::rng_key(2, {3});

  const models::OpContext sparse_ctx;
  const models::OpContext dense_ctx(sparse_ctx.stream(), models::OpOptions{.sparse_input = false});
  models::GnnModel<double> sparse_model(options, features, 3, 5, sparse_ctx);
  models::GnnModel<double> dense_model(options, features, 3, 5, dense_ctx);
  const auto run = [&](models::GnnModel<double>& model) {
    const auto logits = model.forward(blocks, x.cview(), ids, true, key);
    Matrix<double> out(logits.rows, logits.cols);
    std::copy(logits.flat().begin(), logits.flat().end(), out.flat().begin());
    model.params().zero_grad();
    model.backward(blocks, r.cview());
    return out;
  };
  const Matrix<double> sparse_logits = run(sparse_model);
  const Matrix<double> dense_logits = run(dense_model);
  // SAGE reads its input through an aggregation, not x W: it keeps the dense path.
  CHECK(sparse_model.first_input_sparse() == (type != models::ModelType::kSage));
  CHECK_FALSE(dense_model.first_input_sparse());
  for (int64_t i = 0; i < dense_logits.size(); ++i) {
    CHECK(sparse_logits.flat()[i] == Approx(dense_logits.flat()[i]).margin(1e-12));
  }
  const auto& gs = sparse_model.params().grads();
  const auto& gd = dense_model.params().grads();
  REQUIRE(gs.size() == gd.size());
  for (std::size_t i = 0; i < gd.size(); ++i) CHECK(gs[i] == Approx(gd[i]).margin(1e-12));
  // And the gradients are those of the forward (central differences through the sparse path).
  const auto check = test::check_model_gradient(sparse_model, blocks, x.cview(), ids, r, key);
  INFO("worst index " << check.worst << ": numeric " << check.numeric << ", analytic " << check.analytic);
  CHECK(check.max_error < 1e-6);
  // Evaluation has no dropout: the dense path.
  sparse_model.forward(blocks, x.cview(), ids, false, key);
  CHECK_FALSE(sparse_model.first_input_sparse());
}

TEMPLATE_TEST_CASE("a fixed input's CSR form holds exactly its non-zeros, and is refused above an eighth of them",
                   "[models][sparse_input]", float, double) {
  core::Rng rng(23, {});
  Matrix<TestType> x = sparse_matrix<TestType>(rng, 37, 80, 6);
  x.view()(3, 7) = TestType{-0.0};  // a -0 is kept, as the CSR dropout keeps it
  const std::optional<int64_t> nnz = models::cpu::sparse_nonzeros<TestType>(x.cview());
  REQUIRE(nnz.has_value());
  int64_t expected = 0;
  for (const TestType v : x.flat()) expected += std::signbit(v) || v != TestType{0} ? 1 : 0;
  CHECK(*nnz == expected);
  const std::size_t bytes = models::cpu::sparse_rows_bytes(37, *nnz, sizeof(TestType));
  CHECK(bytes >= 38 * sizeof(int64_t) + static_cast<std::size_t>(*nnz) * (4 + sizeof(TestType)));
  std::vector<int64_t> buffer((bytes + 7) / 8);
  const SparseRowsView<TestType> csr = models::cpu::sparse_rows<TestType>(
      x.cview(), *nnz, std::as_writable_bytes(std::span<int64_t>(buffer)).first(bytes));
  CHECK(csr.rows == 37);
  CHECK(csr.cols == 80);
  CHECK(csr.nnz() == *nnz);
  CHECK(bitwise_equal<TestType>(densify(csr).cview(), x.cview()));
  for (int64_t r = 0; r < csr.rows; ++r) {
    CHECK(std::is_sorted(csr.columns + csr.offsets[r], csr.columns + csr.offsets[r + 1]));
  }
  // The rule is the whole matrix's: a row of 40 non-zeros in 80 columns is taken where the matrix
  // stays within an eighth (37 x 10 = 370 elements), refused once it is not; fewer than 64 columns
  // are refused.
  for (int64_t c = 0; c < 40; ++c) x.view()(5, c) = TestType{1};
  int64_t now = 0;
  for (const TestType v : x.flat()) now += std::signbit(v) || v != TestType{0} ? 1 : 0;
  REQUIRE(now <= 370);
  CHECK(models::cpu::sparse_nonzeros<TestType>(x.cview()) == std::optional<int64_t>(now));
  std::vector<int64_t> wide_buffer(models::cpu::sparse_rows_bytes(37, now, sizeof(TestType)) / 8 + 1);
  const SparseRowsView<TestType> wide =
      models::cpu::sparse_rows<TestType>(x.cview(), now, std::as_writable_bytes(std::span<int64_t>(wide_buffer)));
  CHECK(wide.offsets[6] - wide.offsets[5] >= 40);
  CHECK(bitwise_equal<TestType>(densify(wide).cview(), x.cview()));
  for (int64_t r = 6; now <= 370; ++r) {
    for (int64_t c = 0; c < 40; ++c) now += x.view()(r, c) == TestType{0} ? 1 : 0, x.view()(r, c) = TestType{1};
  }
  CHECK_FALSE(models::cpu::sparse_nonzeros<TestType>(x.cview()).has_value());
  const Matrix<TestType> narrow = sparse_matrix<TestType>(rng, 10, 63, 1);
  CHECK_FALSE(models::cpu::sparse_nonzeros<TestType>(narrow.cview()).has_value());
}

TEST_CASE("inference through a sparse first layer equals the dense one, whole and in chunks", "[models][sparse_input]") {
  core::Rng rng(29, {});
  const int64_t nodes = 50, features = 96;
  const graph::CsrGraph g = three_in_edges(rng, nodes);
  const Matrix<float> x = sparse_matrix<float>(rng, nodes, features, 5);
  const int64_t nnz = *models::cpu::sparse_nonzeros<float>(x.cview());
  std::vector<int64_t> buffer(models::cpu::sparse_rows_bytes(nodes, nnz, sizeof(float)) / 8 + 1);
  const SparseRowsView<float> csr =
      models::cpu::sparse_rows<float>(x.cview(), nnz, std::as_writable_bytes(std::span<int64_t>(buffer)));
  for (const auto type : {models::ModelType::kGcn, models::ModelType::kGat, models::ModelType::kSage}) {
    for (const int hidden : {8, 128}) {
      INFO("model " << models::to_string(type) << ", hidden " << hidden);
      models::ModelOptions options;
      options.type = type;
      options.layers = 2;
      options.hidden = hidden;
      options.heads = 2;
      models::GnnModel<float> model(options, features, 3, 7);
      // GCN aggregates first where its input is no wider than its output; SAGE aggregates.
      const bool linear = type == models::ModelType::kGat || (type == models::ModelType::kGcn && hidden < features);
      CHECK(model.infers_sparse_input() == linear);
      if (!linear) {
        Matrix<float> y(nodes, model.layer_out_dim(0));
        const graph::Block b = graph::full_graph_block(g, model.block_norm());
        CHECK_THROWS(model.infer_first_layer(b, csr, y.view()));
        continue;
      }
      const graph::Block b = graph::full_graph_block(g, model.block_norm());
      Matrix<float> dense(nodes, model.layer_out_dim(0)), sparse(nodes, model.layer_out_dim(0));
      for (const bool chunk : {false, true}) {
        model.infer_layer(0, b, x.cview(), dense.view(), chunk);
        model.infer_first_layer(b, csr, sparse.view(), chunk);
        for (int64_t i = 0; i < dense.size(); ++i) CHECK(sparse.flat()[i] == Approx(dense.flat()[i]).margin(1e-5));
      }
    }
  }
}

TEMPLATE_TEST_CASE("dropout from a known CSR form is the scanning CSR dropout, bitwise, long rows, -0 and NaN included",
                   "[models][sparse_input]", float, double) {
  using T = TestType;
  core::Rng rng(23, {});
  for (const int64_t cols : {64, 1433, 4500}) {
    for (const double p : {0.5, 0.1}) {
      const int64_t rows = 131;
      Matrix<T> x = sparse_matrix<T>(rng, rows, cols, cols / 40 + 1);
      for (int64_t c = 0; c < cols; c += 3) x.view()(7, c) = T{1};  // a long row: a third non-zero
      x.view()(11, 5) = -T{0};
      x.view()(12, cols - 1) = std::numeric_limits<T>::quiet_NaN();
      const auto ids = shuffled_ids(rng, rows, 2'000'003);
      const core::RngKey key = core::rng_key(8, {static_cast<uint64_t>(cols), 2});
      INFO("cols " << cols << ", p " << p);
      const auto nnz = models::cpu::sparse_nonzeros<T>(x.cview());
      REQUIRE(nnz.has_value());
      std::vector<std::byte> structure_bytes(models::cpu::sparse_rows_bytes(rows, *nnz, sizeof(T)));
      const SparseRowsView<T> structure = models::cpu::sparse_rows<T>(x.cview(), *nnz, structure_bytes);
      auto scanned_buffer = dense_buffer<T>(rows, cols);
      const auto scanned = models::cpu::dropout_forward_sparse<T>(key, static_cast<T>(p), x.cview(), ids, scanned_buffer);
      REQUIRE(scanned.has_value());
      std::vector<std::byte> known_buffer(models::cpu::sparse_rows_bytes(rows, *nnz, sizeof(T)));
      const SparseRowsView<T> known =
          models::cpu::dropout_forward_known<T>(key, static_cast<T>(p), x.cview(), structure, ids, known_buffer);
      REQUIRE(known.rows == rows);
      REQUIRE(known.nnz() == scanned->nnz());
      CHECK(std::equal(known.offsets, known.offsets + rows + 1, scanned->offsets));
      CHECK(std::equal(known.columns, known.columns + known.nnz(), scanned->columns));
      CHECK(std::memcmp(known.values, scanned->values, static_cast<std::size_t>(known.nnz()) * sizeof(T)) == 0);
    }
  }
}

TEST_CASE("a model whose input stays the same drops it out from its kept CSR form, with the scanning path's results",
          "[models][sparse_input]") {
  core::Rng rng(29, {});
  const int64_t nodes = 50, features = 128;
  const graph::CsrGraph g = three_in_edges(rng, nodes);
  const graph::Block normed = graph::full_graph_block(g, graph::BlockNorm::kGcn);
  const models::ModelOptions options = two_layers(models::ModelType::kGcn, 0.5);
  const Matrix<double> x = sparse_matrix<double>(rng, nodes, features, 4);
  const Matrix<double> r = test::random_matrix(rng, nodes, 3);
  const auto ids = shuffled_ids(rng, nodes, 7);
  const std::vector<const graph::Block*> blocks(2, &normed);
  const models::OpContext ctx;
  models::GnnModel<double> tagged(options, features, 3, 5, ctx);
  models::GnnModel<double> untagged(options, features, 3, 5, ctx);
  bool kept_form = false;  // whether the tagged model holds x's CSR form from an earlier step
  const auto step = [&](models::GnnModel<double>& model, uint64_t tag, uint64_t step_key) {
    const auto logits = model.forward(blocks, x.cview(), ids, true, core::rng_key(4, {step_key}), tag);
    CHECK(model.first_input_sparse());
    CHECK(model.first_input_known() == (tag != 0 && kept_form));
    std::vector<double> out(logits.flat().begin(), logits.flat().end());
    model.params().zero_grad();
    model.backward(blocks, r.cview());
    out.insert(out.end(), model.params().grads().begin(), model.params().grads().end());
    return out;
  };
  // Steps with new dropout keys over the same input; the kept form survives a release of the
  // model's arrays only by being rebuilt (the same results either way).
  for (const uint64_t k : {1, 2, 3}) {
    INFO("step " << k);
    kept_form = k > 1;
    CHECK(step(tagged, 1, k) == step(untagged, 0, k));
  }
  tagged.release_arrays();
  kept_form = false;
  CHECK(step(tagged, 1, 4) == step(untagged, 0, 4));
  kept_form = true;
  CHECK(step(tagged, 1, 5) == step(untagged, 0, 5));
}
