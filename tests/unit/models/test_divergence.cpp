// MH-Aug's consistency ops (issue #41) on the CPU: softmax_kl, softmax_entropy,
// softmax_entropy_scatter (cpu twins in divergence.hpp) and scale_rows (elementwise.hpp), through
// ops:: on the host context: closed forms, finite-difference gradients, the accumulate / overwrite
// contract, weights and scale, determinism across thread counts, and the failure paths.
#include <catch2/catch.hpp>

#include <oneapi/tbb/global_control.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "finite_difference.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/divergence.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;
using models::MatrixView;
namespace ops = models::ops;

namespace {

const models::OpContext& host() { return models::OpContext::host(); }

// ops::softmax_kl's loss, with the gradients written into dp (accumulating) and dq.
template <class T>
double kl(const Matrix<T>& p, const Matrix<T>& q, const std::vector<float>& w, T scale, Matrix<T>& dp, Matrix<T>& dq) {
  double loss = std::numeric_limits<double>::quiet_NaN();
  ops::softmax_kl<T>(host(), p.cview(), q.cview(), w, scale, dp.view(), dq.view(), nullptr, &loss);
  return loss;
}

template <class T>
double entropy(const Matrix<T>& x, const std::vector<float>& w, T scale, Matrix<T>& d) {
  double loss = std::numeric_limits<double>::quiet_NaN();
  ops::softmax_entropy<T>(host(), x.cview(), w, scale, d.view(), nullptr, &loss);
  return loss;
}

// p = softmax([0, log 3]) = [1/4, 3/4]; q = softmax([0, 0]) = [1/2, 1/2].
const double kLog3 = std::log(3.0);
const double kKl = 0.25 * std::log(0.5) + 0.75 * std::log(1.5);
const double kH = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));

}  // namespace

TEST_CASE("softmax_kl: equal logits give KL 0, dq 0 and dp unchanged", "[models][divergence]") {
  core::Rng rng(41, {1});
  const Matrix<double> p = test::random_matrix(rng, 4, 6, -3, 3);
  const Matrix<double> q = p.clone();
  const Matrix<double> dp0 = test::random_matrix(rng, 4, 6);
  Matrix<double> dp = dp0.clone();
  Matrix<double> dq(4, 6);
  dq.fill(9);
  CHECK(kl<double>(p, q, {1, 2, 0.5f, 3}, 0.7, dp, dq) == 0.0);
  CHECK(test::values_of(dq.cview()) == std::vector<double>(24, 0.0));
  CHECK(test::values_of(dp.cview()) == test::values_of(dp0.cview()));
}

TEST_CASE("softmax_kl: two classes by hand, weights and scale", "[models][divergence]") {
  // Row 0: the example above, weight 2; row 1: the same with weight 0 (counts nothing).
  const Matrix<double> p(2, 2, {0, kLog3, 0, kLog3});
  const Matrix<double> q(2, 2, {0, 0, 5, 5});  // row 1: a shift changes nothing
  Matrix<double> dp(2, 2, {1, -2, 3, 4});
  Matrix<double> dq(2, 2);
  dq.fill(9);
  const double loss = kl<double>(p, q, {2.0f, 0.0f}, 0.25, dp, dq);
  CHECK(kKl == Approx(0.1308120359).epsilon(1e-9));
  CHECK(loss == Approx(0.5 * kKl).epsilon(1e-14));
  const double s = 0.5;  // scale * weight
  CHECK(dq(0, 0) == Approx(s * (0.5 - 0.25)).epsilon(1e-14));
  CHECK(dq(0, 1) == Approx(s * (0.5 - 0.75)).epsilon(1e-14));
  CHECK(dp(0, 0) == Approx(1 + s * 0.25 * (std::log(0.5) - kKl)).epsilon(1e-14));
  CHECK(dp(0, 1) == Approx(-2 + s * 0.75 * (std::log(1.5) - kKl)).epsilon(1e-14));
  // Weight 0: dp keeps its values, dq is overwritten with zeros.
  CHECK(dp(1, 0) == 3);
  CHECK(dp(1, 1) == 4);
  CHECK(dq(1, 0) == 0);
  CHECK(dq(1, 1) == 0);
}

