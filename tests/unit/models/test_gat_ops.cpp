#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gat.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;

TEST_CASE("sddmm_add: a_src of the source plus a_dst of the destination, per head", "[models][gat]") {
  const graph::Block block = test::tiny_block(false);  // e0: 0->0, e1: 2->0, e2: 0->1, e3: 1->1
  const Matrix<double> a_src(4, 2, {1, -1, 2, -2, 3, -3, 4, -4});
  const Matrix<double> a_dst(3, 2, {10, 100, 20, 200, 30, 300});
  Matrix<double> scores(4, 2);
  models::cpu::sddmm_add<double>(block, a_src.view(), a_dst.view(), scores.view());
  CHECK(test::values_of(scores.cview()) == std::vector<double>{11, 99, 13, 97, 21, 199, 22, 198});
  // backward: da_dst sums a destination's edges, da_src a source's edges
  const Matrix<double> dscores(4, 2, {1, 2, 3, 4, 5, 6, 7, 8});
  Matrix<double> da_src(4, 2);
  Matrix<double> da_dst(3, 2);
  models::cpu::sddmm_add_backward<double>(block, dscores.view(), da_src.view(), da_dst.view());
  CHECK(test::values_of(da_dst.cview()) == std::vector<double>{4, 6, 12, 14, 0, 0});
  CHECK(test::values_of(da_src.cview()) == std::vector<double>{6, 8, 7, 8, 3, 4, 0, 0});
}

TEST_CASE("edge_softmax: normalises per destination and head, stable for large scores", "[models][gat]") {
  const graph::Block block = test::tiny_block(false);
  Matrix<double> s(4, 2, {0, 1000, std::log(3.0), 1000, -5, 7, -5, 7});
  models::cpu::edge_softmax<double>(block, s.view());
  CHECK(s(0, 0) == Approx(0.25).epsilon(1e-15));
  CHECK(s(1, 0) == Approx(0.75).epsilon(1e-15));
  CHECK(s(0, 1) == 0.5);
  CHECK(s(1, 1) == 0.5);
  CHECK(s(2, 0) == 0.5);
  CHECK(s(3, 1) == 0.5);
  Matrix<float> sf(4, 1, {88, 89, 0, 0});  // exp(89) overflows float without the max subtraction
  models::cpu::edge_softmax<float>(block, sf.view());
  CHECK(std::isfinite(sf(0, 0)));
  CHECK(sf(0, 0) + sf(1, 0) == Approx(1.0f));
}

TEST_CASE("GAT pieces: finite-difference gradients of each and of the whole chain", "[models][gat][gradcheck]") {
  core::Rng rng(3, {4});
  const graph::Block block = test::random_block(rng, 8, 12, 5, false);
  const int64_t e = block.num_edges();
  SECTION("edge_softmax") {
    Matrix<double> scores = test::random_matrix(rng, e, 2, -2, 2);
    const Matrix<double> r = test::random_matrix(rng, e, 2);
    Matrix<double> alpha(e, 2);
    auto loss = [&] {
      for (int64_t i = 0; i < alpha.size(); ++i) alpha.data()[i] = scores.data()[i];
      models::cpu::edge_softmax<double>(block, alpha.view());
      return test::dot(alpha.view(), r.view());
    };
    loss();
    Matrix<double> dscores(e, 2);
    models::cpu::edge_softmax_backward<double>(block, alpha.view(), r.view(), dscores.view());
    // in place: dscores may be dalpha itself (checked before the probe below perturbs alpha)
    Matrix<double> inplace = r.clone();
    models::cpu::edge_softmax_backward<double>(block, alpha.view(), inplace.view(), inplace.view());
    CHECK(test::values_of(inplace.cview()) == test::values_of(dscores.cview()));
    CHECK(test::check_gradient(loss, scores.flat(), dscores.flat()).max_error < 1e-6);
  }
  SECTION("sddmm_add") {
    Matrix<double> a_src = test::random_matrix(rng, 12, 2);
    Matrix<double> a_dst = test::random_matrix(rng, 8, 2);
    const Matrix<double> r = test::random_matrix(rng, e, 2);
    Matrix<double> scores(e, 2);
    auto loss = [&] {
      models::cpu::sddmm_add<double>(block, a_src.view(), a_dst.view(), scores.view());
      return test::dot(scores.view(), r.view());
    };
    Matrix<double> da_src(12, 2);
    Matrix<double> da_dst(8, 2);
    models::cpu::sddmm_add_backward<double>(block, r.view(), da_src.view(), da_dst.view());
    CHECK(test::check_gradient(loss, a_src.flat(), da_src.flat()).max_error < 1e-6);
    CHECK(test::check_gradient(loss, a_dst.flat(), da_dst.flat()).max_error < 1e-6);
  }
  SECTION("sddmm_add -> leaky_relu -> edge_softmax -> spmm_edge_weighted") {
    const int64_t heads = 2;
    const int64_t width = heads * 3;
    Matrix<double> a_src = test::random_matrix(rng, 12, heads);
    Matrix<double> a_dst = test::random_matrix(rng, 8, heads);
    Matrix<double> x = test::random_matrix(rng, 12, width);
    const Matrix<double> r = test::random_matrix(rng, 8, width);
    Matrix<double> scores(e, heads);
    Matrix<double> alpha(e, heads);
    Matrix<double> y(8, width);
    auto loss = [&] {
      models::cpu::sddmm_add<double>(block, a_src.view(), a_dst.view(), scores.view());
      models::cpu::leaky_relu<double>(scores.view(), alpha.view(), 0.2);
      models::cpu::edge_softmax<double>(block, alpha.view());
      models::cpu::spmm_edge_weighted<double>(block, alpha.view(), x.view(), y.view());
      return test::dot(y.view(), r.view());
    };
    loss();
    Matrix<double> activated(e, heads);
    models::cpu::leaky_relu<double>(scores.view(), activated.view(), 0.2);
    Matrix<double> dx(12, width);
    Matrix<double> d(e, heads);
    models::cpu::spmm_edge_weighted_backward_x<double>(block, alpha.view(), r.view(), dx.view());
    models::cpu::spmm_edge_weighted_backward_alpha<double>(block, x.view(), r.view(), d.view());
    models::cpu::edge_softmax_backward<double>(block, alpha.view(), d.view(), d.view());
    models::cpu::leaky_relu_backward<double>(activated.view(), d.view(), d.view(), 0.2);
    Matrix<double> da_src(12, heads);
    Matrix<double> da_dst(8, heads);
    models::cpu::sddmm_add_backward<double>(block, d.view(), da_src.view(), da_dst.view());
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
    CHECK(test::check_gradient(loss, a_src.flat(), da_src.flat()).max_error < 1e-6);
    CHECK(test::check_gradient(loss, a_dst.flat(), da_dst.flat()).max_error < 1e-6);
  }
}

