// The ops GGNN and GaAN add (ops/gated.hpp): exact values on the tiny block, and finite-difference
// checks of every backward.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/ops/gated.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST_CASE("segment_max: the elementwise max over in-edges, the first edge on ties, -1 without edges",
          "[models][gated]") {
  const graph::Block block = test::tiny_block(true);  // e0: 0->0, e1: 2->0, e2: 0->1, e3: 1->1; weights ignored
  const Matrix<double> x(4, 2, {1, 5, 9, 9, 3, 5, 7, 7});
  Matrix<double> y(3, 2);
  Matrix<int64_t> arg(3, 2);
  models::cpu::segment_max<double>(block, x.view(), y.view(), arg.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{3, 5, 9, 9, 0, 0});
  CHECK(test::values_of(arg.cview()) == std::vector<int64_t>{1, 0, 3, 3, -1, -1});  // (0, 1): tie 5 = 5, e0 first
  const Matrix<double> dy(3, 2, {1, 2, 3, 4, 5, 6});
  Matrix<double> dx(4, 2);
  models::cpu::segment_max_backward<double>(block, arg.cview(), dy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{0, 2, 3, 4, 1, 0, 0, 0});
}

TEST_CASE("spmm_mean: the plain mean over in-edges whatever the weights, 0 without edges", "[models][gated]") {
  const graph::Block block = test::tiny_block(true);
  const Matrix<double> x(4, 1, {2, 4, 6, 8});
  Matrix<double> y(3, 1);
  models::cpu::spmm_mean<double>(block, x.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{4, 3, 0});
  const Matrix<double> dy(3, 1, {2, 4, 100});
  Matrix<double> dx(4, 1);
  models::cpu::spmm_mean_backward<double>(block, dy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{3, 2, 1, 0});
}

TEST_CASE("head_scale: each head's channels times its gate, dgate sums dy * x per head", "[models][gated]") {
  const Matrix<double> gate(1, 2, {2, -1});
  const Matrix<double> x(1, 4, {1, 2, 3, 4});
  Matrix<double> y(1, 4);
  models::cpu::head_scale<double>(gate.view(), x.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{2, 4, -3, -4});
  const Matrix<double> dy(1, 4, {1, 1, 2, 0});
  Matrix<double> dx(1, 4), dgate(1, 2);
  models::cpu::head_scale_backward<double>(gate.view(), x.view(), dy.view(), dx.view(), dgate.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{2, 2, -2, 0});
  CHECK(test::values_of(dgate.cview()) == std::vector<double>{3, 6});
}

TEST_CASE("gru_cell: torch's GRUCell from its pre-activations, a narrow h padded with zeros", "[models][gated]") {
  // C = 2, h one column wide (the second is the padding).
  const Matrix<double> gi(1, 6, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6});
  const Matrix<double> gh(1, 6, {0.7, 0.8, -0.9, 1.0, 1.1, -1.2});
  const Matrix<double> h(1, 1, {0.25});
  Matrix<double> out(1, 2);
  models::cpu::gru_cell<double>(gi.view(), gh.view(), h.view(), out.view());
  for (int k = 0; k < 2; ++k) {
    const double r = sigmoid(gi(0, k) + gh(0, k));
    const double z = sigmoid(gi(0, 2 + k) + gh(0, 2 + k));
    const double n = std::tanh(gi(0, 4 + k) + r * gh(0, 4 + k));
    const double prev = k == 0 ? 0.25 : 0.0;
    CHECK(out(0, k) == Approx((1 - z) * n + z * prev).epsilon(1e-15));
  }
  Matrix<double> wide(1, 3);
  CHECK_THROWS_WITH(models::cpu::gru_cell<double>(gi.view(), gh.view(), wide.view(), out.view()),
                    Catch::Contains("do not fit a GRU of width 2"));
}

TEST_CASE("gated ops: finite-difference gradients of every backward", "[models][gated][gradcheck]") {
  core::Rng rng(5, {6});
  const graph::Block block = test::random_block(rng, 7, 11, 4, true);
  SECTION("gru_cell") {
    Matrix<double> gi = test::random_matrix(rng, 5, 9, -2, 2);
    Matrix<double> gh = test::random_matrix(rng, 5, 9, -2, 2);
    Matrix<double> h = test::random_matrix(rng, 5, 2);  // C = 3, one padded column
    const Matrix<double> r = test::random_matrix(rng, 5, 3);
    Matrix<double> out(5, 3);
    auto loss = [&] {
      models::cpu::gru_cell<double>(gi.view(), gh.view(), h.view(), out.view());
      return test::dot(out.view(), r.view());
    };
    Matrix<double> dgi(5, 9), dgh(5, 9), dh(5, 2);
    models::cpu::gru_cell_backward<double>(gi.view(), gh.view(), h.view(), r.view(), dgi.view(), dgh.view(), dh.view());
    CHECK(test::check_gradient(loss, gi.flat(), dgi.flat()).max_error < 1e-8);
    CHECK(test::check_gradient(loss, gh.flat(), dgh.flat()).max_error < 1e-8);
    CHECK(test::check_gradient(loss, h.flat(), dh.flat()).max_error < 1e-8);
  }
  SECTION("segment_max") {
    Matrix<double> x = test::random_matrix(rng, 11, 3);
    const Matrix<double> r = test::random_matrix(rng, 7, 3);
    Matrix<double> y(7, 3), dx(11, 3);
    Matrix<int64_t> arg(7, 3);
    auto loss = [&] {
      models::cpu::segment_max<double>(block, x.view(), y.view(), arg.view());
      return test::dot(y.view(), r.view());
    };
    loss();
    models::cpu::segment_max_backward<double>(block, arg.cview(), r.view(), dx.view());
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-8);
  }
  SECTION("spmm_mean") {
    Matrix<double> x = test::random_matrix(rng, 11, 3);
    const Matrix<double> r = test::random_matrix(rng, 7, 3);
    Matrix<double> y(7, 3), dx(11, 3);
    auto loss = [&] {
      models::cpu::spmm_mean<double>(block, x.view(), y.view());
      return test::dot(y.view(), r.view());
    };
    models::cpu::spmm_mean_backward<double>(block, r.view(), dx.view());
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-8);
  }
  SECTION("head_scale") {
    Matrix<double> gate = test::random_matrix(rng, 4, 2);
    Matrix<double> x = test::random_matrix(rng, 4, 6);
    const Matrix<double> r = test::random_matrix(rng, 4, 6);
    Matrix<double> y(4, 6), dx(4, 6), dgate(4, 2);
    auto loss = [&] {
      models::cpu::head_scale<double>(gate.view(), x.view(), y.view());
      return test::dot(y.view(), r.view());
    };
    models::cpu::head_scale_backward<double>(gate.view(), x.view(), r.view(), dx.view(), dgate.view());
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-8);
    CHECK(test::check_gradient(loss, gate.flat(), dgate.flat()).max_error < 1e-8);
  }
}