TEST_CASE("softmax_entropy: uniform logits give log C, two classes by hand, dlogits overwritten",
          "[models][divergence]") {
  const Matrix<double> uniform(2, 5, {7, 7, 7, 7, 7, -1000, -1000, -1000, -1000, -1000});
  Matrix<double> d(2, 5);
  d.fill(9);
  // log p = x - log_z rounds at the scale of |x| (1000): 1e-13.
  CHECK(entropy<double>(uniform, {1, 1}, 1.0, d) == Approx(2 * std::log(5.0)).epsilon(1e-12));
  for (const double g : d.flat()) CHECK(std::abs(g) < 1e-12);  // -p (log p + H) = 0 for uniform p

  const Matrix<double> two(1, 2, {0, kLog3});
  Matrix<double> d2(1, 2);
  d2.fill(9);
  CHECK(kH == Approx(0.5623351446).epsilon(1e-9));
  CHECK(entropy<double>(two, {4}, 0.5, d2) == Approx(2 * kH).epsilon(1e-14));
  CHECK(d2(0, 0) == Approx(-2 * 0.25 * (std::log(0.25) + kH)).epsilon(1e-14));
  CHECK(d2(0, 1) == Approx(-2 * 0.75 * (std::log(0.75) + kH)).epsilon(1e-14));
  CHECK(d2(0, 0) + d2(0, 1) == Approx(0).margin(1e-15));  // a softmax gradient sums to 0
}

TEST_CASE("softmax_kl and softmax_entropy: finite-difference gradients in double", "[models][divergence][gradcheck]") {
  core::Rng rng(41, {2});
  Matrix<double> p = test::random_matrix(rng, 5, 7, -3, 3);
  Matrix<double> q = test::random_matrix(rng, 5, 7, -3, 3);
  for (int64_t c = 0; c < 7; ++c) p(2, c) += 30;  // large logits (moderate: the differences stay accurate)
  const std::vector<float> w{0.5f, 2.0f, 1.0f, 0.25f, 1.5f};
  const double scale = 0.7;
  Matrix<double> dp(5, 7), dq(5, 7), scratch_p(5, 7), scratch_q(5, 7);
  kl<double>(p, q, w, scale, dp, dq);
  auto loss = [&] { return kl<double>(p, q, w, scale, scratch_p, scratch_q); };
  SECTION("KL: dp") { CHECK(test::check_gradient(loss, p.flat(), dp.flat()).max_error < 1e-6); }
  SECTION("KL: dq") { CHECK(test::check_gradient(loss, q.flat(), dq.flat()).max_error < 1e-6); }
  SECTION("entropy") {
    Matrix<double> d(5, 7), scratch(5, 7);
    entropy<double>(p, w, scale, d);
    auto h = [&] { return entropy<double>(p, w, scale, scratch); };
    CHECK(test::check_gradient(h, p.flat(), d.flat()).max_error < 1e-6);
  }
}

TEST_CASE("softmax_kl: dp accumulates onto the caller's gradient, dq ignores its old values", "[models][divergence]") {
  core::Rng rng(41, {3});
  const Matrix<double> p = test::random_matrix(rng, 3, 4, -2, 2);
  const Matrix<double> q = test::random_matrix(rng, 3, 4, -2, 2);
  const std::vector<float> w{1, 0.5f, 2};
  Matrix<double> dp_fresh(3, 4), dq_fresh(3, 4);
  const double fresh = kl<double>(p, q, w, 1.5, dp_fresh, dq_fresh);
  const Matrix<double> ce = test::random_matrix(rng, 3, 4);  // a cross-entropy gradient already there
  Matrix<double> dp = ce.clone();
  Matrix<double> dq(3, 4);
  dq.fill(-7);
  CHECK(kl<double>(p, q, w, 1.5, dp, dq) == fresh);
  for (int64_t i = 0; i < dp.size(); ++i) CHECK(dp.data()[i] == ce.data()[i] + dp_fresh.data()[i]);
  CHECK(test::values_of(dq.cview()) == test::values_of(dq_fresh.cview()));
}

