// CPU-vs-CUDA parity of MH-Aug's consistency ops (issue #41): softmax_kl, softmax_entropy,
// softmax_entropy_scatter and scale_rows, for float and double. As in test_pointwise_ops_gpu.cpp,
// each runs through ops:: on OpContext::host() (the reference) and on a CUDA context over device
// copies, with every overwritten output poisoned first (NaN) so an element the GPU never writes
// fails, and runs twice to be bitwise equal (no floating-point atomics). Both twins compute in
// double with the same per-row order; they differ only in libm's last bits and in the order of the
// total over rows (sequential vs a fixed tree), hence bounds of 1e-6 (float) and 1e-12 (double).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "op_test_prelude.hpp"

namespace {

constexpr int64_t kRowCounts[] = {0, 1, 1029};
constexpr int64_t kClassCounts[] = {1, 3, 32, 37, 130};

template <class T>
test::Tolerance parity_tolerance(double scale = 1) {
  return {std::is_same_v<T, float> ? 1e-6 : 1e-12, scale};
}

// Logits in [-5, 5) with row 0 shifted by 80 (exp(80) overflows float: the maximum must go).
template <class T>
Matrix<T> logits_for(core::Rng& rng, int64_t rows, int64_t classes) {
  Matrix<T> m = random_values<T>(rng, rows, classes, -5, 5);
  if (rows > 0) {
    for (T& v : m.view().row(0)) v += T(80);
  }
  return m;
}

std::vector<float> weights_for(core::Rng& rng, int64_t rows) {
  std::vector<float> w(static_cast<std::size_t>(rows));
  for (float& v : w) v = 0.5f + rng.uniform();
  return w;
}

template <class T>
struct Gradients {
  Matrix<T> first;   // dp or dlogits
  Matrix<T> second;  // dq (empty for entropy)
  double loss = 0;
};

// A GPU run's loss and gradients against the CPU's, and a second run bitwise equal.
template <class T, class Run>
void check_run(const Gradients<T>& expected, Run run, double gradient_scale) {
  const Gradients<T> got = run();
  CHECK(test::compare_values(got.loss, expected.loss, parity_tolerance<T>()));
  CHECK(compare(got.first, expected.first, parity_tolerance<T>(gradient_scale)));
  CHECK(compare(got.second, expected.second, parity_tolerance<T>(gradient_scale)));
  const Gradients<T> again = run();
  CHECK(std::bit_cast<uint64_t>(got.loss) == std::bit_cast<uint64_t>(again.loss));
  CHECK(bitwise_equal(got.first, again.first));
  CHECK(bitwise_equal(got.second, again.second));
}

}  // namespace

TEMPLATE_TEST_CASE("ops::softmax_kl: dp accumulated, dq overwritten, as the CPU twin", "[gpu][ops][divergence]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(41, {1});
  const T scale = T(0.75);
  for (const int64_t classes : kClassCounts) {
    for (const int64_t rows : kRowCounts) {
      INFO(rows << " rows, " << classes << " classes");
      const Matrix<T> p = logits_for<T>(rng, rows, classes);
      const Matrix<T> q = logits_for<T>(rng, rows, classes);
      const Matrix<T> dp0 = random_values<T>(rng, rows, classes);  // the cross-entropy gradient already there
      const std::vector<float> weights = weights_for(rng, rows);
      Gradients<T> expected{dp0.clone(), Matrix<T>(rows, classes), std::nan("")};
      ops::softmax_kl<T>(host(), p.cview(), q.cview(), weights, scale, expected.first.view(), expected.second.view(),
                         nullptr, &expected.loss);
      const auto p_dev = to_device(p, cuda.stream);
      const auto q_dev = to_device(q, cuda.stream);
      const auto weights_dev = to_device<float>(weights, cuda.stream);
      auto run = [&] {
        auto dp = to_device(dp0, cuda.stream);
        auto dq = poisoned<T>(rows, classes, cuda.stream);
        auto scratch = test::poisoned_buffer<double>(static_cast<std::size_t>(rows), cuda.stream);
        auto loss = test::poisoned_buffer<double>(1, cuda.stream);
        ops::softmax_kl<T>(cuda.ctx, p_dev.cview(), q_dev.cview(), test::device_span(weights_dev), scale, dp.view(),
                           dq.view(), scratch.data(), loss.data());
        return Gradients<T>{to_host(dp, cuda.stream), to_host(dq, cuda.stream), to_host(loss, cuda.stream)[0]};
      };
      check_run<T>(expected, run, 1.5 * static_cast<double>(scale));
    }
  }
}

TEMPLATE_TEST_CASE("ops::softmax_entropy: dlogits overwritten, as the CPU twin", "[gpu][ops][divergence]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(41, {2});
  const T scale = T(-0.5);
  for (const int64_t classes : kClassCounts) {
    for (const int64_t rows : kRowCounts) {
      INFO(rows << " rows, " << classes << " classes");
      const Matrix<T> logits = logits_for<T>(rng, rows, classes);
      const std::vector<float> weights = weights_for(rng, rows);
      Gradients<T> expected{Matrix<T>(rows, classes), Matrix<T>(), std::nan("")};
      ops::softmax_entropy<T>(host(), logits.cview(), weights, scale, expected.first.view(), nullptr, &expected.loss);
      const auto logits_dev = to_device(logits, cuda.stream);
      const auto weights_dev = to_device<float>(weights, cuda.stream);
      auto run = [&] {
        auto d = poisoned<T>(rows, classes, cuda.stream);
        auto scratch = test::poisoned_buffer<double>(static_cast<std::size_t>(rows), cuda.stream);
        auto loss = test::poisoned_buffer<double>(1, cuda.stream);
        ops::softmax_entropy<T>(cuda.ctx, logits_dev.cview(), test::device_span(weights_dev), scale, d.view(),
                                scratch.data(), loss.data());
        return Gradients<T>{to_host(d, cuda.stream), Matrix<T>(), to_host(loss, cuda.stream)[0]};
      };
      check_run<T>(expected, run, 1.5 * std::abs(static_cast<double>(scale)));
    }
  }
}

