#include <catch2/catch.hpp>

#include <oneapi/tbb/global_control.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;

TEST_CASE("bias_add and its backward: exact values", "[models][elementwise]") {
  Matrix<double> y(2, 3, {1, 2, 3, 4, 5, 6});
  const std::vector<double> bias{10, 20, 30};
  models::cpu::bias_add<double>(y.view(), bias);
  CHECK(test::values_of(y.cview()) == std::vector<double>{11, 22, 33, 14, 25, 36});
  std::vector<double> dbias(3, 99);
  models::cpu::bias_add_backward<double>(y.view(), dbias);
  CHECK(dbias == std::vector<double>{25, 47, 69});
  std::vector<float> empty(2, 99);
  models::cpu::bias_add_backward<float>(Matrix<float>(0, 2).view(), empty);
  CHECK(empty == std::vector<float>{0, 0});
}

TEST_CASE("activations: exact forward values, in place, and backward from the output", "[models][elementwise]") {
  const Matrix<double> x(1, 4, {-2, -0.5, 0, 3});
  Matrix<double> y(1, 4);
  const Matrix<double> dy(1, 4, {1, 2, 3, 4});
  Matrix<double> dx(1, 4);

  models::cpu::relu<double>(x.view(), y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{0, 0, 0, 3});
  models::cpu::relu_backward<double>(y.view(), dy.view(), dx.view());
  CHECK(test::values_of(dx.cview()) == std::vector<double>{0, 0, 0, 4});

  models::cpu::leaky_relu<double>(x.view(), y.view(), 0.25);
  CHECK(test::values_of(y.cview()) == std::vector<double>{-0.5, -0.125, 0, 3});
  models::cpu::leaky_relu_backward<double>(y.view(), dy.view(), dx.view(), 0.25);
  CHECK(test::values_of(dx.cview()) == std::vector<double>{0.25, 0.5, 0.75, 4});

  models::cpu::elu<double>(x.view(), y.view());
  CHECK(y(0, 0) == Approx(std::exp(-2.0) - 1).epsilon(1e-15));
  CHECK(y(0, 2) == 0);
  CHECK(y(0, 3) == 3);
  models::cpu::elu_backward<double>(y.view(), dy.view(), dx.view());
  CHECK(dx(0, 0) == Approx(std::exp(-2.0)).epsilon(1e-15));
  CHECK(dx(0, 2) == 3);  // left derivative alpha * exp(0) at 0
  CHECK(dx(0, 3) == 4);

  Matrix<float> inplace(1, 3, {-1, 0.5f, 2});
  models::cpu::leaky_relu<float>(inplace.view(), inplace.view(), 0.5f);
  CHECK(test::values_of(inplace.cview()) == std::vector<float>{-0.5f, 0.5f, 2});
}

TEST_CASE("bias and activations: finite-difference gradients", "[models][elementwise][gradcheck]") {
  core::Rng rng(5, {6});
  const Matrix<double> r = test::random_matrix(rng, 7, 5);
  SECTION("bias_add") {
    const Matrix<double> base = test::random_matrix(rng, 7, 5);
    std::vector<double> bias{0.1, -0.2, 0.3, 0.4, -0.5};
    Matrix<double> y(7, 5);
    auto loss = [&] {
      for (int64_t i = 0; i < y.size(); ++i) y.data()[i] = base.data()[i];
      models::cpu::bias_add<double>(y.view(), bias);
      return test::dot(y.view(), r.view());
    };
    std::vector<double> dbias(5);
    models::cpu::bias_add_backward<double>(r.view(), dbias);
    CHECK(test::check_gradient(loss, bias, dbias).max_error < 1e-6);
  }
  // Inputs at least 0.01 away from the kink at 0, far beyond eps.
  Matrix<double> x = test::random_matrix(rng, 7, 5, -2, 2, 0.01);
  Matrix<double> y(7, 5);
  Matrix<double> dx(7, 5);
  SECTION("relu") {
    auto loss = [&] {
      models::cpu::relu<double>(x.view(), y.view());
      return test::dot(y.view(), r.view());
    };
    loss();
    models::cpu::relu_backward<double>(y.view(), r.view(), dx.view());
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
  }
  SECTION("elu") {
    auto loss = [&] {
      models::cpu::elu<double>(x.view(), y.view(), 1.5);
      return test::dot(y.view(), r.view());
    };
    loss();
    models::cpu::elu_backward<double>(y.view(), r.view(), dx.view(), 1.5);
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
  }
  SECTION("leaky_relu") {
    auto loss = [&] {
      models::cpu::leaky_relu<double>(x.view(), y.view(), 0.2);
      return test::dot(y.view(), r.view());
    };
    loss();
    models::cpu::leaky_relu_backward<double>(y.view(), r.view(), dx.view(), 0.2);
    CHECK(test::check_gradient(loss, x.flat(), dx.flat()).max_error < 1e-6);
  }
}

