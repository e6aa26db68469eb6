#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/ops/loss.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;
using models::MatrixView;

TEST_CASE("log_softmax_nll: mean over the listed rows, stable, zero gradient elsewhere", "[models][loss]") {
  const Matrix<double> logits(3, 4, {0, 0, 0, 0, 1000, 0, 0, 0, 5, 6, 7, 8});
  const std::vector<int32_t> labels{2, 0, 3};
  const std::vector<int32_t> rows{0, 1};
  Matrix<double> d(3, 4);
  d.fill(9);
  const double loss = models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, d.view());
  CHECK(loss == Approx(std::log(4.0) / 2).epsilon(1e-14));
  CHECK(d(0, 0) == Approx(0.125).epsilon(1e-14));
  CHECK(d(0, 2) == Approx(-0.375).epsilon(1e-14));
  CHECK(std::abs(d(1, 0)) < 1e-300);
  CHECK(d(1, 1) == 0);  // exp(-1000) underflows to 0
  CHECK(test::values_of(MatrixView<const double>(d.data() + 8, 1, 4)) == std::vector<double>(4, 0.0));
  Matrix<float> df(3, 4);
  const Matrix<float> lf(3, 4);
  CHECK(models::cpu::log_softmax_nll<float>(lf.view(), labels, std::vector<int32_t>{}, df.view()) == 0.0f);
}

TEST_CASE("log_softmax_nll: weighted sum with gradients scaled per row, wrong weight count throws", "[models][loss]") {
  const Matrix<double> logits(3, 4, {0, 0, 0, 0, 1000, 0, 0, 0, 5, 6, 7, 8});
  const std::vector<int32_t> labels{2, 0, 3};
  const std::vector<int32_t> rows{0, 2};
  const std::vector<float> weights{0.25f, 2.0f};
  Matrix<double> d(3, 4);
  const double loss = models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, weights, d.view());
  const double nll2 = std::log(std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0);  // label 3 is the max
  CHECK(loss == Approx(0.25 * std::log(4.0) + 2.0 * nll2).epsilon(1e-14));
  CHECK(d(0, 2) == Approx(0.25 * -0.75).epsilon(1e-14));
  CHECK(d(2, 3) == Approx(2.0 * (1.0 / (std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0) + 1.0) - 1.0)).epsilon(1e-12));
  CHECK(test::values_of(MatrixView<const double>(d.data() + 4, 1, 4)) == std::vector<double>(4, 0.0));
  CHECK_THROWS_WITH(models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, std::vector<float>{1.0f}, d.view()),
                    Catch::Contains("1 weights for 2 rows"));
}

TEST_CASE("bce_with_logits: mean over rows x classes, stable for large logits", "[models][loss]") {
  const Matrix<double> logits(2, 2, {0, 2, -1000, 1000});
  const Matrix<uint8_t> targets(2, 2, {1, 0, 0, 0});
  Matrix<double> d(2, 2);
  const double loss = models::cpu::bce_with_logits<double>(logits.view(), targets.view(), std::vector<int32_t>{0}, {},
                                                           d.view());
  CHECK(loss == Approx((std::log(2.0) + 2 + std::log1p(std::exp(-2.0))) / 2).epsilon(1e-14));
  CHECK(d(0, 0) == -0.25);
  CHECK(d(0, 1) == Approx(0.5 / (1 + std::exp(-2.0))).epsilon(1e-14));
  CHECK(d(1, 0) == 0);
  const double big = models::cpu::bce_with_logits<double>(logits.view(), targets.view(), std::vector<int32_t>{1}, {},
                                                          d.view());
  CHECK(big == 500);  // (0 + 1000) / 2
  CHECK(d(1, 0) == 0);
  CHECK(d(1, 1) == 0.5);
  // Weighted: row k counts weights[k] / classes (GraphSAINT's normalisation, a split batch's parts).
  const double weighted = models::cpu::bce_with_logits<double>(logits.view(), targets.view(), std::vector<int32_t>{1},
                                                               std::vector<float>{0.25f}, d.view());
  CHECK(weighted == 125);  // 0.25 * 1000 / 2
  CHECK(d(1, 1) == 0.125);
  CHECK_THROWS_WITH(models::cpu::bce_with_logits<double>(logits.view(), targets.view(), std::vector<int32_t>{0, 1},
                                                         std::vector<float>{1.0f}, d.view()),
                    Catch::Contains("1 weights for 2 rows"));
}

TEST_CASE("losses: finite-difference gradients", "[models][loss][gradcheck]") {
  core::Rng rng(12, {13});
  Matrix<double> logits = test::random_matrix(rng, 6, 5, -3, 3);
  const std::vector<int32_t> rows{4, 0, 2, 5};
  Matrix<double> d(6, 5);
  Matrix<double> scratch(6, 5);
  SECTION("log_softmax_nll") {
    std::vector<int32_t> labels(6);
    for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(5));
    auto loss = [&] { return models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, scratch.view()); };
    loss();
    models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, d.view());
    CHECK(test::check_gradient(loss, logits.flat(), d.flat()).max_error < 1e-6);
  }
  SECTION("bce_with_logits") {
    Matrix<uint8_t> targets(6, 5);
    for (uint8_t& t : targets.flat()) t = rng.bernoulli(0.5) ? 1 : 0;
    for (const std::vector<float>& weights : {std::vector<float>{}, std::vector<float>{0.5f, 2.0f, 0.25f, 1.0f}}) {
      auto loss = [&] {
        return models::cpu::bce_with_logits<double>(logits.view(), targets.view(), rows, weights, scratch.view());
      };
      models::cpu::bce_with_logits<double>(logits.view(), targets.view(), rows, weights, d.view());
      CHECK(test::check_gradient(loss, logits.flat(), d.flat()).max_error < 1e-6);
    }
  }
}

