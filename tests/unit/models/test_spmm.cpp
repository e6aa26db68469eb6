#include <catch2/catch.hpp>

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/gated.hpp"
#include "gnnpipe/models/ops/spmm.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;

namespace {

const Matrix<double> kX(4, 2, {1, 2, 3, 4, 5, 6, 7, 8});    // num_src x 2
const Matrix<double> kDy(3, 2, {1, 1, 2, 3, 5, 7});         // num_dst x 2

}  // namespace

TEST_CASE("spmm: weighted and unweighted sums over in-edges, empty rows are zero", "[models][spmm]") {
  Matrix<double> y(3, 2);
  y.fill(9);
  models::cpu::spmm<double>(test::tiny_block(true), kX.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{10.5, 13, 1.75, 3, 0, 0});
  models::cpu::spmm<double>(test::tiny_block(false), kX.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{6, 8, 4, 6, 0, 0});
  // float instantiation
  const Matrix<float> xf(4, 2, {1, 2, 3, 4, 5, 6, 7, 8});
  Matrix<float> yf(3, 2);
  models::cpu::spmm<float>(test::tiny_block(true), xf.view(), yf.view());
  CHECK(test::values_of(yf.cview()) == std::vector<float>{10.5f, 13, 1.75f, 3, 0, 0});
}

TEST_CASE("spmm_bias: the bias, then ReLU where asked, in the store, and empty rows get the bias", "[models][spmm]") {
  const Matrix<double> bias(1, 2, {-11, 0.5});
  Matrix<double> y(3, 2);
  y.fill(9);
  models::cpu::spmm_bias<double>(test::tiny_block(true), kX.view(), bias.flat(), false, y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{-0.5, 13.5, -9.25, 3.5, -11, 0.5});
  models::cpu::spmm_bias<double>(test::tiny_block(true), kX.view(), bias.flat(), true, y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{0, 13.5, 0, 3.5, 0, 0.5});
  CHECK(test::error_of([&] {
          models::cpu::spmm_bias<double>(test::tiny_block(true), kX.view(), std::span<const double>(kX.flat()).first(3),
                                         false, y.view());
        }).find("spmm_bias: bias of 3 values for 2 columns") != std::string::npos);
}

TEST_CASE("spmm_bias: bitwise spmm, bias_add and relu in turn", "[models][spmm]") {
  core::Rng rng(5, {3});
  const graph::Block block = test::random_block(rng, 300, 500, 9, true);
  auto check = [&]<class T>(T) {
    const Matrix<double> xd = test::random_matrix(rng, 500, 13);
    const Matrix<double> bd = test::random_matrix(rng, 1, 13);
    Matrix<T> x(500, 13), bias(1, 13);
    for (std::size_t i = 0; i < x.flat().size(); ++i) x.flat()[i] = static_cast<T>(xd.flat()[i]);
    for (std::size_t i = 0; i < bias.flat().size(); ++i) bias.flat()[i] = static_cast<T>(bd.flat()[i]);
    for (const bool relu : {false, true}) {
      Matrix<T> expected(300, 13), got(300, 13);
      models::cpu::spmm<T>(block, x.view(), expected.view());
      models::cpu::bias_add<T>(expected.view(), bias.flat());
      if (relu) models::cpu::relu<T>(expected.view(), expected.view());
      models::cpu::spmm_bias<T>(block, x.view(), bias.flat(), relu, got.view());
      CHECK(test::values_of(got.cview()) == test::values_of(expected.cview()));
    }
  };
  check(float{});
  check(double{});
}