TEST_CASE("bias_add_backward: bitwise identical with 1 and 2 threads", "[models][elementwise][determinism][tsan]") {
  core::Rng rng(8, {9});
  const Matrix<double> dy = test::random_matrix(rng, 10000, 7);
  auto run = [&](int threads) {
    const oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism,
                                            static_cast<std::size_t>(threads));
    std::vector<double> dbias(7);
    models::cpu::bias_add_backward<double>(dy.view(), dbias);
    return dbias;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("elementwise ops: shape and parameter errors", "[models][elementwise][errors]") {
  Matrix<double> y(2, 3);
  const std::vector<double> bias(2);
  CHECK(test::error_of([&] { models::cpu::bias_add<double>(y.view(), bias); }).find("2 values for y [2 x 3]") !=
        std::string::npos);
  Matrix<double> other(3, 2);
  CHECK(test::error_of([&] { models::cpu::relu<double>(y.view(), other.view()); })
            .find("input [2 x 3] and output [3 x 2]") != std::string::npos);
  CHECK(test::error_of([&] { models::cpu::leaky_relu<double>(y.view(), y.view(), -1.0); }).find("slope must be >= 0") !=
        std::string::npos);
}

TEST_CASE("copy_rows gathers, scatters or both, and refuses a row out of range", "[models][elementwise]") {
  const models::OpContext& ctx = models::OpContext::host();
  const Matrix<float> src(4, 3, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  const std::vector<int32_t> ids{3, 0, 3, 2};
  Matrix<float> out(4, 3);
  models::ops::copy_rows<float>(ctx, src.cview(), ids, out.view(), {});  // gather
  CHECK(test::values_of(out.cview()) == std::vector<float>{30, 31, 32, 0, 1, 2, 30, 31, 32, 20, 21, 22});
  Matrix<float> scattered(4, 3, std::vector<float>(12, -1));
  const std::vector<int32_t> to{2, 0};
  models::ops::copy_rows<float>(ctx, src.cview(), {}, scattered.view(), to);  // rows 0, 1 to 2, 0
  CHECK(test::values_of(scattered.cview()) == std::vector<float>{10, 11, 12, -1, -1, -1, 0, 1, 2, -1, -1, -1});
  const std::vector<int32_t> from{3, 1}, into{1, 3};
  models::ops::copy_rows<float>(ctx, src.cview(), from, scattered.view(), into);  // both
  CHECK(test::values_of(scattered.cview()) == std::vector<float>{10, 11, 12, 30, 31, 32, 0, 1, 2, 10, 11, 12});
  const std::vector<int32_t> bad{1, 4};
  Matrix<float> two(2, 3);
  CHECK_THROWS_WITH(models::ops::copy_rows<float>(ctx, src.cview(), bad, two.view(), {}),
                    Catch::Contains("source row 4 (position 1) is outside [0, 4)"));
  CHECK_THROWS_WITH(models::ops::copy_rows<float>(ctx, src.cview(), {}, two.view(), bad),
                    Catch::Contains("destination row 4 (position 1) is outside [0, 2)"));
  CHECK_THROWS_WITH(models::ops::copy_rows<float>(ctx, src.cview(), ids, two.view(), to), Catch::Contains("4 source rows for 2"));
}

TEST_CASE("widen_16bit turns every fp16 and bf16 bit pattern into its float exactly", "[models][elementwise]") {
  const models::OpContext& ctx = models::OpContext::host();
  std::vector<uint16_t> bits(65536);
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  std::vector<float> out(bits.size());
  for (const bool bf16 : {false, true}) {
    models::ops::widen_16bit(ctx, bits.data(), bf16, static_cast<int64_t>(bits.size()), out.data());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const float want = bf16 ? graph::bfloat16_to_float(bits[i]) : graph::half_to_float(bits[i]);
      if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(out[i]) && !(std::isnan(want) && std::isnan(out[i]))) {
        ++mismatches;
      }
    }
    CHECK(mismatches == 0);
    CHECK(out[0x3C00] == (bf16 ? graph::bfloat16_to_float(0x3C00) : 1.0f));
  }
}