TEST_CASE("softmax_kl and softmax_entropy: weights and scale multiply each row", "[models][divergence]") {
  core::Rng rng(41, {4});
  const Matrix<double> p = test::random_matrix(rng, 3, 5, -2, 2);
  const Matrix<double> q = test::random_matrix(rng, 3, 5, -2, 2);
  const std::vector<float> w{0.5f, 0.0f, 3.0f};
  const double scale = -0.25;
  Matrix<double> dp(3, 5), dq(3, 5), dh(3, 5);
  const double loss = kl<double>(p, q, w, scale, dp, dq);
  const double h = entropy<double>(p, w, scale, dh);
  double expected_kl = 0, expected_h = 0;
  for (int64_t i = 0; i < 3; ++i) {
    const Matrix<double> pi(1, 5, test::values_of(MatrixView<const double>(p.data() + i * 5, 1, 5)));
    const Matrix<double> qi(1, 5, test::values_of(MatrixView<const double>(q.data() + i * 5, 1, 5)));
    Matrix<double> dpi(1, 5), dqi(1, 5), dhi(1, 5);
    const double s = scale * w[static_cast<std::size_t>(i)];
    expected_kl += s * kl<double>(pi, qi, {1}, 1.0, dpi, dqi);
    expected_h += s * entropy<double>(pi, {1}, 1.0, dhi);
    for (int64_t c = 0; c < 5; ++c) {
      CHECK(dp(i, c) == Approx(s * dpi(0, c)).margin(1e-15));
      CHECK(dq(i, c) == Approx(s * dqi(0, c)).margin(1e-15));
      CHECK(dh(i, c) == Approx(s * dhi(0, c)).margin(1e-15));
    }
  }
  CHECK(loss == Approx(expected_kl).epsilon(1e-13));
  CHECK(h == Approx(expected_h).epsilon(1e-13));
  // Empty batches count 0.
  Matrix<double> none(0, 5);
  CHECK(kl<double>(none, none, {}, 1.0, none, none) == 0.0);
  CHECK(entropy<double>(none, {}, 1.0, none) == 0.0);
}

TEST_CASE("softmax_kl and softmax_entropy: float agrees with double, and any thread count gives the same bits",
          "[models][divergence]") {
  core::Rng rng(41, {5});
  const Matrix<double> pd = test::random_matrix(rng, 3000, 7, -4, 4);
  const Matrix<double> qd = test::random_matrix(rng, 3000, 7, -4, 4);
  std::vector<float> w(3000);
  for (float& v : w) v = 0.5f + rng.uniform();
  std::vector<float> pf_values(pd.flat().begin(), pd.flat().end()), qf_values(qd.flat().begin(), qd.flat().end());
  const Matrix<float> pf(3000, 7, std::move(pf_values)), qf(3000, 7, std::move(qf_values));
  auto run = [&](int threads) {
    const oneapi::tbb::global_control limit(oneapi::tbb::global_control::max_allowed_parallelism,
                                            static_cast<std::size_t>(threads));
    Matrix<float> dp(3000, 7), dq(3000, 7), dh(3000, 7);
    const double loss = kl<float>(pf, qf, w, 0.5f, dp, dq);
    const double h = entropy<float>(pf, w, 0.5f, dh);
    return std::vector<std::vector<float>>{{static_cast<float>(loss), static_cast<float>(h)},
                                           test::values_of(dp.cview()),
                                           test::values_of(dq.cview()),
                                           test::values_of(dh.cview())};
  };
  const auto one = run(1);
  CHECK(one == run(2));
  Matrix<double> dp(3000, 7), dq(3000, 7), dh(3000, 7);
  CHECK(one[0][0] == Approx(kl<double>(pd, qd, w, 0.5, dp, dq)).epsilon(1e-6));
  CHECK(one[0][1] == Approx(entropy<double>(pd, w, 0.5, dh)).epsilon(1e-6));
  for (std::size_t i = 0; i < one[1].size(); i += 97) {
    CHECK(one[1][i] == Approx(dp.data()[i]).margin(1e-6));
    CHECK(one[2][i] == Approx(dq.data()[i]).margin(1e-6));
    CHECK(one[3][i] == Approx(dh.data()[i]).margin(1e-6));
  }
}