TEST_CASE("spmm_bias_scaled and spmm_backward_scaled: bitwise the ops they fuse, at every width",
          "[models][spmm]") {
  core::Rng rng(7, {4});
  const graph::Block block = test::random_block(rng, 120, 200, 9, true);
  std::vector<float> factors(200);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const float pick[] = {0.0f, 1.25f, -2.0f, 2.0f / 3.0f, 1.0f};
    factors[i] = pick[i % 5];
  }
  auto check = [&]<class T>(T, int64_t cols) {
    INFO("width " << cols << (sizeof(T) == 4 ? " float" : " double"));
    const auto random = [&](int64_t rows) {
      const Matrix<double> d = test::random_matrix(rng, rows, cols);
      Matrix<T> m(rows, cols);
      for (std::size_t i = 0; i < m.flat().size(); ++i) m.flat()[i] = static_cast<T>(d.flat()[i]);
      return m;
    };
    const Matrix<T> x = random(200), dy = random(120), g0 = random(200);
    Matrix<T> bias = random(1);
    for (const bool relu : {false, true}) {
      Matrix<T> scaled(200, cols), want(120, cols), got(120, cols);
      models::cpu::scale_rows<T>(x.view(), factors, scaled.view());
      models::cpu::spmm_bias<T>(block, scaled.view(), bias.flat(), relu, want.view());
      models::cpu::spmm_bias_scaled<T>(block, x.view(), factors, bias.flat(), relu, got.view());
      CHECK(test::values_of(got.cview()) == test::values_of(want.cview()));
    }
    Matrix<T> dx(200, cols);
    models::cpu::spmm_backward<T>(block, dy.view(), dx.view());
    for (const bool empty : {false, true}) {
      const std::span<const float> f = empty ? std::span<const float>{} : std::span<const float>(factors);
      for (const bool accumulate : {false, true}) {
        Matrix<T> want(200, cols), got(200, cols);
        std::copy(g0.flat().begin(), g0.flat().end(), want.flat().begin());
        std::copy(g0.flat().begin(), g0.flat().end(), got.flat().begin());
        if (accumulate && empty) {
          models::cpu::axpy<T>(T{1}, dx.view(), want.view());
        } else if (accumulate) {
          models::cpu::add_scaled_rows<T>(dx.view(), f, want.view());
        } else if (empty) {
          std::copy(dx.flat().begin(), dx.flat().end(), want.flat().begin());
        } else {
          models::cpu::scale_rows<T>(dx.view(), f, want.view());
        }
        models::cpu::spmm_backward_scaled<T>(block, dy.view(), f, accumulate, got.view());
        CHECK(test::values_of(got.cview()) == test::values_of(want.cview()));
      }
    }
  };
  for (const int64_t cols : {1, 7, 13, 64, 67, 256}) {
    check(float{}, cols);
    check(double{}, cols);
  }
  Matrix<float> x(200, 3), y(120, 3), b(1, 3), dy(120, 3), g(200, 3);
  CHECK(test::error_of([&] {
          models::cpu::spmm_bias_scaled<float>(block, x.view(), std::span(factors).first(5), b.flat(), false,
                                               y.view());
        }).find("spmm_bias_scaled: bias of 3 values for 3 columns, 5 factors for 200 rows") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::spmm_backward_scaled<float>(block, dy.view(), std::span(factors).first(5), true, g.view());
        }).find("spmm_backward_scaled: 5 factors for 200 source rows") != std::string::npos);
}

TEST_CASE("spmm_backward: walks the transpose, sources without edges get zero", "[models][spmm]") {
  Matrix<double> dx(4, 2);
  dx.fill(9);
  models::cpu::spmm_backward<double>(test::tiny_block(true), kDy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{2.5, 3.5, 0.5, 0.75, 2, 2, 0, 0});
  models::cpu::spmm_backward<double>(test::tiny_block(false), kDy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{3, 4, 2, 3, 1, 1, 0, 0});
}

TEST_CASE("spmm_edge_weighted: per-head edge weights, and both of its gradients", "[models][spmm][gat]") {
  // H = 2, C = 1; alpha per edge (e0: 0->0, e1: 2->0, e2: 0->1, e3: 1->1)
  const Matrix<double> alpha(4, 2, {1, 0, 0, 1, 0.5, 0.5, 2, 1});
  Matrix<double> y(3, 2);
  models::cpu::spmm_edge_weighted<double>(test::tiny_block(true), alpha.view(), kX.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{1, 6, 6.5, 5, 0, 0});
  Matrix<double> dalpha(4, 2);
  models::cpu::spmm_edge_weighted_backward_alpha<double>(test::tiny_block(true), kX.view(), kDy.view(), dalpha.view());
  CHECK(test::values_of(dalpha.cview()) == std::vector<double>{1, 2, 5, 6, 2, 6, 6, 12});
  Matrix<double> dx(4, 2);
  models::cpu::spmm_edge_weighted_backward_x<double>(test::tiny_block(true), alpha.view(), kDy.view(), dx.view());
  // dx0 = alpha(e0) * dy0 + alpha(e2) * dy1 = [1, 0] + [1, 1.5]; dx1 = alpha(e3) * dy1; dx2 = alpha(e1) * dy0
  CHECK(test::values_of(dx.cview()) == std::vector<double>{2, 1.5, 4, 3, 0, 1, 0, 0});
}

