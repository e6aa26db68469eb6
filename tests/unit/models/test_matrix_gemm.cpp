#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/gemm.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;
using models::MatrixView;

TEST_CASE("Matrix: zero-initialised row-major storage, views, fill and explicit clone", "[models][matrix]") {
  Matrix<double> m(2, 3);
  CHECK(m.rows() == 2);
  CHECK(m.cols() == 3);
  CHECK(test::values_of(m.cview()) == std::vector<double>(6, 0.0));
  m(1, 2) = 5;
  const MatrixView<double> v = m.view();
  CHECK(v.data[5] == 5);
  CHECK(v.row(1)[2] == 5);
  CHECK(v(1, 2) == 5);
  const MatrixView<const double> c = v;  // non-const converts to const
  CHECK(c(1, 2) == 5);
  m.fill(1.5);
  const Matrix<double> copy = m.clone();
  m(0, 0) = 0;
  CHECK(copy(0, 0) == 1.5);
  CHECK(test::error_of([] { Matrix<float>(2, 3, std::vector<float>(5)); }).find("5 values for a [2 x 3]") !=
        std::string::npos);
}

TEST_CASE("gemm: all four transpose combinations against hand-computed products", "[models][gemm]") {
  // a = [[1, 2, 3], [4, 5, 6]] (2x3), b = [[1, 0], [0, 1], [1, 1]] (3x2): a b = [[4, 5], [10, 11]]
  const Matrix<double> a(2, 3, {1, 2, 3, 4, 5, 6});
  const Matrix<double> b(3, 2, {1, 0, 0, 1, 1, 1});
  const Matrix<double> at(3, 2, {1, 4, 2, 5, 3, 6});
  const Matrix<double> bt(2, 3, {1, 0, 1, 0, 1, 1});
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      Matrix<double> c(2, 2, {1, 1, 1, 1});
      models::cpu::gemm<double>(ta, tb, 2.0, ta ? at.view() : a.view(), tb ? bt.view() : b.view(), 0.5, c.view());
      CHECK(test::values_of(c.cview()) == std::vector<double>{8.5, 10.5, 20.5, 22.5});
    }
  }
  // float, beta = 0 ignores NaN in c
  const Matrix<float> af(2, 3, {1, 2, 3, 4, 5, 6});
  const Matrix<float> bf(3, 2, {1, 0, 0, 1, 1, 1});
  Matrix<float> cf(2, 2);
  cf.fill(std::numeric_limits<float>::quiet_NaN());
  models::cpu::gemm<float>(false, false, 1.0f, af.view(), bf.view(), 0.0f, cf.view());
  CHECK(test::values_of(cf.cview()) == std::vector<float>{4, 5, 10, 11});
  // K = 0: c = beta * c
  Matrix<double> c0(2, 2, {1, 2, 3, 4});
  models::cpu::gemm<double>(false, false, 1.0, Matrix<double>(2, 0).view(), Matrix<double>(0, 2).view(), 2.0, c0.view());
  CHECK(test::values_of(c0.cview()) == std::vector<double>{2, 4, 6, 8});
}

TEST_CASE("gemm: shape mismatches name every shape", "[models][gemm][errors]") {
  const Matrix<double> a(2, 3);
  const Matrix<double> b(2, 2);
  Matrix<double> c(2, 2);
  const std::string message =
      test::error_of([&] { models::cpu::gemm<double>(false, false, 1.0, a.view(), b.view(), 0.0, c.view()); });
  CHECK(message.find("[2 x 3]") != std::string::npos);
  CHECK(message.find("[2 x 2]") != std::string::npos);
  CHECK(test::error_of([&] { models::cpu::gemm<double>(true, false, 1.0, a.view(), b.view(), 0.0, c.view()); })
            .find("[2 x 3]^T") != std::string::npos);
}