TEST_CASE("softmax_entropy_scatter: normalised entropy at the listed ids only", "[models][divergence]") {
  const Matrix<double> logits(3, 2, {4, 4, 0, kLog3, 1000, 0});
  std::vector<float> out(10, -1.0f);
  const std::vector<graph::NodeId> ids{7, 2, 5};
  ops::softmax_entropy_scatter<double>(host(), logits.cview(), ids, out.data());
  CHECK(out[7] == 1.0f);                                      // uniform
  CHECK(out[2] == Approx(kH / std::log(2.0)).epsilon(1e-7));  // [1/4, 3/4]
  CHECK(out[5] == 0.0f);                                      // one-hot (exp(-1000) is 0)
  for (const int i : {0, 1, 3, 4, 6, 8, 9}) CHECK(out[static_cast<std::size_t>(i)] == -1.0f);

  const Matrix<float> single(2, 1, {3, -2});  // one column: 0
  std::vector<float> out1(3, -1.0f);
  ops::softmax_entropy_scatter<float>(host(), single.cview(), std::vector<graph::NodeId>{2, 0}, out1.data());
  CHECK(out1 == std::vector<float>{0.0f, -1.0f, 0.0f});

  const Matrix<float> uniform(1, 37);  // all zeros: entropy log 37
  ops::softmax_entropy_scatter<float>(host(), uniform.cview(), std::vector<graph::NodeId>{1}, out1.data());
  CHECK(out1[1] == Approx(1.0f).epsilon(1e-6));

  CHECK(
      test::data_error_of([&] {
        ops::softmax_entropy_scatter<double>(host(), logits.cview(), std::vector<graph::NodeId>{1, -3, 4}, out.data());
      }).find("id -3 (position 1) is negative") != std::string::npos);
  CHECK(test::error_of([&] {
          ops::softmax_entropy_scatter<double>(host(), logits.cview(), std::vector<graph::NodeId>{1, 2}, out.data());
        }).find("2 ids for logits [3 x 2]") != std::string::npos);
}

TEST_CASE("scale_rows: per-row factors, in place and out of place", "[models][divergence]") {
  const Matrix<double> x(3, 2, {1, 2, 3, 4, 5, 6});
  const std::vector<float> f{2.0f, 0.5f, -1.0f};
  Matrix<double> y(3, 2);
  ops::scale_rows<double>(host(), x.cview(), f, y.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{2, 4, 1.5, 2, -5, -6});
  Matrix<float> inplace(3, 2, {1, 2, 3, 4, 5, 6});
  ops::scale_rows<float>(host(), inplace.cview(), f, inplace.view());
  CHECK(test::values_of(inplace.cview()) == std::vector<float>{2, 4, 1.5f, 2, -5, -6});
  const Matrix<double> third(1, 1, {3});
  Matrix<double> out(1, 1);
  ops::scale_rows<double>(host(), third.cview(), std::vector<float>{0.1f}, out.view());
  CHECK(out(0, 0) == 3 * static_cast<double>(0.1f));  // the factor widened from float, then one product
  CHECK(test::error_of([&] {
          ops::scale_rows<double>(host(), x.cview(), std::vector<float>{1, 2}, y.view());
        }).find("scale_rows: x [3 x 2], y [3 x 2] and 2 factors") != std::string::npos);
  Matrix<double> wrong(2, 3);
  CHECK(test::error_of([&] { ops::scale_rows<double>(host(), x.cview(), f, wrong.view()); }).find("y [2 x 3]") !=
        std::string::npos);
}

