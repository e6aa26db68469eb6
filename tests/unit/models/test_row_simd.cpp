#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <vector>

#include "cpu/parallel.hpp"
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

TEST_CASE("weighted_rows: a row summed in registers is bitwise the per-entry axpy loop, on every width",
          "[models][spmm]") {
  core::Rng rng(11, {3});
  const int64_t rows = 5;
  // Row r has r entries (row 0 none); neighbours repeat, and one weight is -0.
  std::vector<graph::EdgeOffset> offsets{0};
  std::vector<graph::NodeId> neighbor;
  std::vector<float> weights;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < r; ++k) {
      neighbor.push_back(static_cast<graph::NodeId>((r * 7 + k * 3) % 9));
      weights.push_back(k == 1 ? -0.0f : static_cast<float>(rng.uniform() * 2.0 - 1.0) / 3.0f);
    }
    offsets.push_back(static_cast<graph::EdgeOffset>(neighbor.size()));
  }
  const auto weight = [&](int64_t k) { return weights[static_cast<std::size_t>(k)]; };
  std::vector<int64_t> widths;
  for (int64_t n = 1; n <= 140; ++n) widths.push_back(n);
  widths.push_back(256);
  for (const int64_t n : widths) {
    INFO("width " << n);
    std::vector<float> in = random_row<float>(rng, 9 * n);
    if (n > 3) in[2] = -0.0f;
    const models::MatrixView<const float> x{in.data(), 9, n};
    std::vector<float> got(static_cast<std::size_t>(rows * n + 3), 5.0f), expected = got;
    for (int64_t r = 0; r < rows; ++r) {
      float* o = expected.data() + r * n;
      std::fill(o, o + n, 0.0f);
      for (int64_t k = offsets[static_cast<std::size_t>(r)]; k < offsets[static_cast<std::size_t>(r) + 1]; ++k) {
        models::cpu::detail::axpy_row_portable(o, x.row(neighbor[static_cast<std::size_t>(k)]).data(), weight(k), n);
      }
    }
    models::cpu::detail::weighted_rows<float>(rows, offsets.data(), neighbor.data(),
                                              static_cast<int64_t>(neighbor.size()), x,
                                              models::MatrixView<float>{got.data(), rows, n}, weight);
    CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);  // the 3 past the rows untouched
  }
}