TEST_CASE("spmm and spmm_edge_weighted: finite-difference gradients on random blocks", "[models][spmm][gradcheck]") {
  core::Rng rng(7, {1});
  for (const bool weighted : {false, true}) {
    const graph::Block block = test::random_block(rng, 9, 14, 5, weighted);
    Matrix<double> x = test::random_matrix(rng, 14, 3);
    const Matrix<double> r = test::random_matrix(rng, 9, 3);
    Matrix<double> y(9, 3);
    auto loss = [&] {
      models::cpu::spmm<double>(block, x.view(), y.view());
      return test::dot(y.view(), r.view());
    };
    Matrix<double> dx(14, 3);
    models::cpu::spmm_backward<double>(block, r.view(), dx.view());
    const test::GradientCheck check = test::check_gradient(loss, x.flat(), dx.flat());
    INFO("weighted " << weighted << " worst " << check.worst << ": " << check.numeric << " vs " << check.analytic);
    CHECK(check.max_error < 1e-6);
  }
  const graph::Block block = test::random_block(rng, 9, 14, 5, true);
  Matrix<double> alpha = test::random_matrix(rng, block.num_edges(), 2);
  Matrix<double> x = test::random_matrix(rng, 14, 6);  // 2 heads x 3 channels
  const Matrix<double> r = test::random_matrix(rng, 9, 6);
  Matrix<double> y(9, 6);
  auto loss = [&] {
    models::cpu::spmm_edge_weighted<double>(block, alpha.view(), x.view(), y.view());
    return test::dot(y.view(), r.view());
  };
  Matrix<double> dx(14, 6);
  Matrix<double> dalpha(block.num_edges(), 2);
  models::cpu::spmm_edge_weighted_backward_x<double>(block, alpha.view(), r.view(), dx.view());
  models::cpu::spmm_edge_weighted_backward_alpha<double>(block, x.view(), r.view(), dalpha.view());
  CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
  CHECK(test::check_gradient(loss, alpha.flat(), dalpha.flat()).max_error < 1e-6);
}

TEST_CASE("spmm and spmm_backward: bitwise identical with 1 and 2 threads", "[models][spmm][determinism][tsan]") {
  core::Rng rng(11, {2});
  const graph::Block block = test::random_block(rng, 3000, 5000, 12, true);
  const Matrix<double> x = test::random_matrix(rng, 5000, 16);
  const Matrix<double> dy = test::random_matrix(rng, 3000, 16);
  std::vector<float> factors(5000);
  for (std::size_t i = 0; i < factors.size(); ++i) factors[i] = static_cast<float>(i % 3) * 0.75f;
  auto run = [&](int threads) {
    const oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism,
                                            static_cast<std::size_t>(threads));
    Matrix<double> y(3000, 16), y_scaled(3000, 16);
    Matrix<double> dx(5000, 16), g(5000, 16);
    const std::vector<double> bias(16, 0.5);
    models::cpu::spmm<double>(block, x.view(), y.view());
    models::cpu::spmm_backward<double>(block, dy.view(), dx.view());
    models::cpu::spmm_bias_scaled<double>(block, x.view(), factors, bias, true, y_scaled.view());
    models::cpu::spmm_backward_scaled<double>(block, dy.view(), factors, false, g.view());
    models::cpu::spmm_backward_scaled<double>(block, dy.view(), factors, true, g.view());
    std::vector<double> out;
    for (const Matrix<double>* m : {&y, &dx, &y_scaled, &g}) {
      const std::vector<double> v = test::values_of(m->cview());
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("spmm ops: shape mismatches name the shapes", "[models][spmm][errors]") {
  const graph::Block block = test::tiny_block(true);
  Matrix<double> y(3, 2);
  CHECK(test::error_of([&] { models::cpu::spmm<double>(block, Matrix<double>(3, 2).view(), y.view()); })
            .find("[3 x 2] does not match the expected [4 x 2]") != std::string::npos);
  Matrix<double> dx(4, 3);
  CHECK(test::error_of([&] { models::cpu::spmm_backward<double>(block, kDy.view(), dx.view()); })
            .find("[4 x 3] does not match the expected [4 x 2]") != std::string::npos);
  Matrix<double> y3(3, 2);
  CHECK(test::error_of([&] {
          models::cpu::spmm_edge_weighted<double>(block, Matrix<double>(4, 3).view(), kX.view(), y3.view());
        }).find("2 feature columns do not split into 3 heads") != std::string::npos);
}