TEMPLATE_TEST_CASE("scale_rows and add_scaled_rows: every width bitwise the scalar products, the sum after the "
                   "rounded product", "[models][divergence]", float, double) {
  core::Rng rng(12, {5});
  for (const int64_t cols : {1, 7, 8, 9, 16, 31, 64, 67, 256}) {
    INFO("width " << cols);
    const int64_t rows = 5;
    Matrix<TestType> x(rows, cols), y0(rows, cols);
    for (TestType& v : x.view().flat()) v = static_cast<TestType>(rng.uniform() * 2.0 - 1.0) / TestType{3};
    for (TestType& v : y0.view().flat()) v = static_cast<TestType>(rng.uniform() * 2.0 - 1.0) / TestType{7};
    const std::vector<float> f{0.3f, -1.7f, 0.0f, 1.0f, 2.0f / 3.0f};
    Matrix<TestType> scaled(rows, cols), sum(rows, cols);
    std::vector<TestType> want_scaled, want_sum;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const TestType p = x(r, c) * static_cast<TestType>(f[static_cast<std::size_t>(r)]);
        want_scaled.push_back(p);
        want_sum.push_back(y0(r, c) + p);
      }
    }
    ops::scale_rows<TestType>(host(), x.cview(), f, scaled.view());
    CHECK(test::values_of(scaled.cview()) == want_scaled);
    std::copy(y0.cview().flat().begin(), y0.cview().flat().end(), sum.view().flat().begin());
    ops::add_scaled_rows<TestType>(host(), x.cview(), f, sum.view());
    CHECK(test::values_of(sum.cview()) == want_sum);
  }
  Matrix<TestType> x(3, 2), wrong(2, 2);
  CHECK(test::error_of([&] {
          ops::add_scaled_rows<TestType>(host(), x.cview(), std::vector<float>{1, 2, 3}, wrong.view());
        }).find("add_scaled_rows: x [3 x 2], y [2 x 2] and 3 factors") != std::string::npos);
}

TEST_CASE("softmax_kl and softmax_entropy: bad shapes, weights and outputs are refused",
          "[models][divergence][errors]") {
  const Matrix<double> p(2, 3);
  const Matrix<double> q_wrong(2, 4);
  Matrix<double> d(2, 3), d_wrong(3, 3);
  const std::vector<float> w{1, 1};
  CHECK(test::error_of([&] {
          kl<double>(p, q_wrong, w, 1.0, d, d);
        }).find("p_logits [2 x 3], q_logits [2 x 4], dp [2 x 3] and dq [2 x 3] differ in shape") != std::string::npos);
  CHECK(test::error_of([&] { kl<double>(p, p, w, 1.0, d, d_wrong); }).find("dq [3 x 3]") != std::string::npos);
  CHECK(test::error_of([&] { kl<double>(p, p, {1}, 1.0, d, d); }).find("softmax_kl: 1 weights for 2 rows") !=
        std::string::npos);
  CHECK(test::error_of([&] {
          entropy<double>(p, w, 1.0, d_wrong);
        }).find("dlogits [3 x 3] does not match logits [2 x 3]") != std::string::npos);
  CHECK(test::error_of([&] { entropy<double>(p, {}, 1.0, d); }).find("softmax_entropy: 0 weights for 2 rows") !=
        std::string::npos);
  CHECK(test::error_of([&] {
          ops::softmax_kl<double>(host(), p.cview(), p.cview(), w, 1.0, d.view(), d.view(), nullptr, nullptr);
        }).find("softmax_kl: no loss output") != std::string::npos);
  CHECK(test::error_of([&] {
          ops::softmax_entropy<double>(host(), p.cview(), w, 1.0, d.view(), nullptr, nullptr);
        }).find("softmax_entropy: no loss output") != std::string::npos);
  // The CPU twins directly (what the ops above call): the same checks.
  const std::vector<float> three{1, 2, 3};
  CHECK_THROWS_WITH(models::cpu::softmax_entropy<double>(p.cview(), three, 1.0, d.view()),
                    Catch::Contains("3 weights for 2 rows"));
}