TEST_CASE("accuracy: argmax with ties to the lowest index, label -1 skipped", "[models][metrics]") {
  const Matrix<double> logits(5, 3, {1, 3, 3, 5, 0, 0, 0, 0, 1, 0, 2, 1, 0, 0, 9});
  const std::vector<int32_t> labels{1, 2, -1, 1, 2};
  CHECK(models::cpu::accuracy<double>(logits.cview(), labels, std::vector<int32_t>{0, 1, 2, 3}) == Approx(2.0 / 3));
  CHECK(models::cpu::accuracy<double>(logits.cview(), labels, std::vector<int32_t>{2}) == 0.0);
  const Matrix<float> tie(1, 3, {2, 2, 2});
  CHECK(models::cpu::accuracy<float>(tie.cview(), std::vector<int32_t>{0}, std::vector<int32_t>{0}) == 1.0);
}

TEST_CASE("micro_f1: counts over rows x classes with logit > 0 predicted positive", "[models][metrics]") {
  const Matrix<double> logits(3, 2, {1, -1, 2, 3, 5, 5});
  const Matrix<uint8_t> targets(3, 2, {1, 1, 0, 1, 0, 0});
  CHECK(models::cpu::micro_f1<double>(logits.cview(), targets.cview(), std::vector<int32_t>{0, 1}) == Approx(2.0 / 3));
  const Matrix<double> negative(3, 2, {-1, -1, -1, -1, 0, 0});
  const Matrix<uint8_t> none(3, 2);
  CHECK(models::cpu::micro_f1<double>(negative.cview(), none.cview(), std::vector<int32_t>{0, 2}) == 0.0);
}

TEST_CASE("losses and metrics: bad rows, labels and shapes are refused", "[models][loss][metrics][errors]") {
  const Matrix<double> logits(2, 3);
  Matrix<double> d(2, 3);
  const std::vector<int32_t> labels{0, 1};
  CHECK(test::error_of([&] {
          models::cpu::log_softmax_nll<double>(logits.view(), labels, std::vector<int32_t>{0, 2}, d.view());
        }).find("row 2 at position 1 is outside [0, 2)") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::log_softmax_nll<double>(logits.view(), labels, std::vector<int32_t>{1, 1}, d.view());
        }).find("row 1 is listed twice") != std::string::npos);
  CHECK(test::error_of([&] {
          models::cpu::log_softmax_nll<double>(logits.view(), std::vector<int32_t>{0, 3}, std::vector<int32_t>{1},
                                               d.view());
        }).find("row 1 has label 3, outside [0, 3)") != std::string::npos);
  Matrix<double> wrong(3, 2);
  CHECK(test::error_of([&] {
          models::cpu::log_softmax_nll<double>(logits.view(), labels, std::vector<int32_t>{0}, wrong.view());
        }).find("dlogits [3 x 2] does not match logits [2 x 3]") != std::string::npos);
  const Matrix<uint8_t> targets(2, 2);
  CHECK(test::error_of([&] {
          models::cpu::micro_f1<double>(logits.cview(), targets.cview(), std::vector<int32_t>{0});
        }).find("targets [2 x 2] do not match logits [2 x 3]") != std::string::npos);
}

TEST_CASE("multi_label_f1: micro and macro at threshold 0.5 and with each row's true label count", "[models][metrics]") {
  // Row 0: true {0, 1}; row 1: true {2}. Logits > 0 predict {0} and {1, 2}.
  const Matrix<double> logits(2, 3, {2, -1, -3, -1, 0.5, 4});
  const Matrix<uint8_t> targets(2, 3, {1, 1, 0, 0, 0, 1});
  const std::vector<int32_t> rows{0, 1};
  const auto at_half = models::cpu::multi_label_f1<double>(logits.cview(), targets.cview(), rows, false);
  // TP 2 (0/0, 1/2), FP 1 (1/1), FN 1 (0/1): micro 4 / 6; per class F1: 1, 0, 1 -> macro 2 / 3.
  CHECK(at_half.micro == Approx(4.0 / 6));
  CHECK(at_half.macro == Approx(2.0 / 3));
  CHECK(at_half.micro == Approx(models::cpu::micro_f1<double>(logits.cview(), targets.cview(), rows)));
  // Top-k: row 0 takes its 2 largest {0, 1}, row 1 its largest {2}: every prediction right.
  const auto top = models::cpu::multi_label_f1<double>(logits.cview(), targets.cview(), rows, true);
  CHECK(top.micro == 1.0);
  CHECK(top.macro == 1.0);
}