TEST_CASE("GAT pieces: shape mismatches name the shapes", "[models][gat][errors]") {
  const graph::Block block = test::tiny_block(false);
  Matrix<double> scores(5, 2);
  CHECK(test::error_of([&] { models::cpu::edge_softmax<double>(block, scores.view()); })
            .find("[5 x 2] does not match the expected [4 x 2]") != std::string::npos);
  Matrix<double> ok(4, 2);
  CHECK(test::error_of([&] {
          models::cpu::sddmm_add<double>(block, Matrix<double>(4, 2).view(), Matrix<double>(3, 1).view(), ok.view());
        }).find("a_dst (num_dst x H): shape [3 x 1]") != std::string::npos);
}

TEST_CASE("head_dot: per-head dot products of the first rows, its backward accumulates", "[models][gat]") {
  // m: 3 rows of 2 heads x 2 channels; att: [[1, 2], [3, 4]]; a over the first 2 rows only.
  const Matrix<double> m(3, 4, {1, 2, 3, 4, 5, 6, 7, 8, 100, 100, 100, 100});
  const Matrix<double> att(2, 2, {1, 2, 3, 4});
  Matrix<double> a(2, 2);
  a.fill(std::nan(""));
  models::cpu::head_dot<double>(m.view(), att.view(), a.view());
  CHECK(test::values_of(a.cview()) == std::vector<double>{1 + 4, 9 + 16, 5 + 12, 21 + 32});
  const Matrix<double> da(2, 2, {1, 10, 2, 20});
  Matrix<double> dm(3, 4);
  dm.fill(1);
  Matrix<double> datt(2, 2);
  datt.fill(0.5);
  models::cpu::head_dot_backward<double>(m.view(), att.view(), da.view(), dm.view(), datt.view());
  // dm[n, h*C+c] += da[n, h] att[h, c]; row 2 is not touched.
  CHECK(test::values_of(dm.cview()) == std::vector<double>{2, 3, 31, 41, 3, 5, 61, 81, 1, 1, 1, 1});
  // datt[h, c] += sum_n da[n, h] m[n, h*C+c]
  CHECK(test::values_of(datt.cview()) == std::vector<double>{0.5 + 1 + 10, 0.5 + 2 + 12, 0.5 + 30 + 140, 0.5 + 40 + 160});
}

TEST_CASE("head_mean: the mean over heads and its backward", "[models][gat]") {
  const Matrix<double> x(2, 6, {1, 2, 3, 4, 5, 6, 0, 0, 3, 3, 6, 6});  // 3 heads x 2 channels
  Matrix<double> y(2, 2);
  models::cpu::head_mean<double>(x.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{3, 4, 3, 3});
  const Matrix<double> dy(2, 2, {3, 6, 9, 12});
  Matrix<double> dx(2, 6);
  models::cpu::head_mean_backward<double>(dy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  Matrix<double> bad(2, 4);
  CHECK_THROWS_AS(models::cpu::head_mean<double>(x.view(), bad.view()), core::Error);
}
