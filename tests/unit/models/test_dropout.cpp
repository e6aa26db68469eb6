#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/ops/dropout.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;

TEST_CASE("dropout: p = 0 is the identity", "[models][dropout]") {
  core::Rng rng(1, {2});
  const Matrix<double> x = test::random_matrix(rng, 5, 4);
  Matrix<double> y(5, 4);
  std::vector<uint8_t> mask(20, 7);
  models::cpu::dropout_forward<double>(core::rng_key(3, {1}), 0.0, x.view(), y.view(), mask);
  CHECK(test::values_of(y.cview()) == test::values_of(x.cview()));
  CHECK(mask == std::vector<uint8_t>(20, 1));
  Matrix<double> dx(5, 4);
  models::cpu::dropout_backward<double>(mask, 0.0, x.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == test::values_of(x.cview()));
}

TEST_CASE("dropout: mask follows uniform_at, kept values scaled, deterministic per key", "[models][dropout]") {
  const core::RngKey key = core::rng_key(42, {0, 1, 2});
  const int64_t rows = 200;
  const int64_t cols = 500;
  Matrix<float> x(rows, cols);
  x.fill(2.0f);
  Matrix<float> y(rows, cols);
  std::vector<uint8_t> mask(static_cast<std::size_t>(rows * cols));
  models::cpu::dropout_forward<float>(key, 0.3f, x.view(), y.view(), mask);
  int64_t kept = 0;
  bool consistent = true;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const bool expected = key.uniform_at(static_cast<uint64_t>(i)) >= 0.3f;
    consistent = consistent && (mask[static_cast<std::size_t>(i)] == expected) &&
                 (y.data()[i] == (expected ? 2.0f * (1.0f / (1.0f - 0.3f)) : 0.0f));
    kept += expected;
  }
  CHECK(consistent);
  // 100,000 Bernoulli(0.7) draws: standard deviation 145, so +-1000 is about 7 sigma.
  CHECK(std::abs(kept - 70000) < 1000);
  std::vector<uint8_t> again(mask.size());
  Matrix<float> y2(rows, cols);
  models::cpu::dropout_forward<float>(key, 0.3f, x.view(), y2.view(), again);
  CHECK(again == mask);
  std::vector<uint8_t> other(mask.size());
  models::cpu::dropout_forward<float>(core::rng_key(42, {0, 1, 3}), 0.3f, x.view(), y2.view(), other);
  CHECK(other != mask);
}

TEST_CASE("dropout: finite-difference gradient for a fixed mask", "[models][dropout][gradcheck]") {
  core::Rng rng(4, {4});
  Matrix<double> x = test::random_matrix(rng, 6, 5);
  const Matrix<double> r = test::random_matrix(rng, 6, 5);
  const core::RngKey key = core::rng_key(9, {9});
  Matrix<double> y(6, 5);
  std::vector<uint8_t> mask(30);
  auto loss = [&] {
    models::cpu::dropout_forward<double>(key, 0.4, x.view(), y.view(), mask);
    return test::dot(y.view(), r.view());
  };
  loss();
  Matrix<double> dx(6, 5);
  models::cpu::dropout_backward<double>(mask, 0.4, r.view(), dx.view());
  CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
}

TEST_CASE("dropout: bad p and mask sizes are refused", "[models][dropout][errors]") {
  Matrix<double> x(2, 2);
  std::vector<uint8_t> mask(4);
  std::vector<uint8_t> short_mask(3);
  CHECK(test::error_of([&] { models::cpu::dropout_forward<double>(core::RngKey{}, 1.0, x.view(), x.view(), mask); })
            .find("p must be in [0, 1), got 1") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::dropout_forward<double>(core::RngKey{}, 0.5, x.view(), x.view(), short_mask);
        }).find("mask of 3 bytes for x [2 x 2]") != std::string::npos);
}
