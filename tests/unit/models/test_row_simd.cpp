#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <vector>

#include "cpu/row_simd.hpp"
#include "gnnpipe/core/rng.hpp"

using namespace gnnpipe;

namespace {

template <class T>
std::vector<T> random_row(core::Rng& rng, int64_t n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& x : v) x = static_cast<T>(rng.uniform() * 4.0f - 2.0f) / T{3};  // not exactly representable sums
  return v;
}

// axpy_row on `o` (of n + 3 elements; the three past n must stay untouched) against the scalar loop.
template <class T>
void check_width(core::Rng& rng, int64_t n) {
  const std::vector<T> x = random_row<T>(rng, n);
  std::vector<T> o = random_row<T>(rng, n + 3);
  std::vector<T> expected = o;
  const T w = static_cast<T>(0.7f) / T{3};
  models::cpu::detail::axpy_row_portable(expected.data(), x.data(), w, n);
  for (int64_t c = 0; c < n; ++c) REQUIRE(expected[static_cast<std::size_t>(c)] == o[static_cast<std::size_t>(c)] + w * x[static_cast<std::size_t>(c)]);
  models::cpu::detail::axpy_row(o.data(), x.data(), w, n);
  CHECK(std::memcmp(o.data(), expected.data(), o.size() * sizeof(T)) == 0);  // bitwise, the tail untouched
}

}  // namespace

TEMPLATE_TEST_CASE("axpy_row: o += w x bitwise the scalar loop on every width, nothing past the row written",
                   "[models][spmm]", float, double) {
  if (!models::cpu::detail::has_avx2()) WARN("this CPU has no AVX2: only the portable loop runs");
  core::Rng rng(9, {1});
  for (int64_t n = 0; n <= 70; ++n) {
    INFO("width " << n);
    check_width<TestType>(rng, n);
  }
  check_width<TestType>(rng, 1433);
}

TEST_CASE("bias_relu_row: bias_add then relu bit for bit, -0 and NaN to +0, nothing past the row", "[models][spmm]") {
  core::Rng rng(4, {2});
  for (int64_t n = 0; n <= 40; ++n) {
    INFO("width " << n);
    std::vector<float> o = random_row<float>(rng, n + 3);
    const std::vector<float> bias = random_row<float>(rng, n);
    if (n > 2) o[1] = -0.0f, o[2] = std::numeric_limits<float>::quiet_NaN();
    for (const bool relu : {false, true}) {
      std::vector<float> got = o, expected = o;
      for (int64_t c = 0; c < n; ++c) {
        const float v = expected[static_cast<std::size_t>(c)] + bias[static_cast<std::size_t>(c)];
        expected[static_cast<std::size_t>(c)] = relu ? (v > 0.0f ? v : 0.0f) : v;
      }
      models::cpu::detail::bias_relu_row(got.data(), bias.data(), n, relu);
      CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
    }
  }
}