TEMPLATE_TEST_CASE("ops::softmax_entropy_scatter: the listed ids only, as the CPU twin", "[gpu][ops][divergence]",
                   float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(41, {3});
  constexpr int32_t kOut = 3000;
  for (const int64_t classes : kClassCounts) {
    for (const int64_t rows : kRowCounts) {
      INFO(rows << " rows, " << classes << " classes");
      const Matrix<T> logits = logits_for<T>(rng, rows, classes);
      const std::vector<int32_t> ids = distinct_ids(rng, kOut, static_cast<int32_t>(rows));
      std::vector<float> expected(kOut, std::nanf(""));
      ops::softmax_entropy_scatter<T>(host(), logits.cview(), ids, expected.data());
      const auto logits_dev = to_device(logits, cuda.stream);
      const auto ids_dev = to_device<int32_t>(ids, cuda.stream);
      auto run = [&] {
        auto out = test::poisoned_buffer<float>(kOut, cuda.stream);
        ops::softmax_entropy_scatter<T>(cuda.ctx, logits_dev.cview(), test::device_span(ids_dev), out.data());
        return to_host(out, cuda.stream);
      };
      const std::vector<float> got = run();
      std::vector<float> got_listed, expected_listed;
      for (const int32_t id : ids) {
        got_listed.push_back(got[static_cast<std::size_t>(id)]);
        expected_listed.push_back(expected[static_cast<std::size_t>(id)]);
      }
      CHECK(compare<float>(got_listed, expected_listed, parity_tolerance<float>()));
      // Nothing else written: every other element keeps its NaN poison.
      const auto written = std::count_if(got.begin(), got.end(), [](float v) { return !std::isnan(v); });
      CHECK(written == static_cast<std::ptrdiff_t>(ids.size()));
      const std::vector<float> again = run();
      CHECK(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

TEMPLATE_TEST_CASE("ops::scale_rows: out of place and in place, bitwise as the CPU twin", "[gpu][ops][divergence]",
                   float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(41, {4});
  for (const int64_t cols : kWidths) {
    for (const int64_t rows : kRowCounts) {
      INFO(rows << " rows, " << cols << " columns");
      const Matrix<T> x = random_values<T>(rng, rows, cols, -5, 5);
      const std::vector<float> factors = weights_for(rng, rows);
      Matrix<T> expected(rows, cols);
      ops::scale_rows<T>(host(), x.cview(), factors, expected.view());
      const auto x_dev = to_device(x, cuda.stream);
      const auto factors_dev = to_device<float>(factors, cuda.stream);
      auto y = poisoned<T>(rows, cols, cuda.stream);
      ops::scale_rows<T>(cuda.ctx, x_dev.cview(), test::device_span(factors_dev), y.view());
      CHECK(bitwise_equal(to_host(y, cuda.stream), expected));  // one correctly rounded product each
      auto in_place = to_device(x, cuda.stream);
      ops::scale_rows<T>(cuda.ctx, in_place.cview(), test::device_span(factors_dev), in_place.view());
      CHECK(bitwise_equal(to_host(in_place, cuda.stream), expected));
    }
  }
}

TEST_CASE("ops::softmax_kl and friends on a CUDA context reject bad shapes on the host",
          "[gpu][ops][divergence][errors]") {
  Cuda cuda;
  auto p = test::poisoned<float>(4, 3, cuda.stream);
  auto q = test::poisoned<float>(4, 2, cuda.stream);
  auto loss = test::poisoned_buffer<double>(5, cuda.stream);
  const auto weights = to_device<float>(std::vector<float>(4, 1.0f), cuda.stream);
  const auto ids = to_device<int32_t>(std::vector<int32_t>{0, 1, 2}, cuda.stream);
  CHECK_THROWS_WITH(ops::softmax_kl<float>(cuda.ctx, p.cview(), q.cview(), test::device_span(weights), 1.0f, p.view(),
                                           p.view(), loss.data() + 1, loss.data()),
                    Catch::Contains("p_logits and q_logits"));
  CHECK_THROWS_WITH(ops::softmax_entropy<float>(cuda.ctx, p.cview(), test::device_span(weights), 1.0f, q.view(),
                                                loss.data() + 1, loss.data()),
                    Catch::Contains("logits and dlogits"));
  CHECK_THROWS_WITH(ops::softmax_entropy<float>(cuda.ctx, p.cview(), test::device_span(weights), 1.0f, p.view(),
                                                nullptr, loss.data()),
                    Catch::Contains("no loss or scratch"));
  CHECK_THROWS_WITH(ops::softmax_entropy_scatter<float>(cuda.ctx, p.cview(), test::device_span(ids), nullptr),
                    Catch::Contains("3 ids for logits [4 x 3]"));
  CHECK_THROWS_WITH(ops::scale_rows<float>(cuda.ctx, p.cview(), test::device_span(weights), q.view()),
                    Catch::Contains("scale_rows: x [4 x 3], y [4 x 2]"));
  cuda.stream.synchronize();
}

#endif
