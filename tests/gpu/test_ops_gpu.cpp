// CPU-vs-CUDA parity of every op in models/ops/ops.hpp, for float and double: each test runs the
// op through ops:: on OpContext::host() over host memory (the reference) and on a CUDA context over
// device copies of the same inputs, with every output poisoned first (NaN, 0xFF mask bytes) so an
// element the GPU never writes fails. Bounds (test::elementwise_tolerance / reduction_tolerance in
// device_helpers.hpp) allow for floating-point reassociation only; the reductions also run twice
// and must be bitwise equal (the ops use no floating-point atomics).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device_helpers.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"
#include "op_fixtures.hpp"

using namespace gnnpipe;
using models::Activation;
using models::ConstView;
using models::Matrix;
using models::MatrixView;
using models::OpContext;
using models::OpOptions;
using models::SpmmImpl;
using test::bitwise_equal;
using test::compare;
using test::elementwise_tolerance;
using test::poisoned;
using test::reduction_tolerance;
using test::to_device;
using test::to_host;
namespace ops = models::ops;

namespace {

using test::block_cases;
using test::BlockCase;
using test::Cuda;
using test::distinct_ids;
using test::random_values;

const OpContext& host() { return OpContext::host(); }

// Feature widths: one column, under a warp, a warp, odd, and a vector-friendly width and just past it.
constexpr int64_t kWidths[] = {1, 3, 32, 37, 128, 130};

// GAT layouts: heads x channels per head.
struct HeadShape {
  int64_t heads;
  int64_t channels;
};
constexpr HeadShape kHeadShapes[] = {{1, 1}, {1, 37}, {3, 3}, {2, 65}, {8, 16}};
constexpr int64_t kHeadCounts[] = {1, 3, 8};

}  // namespace

// --- GEMM ---------------------------------------------------------------------------------------

namespace {

struct GemmShape {
  int64_t m, n, k;
};

// c = alpha op(a) op(b) + beta c on both backends; beta 0 runs over a NaN-poisoned c (must not
// propagate), beta 1 over c0; a second GPU run must be bitwise equal.
template <class T>
void check_gemm(Cuda& cuda, core::Rng& rng, GemmShape s, bool ta, bool tb, T beta, test::Tolerance tol) {
  const T alpha = T(0.75);
  const Matrix<T> a = ta ? random_values<T>(rng, s.k, s.m) : random_values<T>(rng, s.m, s.k);
  const Matrix<T> b = tb ? random_values<T>(rng, s.n, s.k) : random_values<T>(rng, s.k, s.n);
  const Matrix<T> c0 = random_values<T>(rng, s.m, s.n);
  Matrix<T> expected = c0.clone();
  ops::gemm<T>(host(), ta, tb, alpha, a.cview(), b.cview(), beta, expected.view());
  const auto a_dev = to_device(a, cuda.stream);
  const auto b_dev = to_device(b, cuda.stream);
  auto run = [&] {
    auto c = beta == T{0} ? poisoned<T>(s.m, s.n, cuda.stream) : to_device(c0, cuda.stream);
    ops::gemm<T>(cuda.ctx, ta, tb, alpha, a_dev.cview(), b_dev.cview(), beta, c.view());
    return to_host(c, cuda.stream);
  };
  const Matrix<T> got = run();
  CHECK(compare(got, expected, tol));
  CHECK(bitwise_equal(got, run()));
}

}  // namespace

TEMPLATE_TEST_CASE("ops::gemm: all transposes, beta 0 over NaN and beta 1", "[gpu][ops][gemm]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(1, {1});
  // K = 256 is the reduction bound's case; K = 0 is an empty product (c = beta c).
  const GemmShape shapes[] = {{1, 1, 1}, {37, 130, 256}, {130, 37, 3}, {3, 1, 128}, {5, 7, 0}};
  for (const GemmShape s : shapes) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const T beta : {T{0}, T{1}}) {
          INFO("M " << s.m << ", N " << s.n << ", K " << s.k << ", trans_a " << ta << ", trans_b " << tb << ", beta "
                    << beta);
          check_gemm<T>(cuda, rng, s, ta, tb, beta, reduction_tolerance<T>());
        }
      }
    }
  }
}

TEST_CASE("ops::gemm: float with TF32 allowed stays within 1e-2", "[gpu][ops][gemm]") {
  // TF32 keeps 10 mantissa bits (~1e-3 per product); the error of a K-term sum is measured against
  // the typical magnitude of c, sqrt(K) / 3 for uniform [-1, 1) inputs.
  Cuda cuda(OpOptions{.allow_tf32 = true});
  core::Rng rng(1, {2});
  const GemmShape s{130, 128, 256};
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      INFO("trans_a " << ta << ", trans_b " << tb);
      check_gemm<float>(cuda, rng, s, ta, tb, 0.0f, {1e-2, std::sqrt(static_cast<double>(s.k)) / 3});
    }
  }
}

// --- sparse-dense products ------------------------------------------------------------------------

TEMPLATE_TEST_CASE("ops::spmm and spmm_backward: the kernel and cuSPARSE", "[gpu][ops][spmm]", float, double) {
  using T = TestType;
  memory::CachingAllocator allocator(test::gpu(), std::size_t{256} << 20);
  struct Variant {
    const char* name;
    OpOptions options;
    memory::CachingAllocator* allocator;
  };
  const Variant variants[] = {{"kernel", {.spmm = SpmmImpl::kKernel}, nullptr},
                              {"cusparse", {.spmm = SpmmImpl::kCusparse}, nullptr},
                              {"cusparse with a caching allocator", {.spmm = SpmmImpl::kCusparse}, &allocator}};
  const core::Stream setup(test::gpu());
  const std::vector<BlockCase> blocks = block_cases(setup);
  core::Rng rng(2, {1});
  for (const Variant& variant : variants) {
    Cuda cuda(variant.options, variant.allocator);
    for (const BlockCase& bc : blocks) {
      for (const int64_t f : kWidths) {
        INFO(variant.name << ", " << bc.name << ", F " << f);
        test::check_spmm_against_cpu<T>(cuda, bc, f, rng);
      }
    }
  }
}

TEMPLATE_TEST_CASE("ops::spmm_edge_weighted and its gradients for x and alpha", "[gpu][ops][spmm][gat]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(3, {1});
  for (const BlockCase& bc : block_cases(cuda.stream)) {
    const int64_t e = bc.host.num_edges();
    for (const HeadShape hs : kHeadShapes) {
      const int64_t f = hs.heads * hs.channels;
      INFO(bc.name << ", heads " << hs.heads << ", channels " << hs.channels);
      const Matrix<T> alpha = random_values<T>(rng, e, hs.heads, 0, 1);
      const Matrix<T> x = random_values<T>(rng, bc.host.num_src, f);
      const Matrix<T> dy = random_values<T>(rng, bc.host.num_dst, f);
      Matrix<T> y(bc.host.num_dst, f);
      Matrix<T> dx(bc.host.num_src, f);
      Matrix<T> dalpha(e, hs.heads);
      ops::spmm_edge_weighted<T>(host(), bc.host, alpha.cview(), x.cview(), y.view());
      ops::spmm_edge_weighted_backward_x<T>(host(), bc.host, alpha.cview(), dy.cview(), dx.view());
      ops::spmm_edge_weighted_backward_alpha<T>(host(), bc.host, x.cview(), dy.cview(), dalpha.view());
      const auto alpha_dev = to_device(alpha, cuda.stream);
      const auto x_dev = to_device(x, cuda.stream);
      const auto dy_dev = to_device(dy, cuda.stream);
      auto forward = [&] {
        auto out = poisoned<T>(bc.host.num_dst, f, cuda.stream);
        ops::spmm_edge_weighted<T>(cuda.ctx, bc.device, alpha_dev.cview(), x_dev.cview(), out.view());
        return to_host(out, cuda.stream);
      };
      auto backward_x = [&] {
        auto out = poisoned<T>(bc.host.num_src, f, cuda.stream);
        ops::spmm_edge_weighted_backward_x<T>(cuda.ctx, bc.device, alpha_dev.cview(), dy_dev.cview(), out.view());
        return to_host(out, cuda.stream);
      };
      auto backward_alpha = [&] {
        auto out = poisoned<T>(e, hs.heads, cuda.stream);
        ops::spmm_edge_weighted_backward_alpha<T>(cuda.ctx, bc.device, x_dev.cview(), dy_dev.cview(), out.view());
        return to_host(out, cuda.stream);
      };
      const Matrix<T> y_gpu = forward();
      CHECK(compare(y_gpu, y, reduction_tolerance<T>()));
      CHECK(bitwise_equal(y_gpu, forward()));
      const Matrix<T> dx_gpu = backward_x();
      CHECK(compare(dx_gpu, dx, reduction_tolerance<T>()));
      CHECK(bitwise_equal(dx_gpu, backward_x()));
      const Matrix<T> dalpha_gpu = backward_alpha();
      CHECK(compare(dalpha_gpu, dalpha, reduction_tolerance<T>()));
      CHECK(bitwise_equal(dalpha_gpu, backward_alpha()));
    }
  }
}

// --- GAT edge scores ------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("ops::sddmm_add and sddmm_add_backward", "[gpu][ops][gat]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(4, {1});
  for (const BlockCase& bc : block_cases(cuda.stream)) {
    const int64_t e = bc.host.num_edges();
    for (const int64_t heads : kHeadCounts) {
      INFO(bc.name << ", heads " << heads);
      const Matrix<T> a_src = random_values<T>(rng, bc.host.num_src, heads);
      const Matrix<T> a_dst = random_values<T>(rng, bc.host.num_dst, heads);
      const Matrix<T> dscores = random_values<T>(rng, e, heads);
      Matrix<T> scores(e, heads);
      Matrix<T> da_src(bc.host.num_src, heads);
      Matrix<T> da_dst(bc.host.num_dst, heads);
      ops::sddmm_add<T>(host(), bc.host, a_src.cview(), a_dst.cview(), scores.view());
      ops::sddmm_add_backward<T>(host(), bc.host, dscores.cview(), da_src.view(), da_dst.view());
      const auto a_src_dev = to_device(a_src, cuda.stream);
      const auto a_dst_dev = to_device(a_dst, cuda.stream);
      const auto dscores_dev = to_device(dscores, cuda.stream);
      auto scores_dev = poisoned<T>(e, heads, cuda.stream);
      ops::sddmm_add<T>(cuda.ctx, bc.device, a_src_dev.cview(), a_dst_dev.cview(), scores_dev.view());
      CHECK(compare(to_host(scores_dev, cuda.stream), scores, elementwise_tolerance<T>()));
      auto backward = [&] {
        auto src = poisoned<T>(bc.host.num_src, heads, cuda.stream);
        auto dst = poisoned<T>(bc.host.num_dst, heads, cuda.stream);
        ops::sddmm_add_backward<T>(cuda.ctx, bc.device, dscores_dev.cview(), src.view(), dst.view());
        return std::pair{to_host(src, cuda.stream), to_host(dst, cuda.stream)};
      };
      const auto [src_gpu, dst_gpu] = backward();
      CHECK(compare(src_gpu, da_src, reduction_tolerance<T>()));
      CHECK(compare(dst_gpu, da_dst, reduction_tolerance<T>()));
      const auto [src_again, dst_again] = backward();
      CHECK(bitwise_equal(src_gpu, src_again));
      CHECK(bitwise_equal(dst_gpu, dst_again));
    }
  }
}

TEMPLATE_TEST_CASE("ops::edge_softmax (in place) and edge_softmax_backward (out of place and in place)",
                   "[gpu][ops][gat]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(5, {1});
  for (const BlockCase& bc : block_cases(cuda.stream)) {
    const int64_t e = bc.host.num_edges();
    for (const int64_t heads : kHeadCounts) {
      INFO(bc.name << ", heads " << heads);
      const Matrix<T> scores = random_values<T>(rng, e, heads, -3, 3);
      Matrix<T> alpha = scores.clone();
      ops::edge_softmax<T>(host(), bc.host, alpha.view());
      auto forward = [&] {
        auto inout = to_device(scores, cuda.stream);
        ops::edge_softmax<T>(cuda.ctx, bc.device, inout.view());
        return to_host(inout, cuda.stream);
      };
      // Probabilities in (0, 1], bounded below (|scores| <= 3): compared relatively (scale 0), the
      // normalising sum runs over up to 1500 edges.
      const Matrix<T> alpha_gpu = forward();
      CHECK(compare(alpha_gpu, alpha, test::Tolerance{reduction_tolerance<T>().rel, 0}));
      CHECK(bitwise_equal(alpha_gpu, forward()));

      const Matrix<T> dalpha = random_values<T>(rng, e, heads);
      Matrix<T> dscores(e, heads);
      ops::edge_softmax_backward<T>(host(), bc.host, alpha.cview(), dalpha.cview(), dscores.view());
      const auto alpha_dev = to_device(alpha, cuda.stream);
      const auto dalpha_dev = to_device(dalpha, cuda.stream);
      auto backward = [&] {
        auto out = poisoned<T>(e, heads, cuda.stream);
        ops::edge_softmax_backward<T>(cuda.ctx, bc.device, alpha_dev.cview(), dalpha_dev.cview(), out.view());
        return to_host(out, cuda.stream);
      };
      // dscores[e] = alpha[e] (dalpha[e] - sum): its error scales with alpha[e], not with 1.
      const test::Tolerance by_alpha{reduction_tolerance<T>().rel, 0};
      const Matrix<T> dscores_gpu = backward();
      CHECK(compare(dscores_gpu, dscores, by_alpha, alpha));
      CHECK(bitwise_equal(dscores_gpu, backward()));
      auto in_place = to_device(dalpha, cuda.stream);
      ops::edge_softmax_backward<T>(cuda.ctx, bc.device, alpha_dev.cview(), in_place.cview(), in_place.view());
      CHECK(compare(to_host(in_place, cuda.stream), dscores, by_alpha, alpha));
    }
  }
}

TEMPLATE_TEST_CASE("ops::head_dot over the first rows, and head_dot_backward accumulating", "[gpu][ops][gat]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(6, {1});
  const int64_t m_rows = 1300;
  const int64_t rows = 1029;  // a.rows < m.rows: the destinations are the first sources
  for (const HeadShape hs : kHeadShapes) {
    const int64_t f = hs.heads * hs.channels;
    INFO("heads " << hs.heads << ", channels " << hs.channels);
    const Matrix<T> m = random_values<T>(rng, m_rows, f);
    const Matrix<T> att = random_values<T>(rng, hs.heads, hs.channels);
    const Matrix<T> da = random_values<T>(rng, rows, hs.heads);
    const Matrix<T> dm0 = random_values<T>(rng, m_rows, f);
    const Matrix<T> datt0 = random_values<T>(rng, hs.heads, hs.channels);
    Matrix<T> a(rows, hs.heads);
    ops::head_dot<T>(host(), m.cview(), att.cview(), a.view());
    Matrix<T> dm = dm0.clone();
    Matrix<T> datt = datt0.clone();
    ops::head_dot_backward<T>(host(), m.cview(), att.cview(), da.cview(), dm.view(), datt.view());

    const auto m_dev = to_device(m, cuda.stream);
    const auto att_dev = to_device(att, cuda.stream);
    const auto da_dev = to_device(da, cuda.stream);
    auto forward = [&] {
      auto out = poisoned<T>(rows, hs.heads, cuda.stream);
      ops::head_dot<T>(cuda.ctx, m_dev.cview(), att_dev.cview(), out.view());
      return to_host(out, cuda.stream);
    };
    auto backward = [&] {
      auto dm_dev = to_device(dm0, cuda.stream);
      auto datt_dev = to_device(datt0, cuda.stream);
      ops::head_dot_backward<T>(cuda.ctx, m_dev.cview(), att_dev.cview(), da_dev.cview(), dm_dev.view(),
                                datt_dev.view());
      return std::pair{to_host(dm_dev, cuda.stream), to_host(datt_dev, cuda.stream)};
    };
    const Matrix<T> a_gpu = forward();
    CHECK(compare(a_gpu, a, reduction_tolerance<T>()));
    CHECK(bitwise_equal(a_gpu, forward()));
    // dm: one product added per element (rows past da.rows unchanged); datt: a sum over the rows.
    const auto [dm_gpu, datt_gpu] = backward();
    CHECK(compare(dm_gpu, dm, elementwise_tolerance<T>()));
    CHECK(compare(datt_gpu, datt, reduction_tolerance<T>()));
    const auto [dm_again, datt_again] = backward();
    CHECK(bitwise_equal(dm_gpu, dm_again));
    CHECK(bitwise_equal(datt_gpu, datt_again));
  }
}

TEMPLATE_TEST_CASE("ops::head_mean and head_mean_backward", "[gpu][ops][gat]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(7, {1});
  const int64_t rows = 1029;
  for (const HeadShape hs : kHeadShapes) {
    const int64_t f = hs.heads * hs.channels;
    INFO("heads " << hs.heads << ", channels " << hs.channels);
    const Matrix<T> x = random_values<T>(rng, rows, f);
    const Matrix<T> dy = random_values<T>(rng, rows, hs.channels);
    Matrix<T> y(rows, hs.channels);
    Matrix<T> dx(rows, f);
    ops::head_mean<T>(host(), x.cview(), y.view());
    ops::head_mean_backward<T>(host(), dy.cview(), dx.view());
    const auto x_dev = to_device(x, cuda.stream);
    const auto dy_dev = to_device(dy, cuda.stream);
    auto y_dev = poisoned<T>(rows, hs.channels, cuda.stream);
    auto dx_dev = poisoned<T>(rows, f, cuda.stream);
    ops::head_mean<T>(cuda.ctx, x_dev.cview(), y_dev.view());
    ops::head_mean_backward<T>(cuda.ctx, dy_dev.cview(), dx_dev.view());
    // At most 8 terms per element.
    CHECK(compare(to_host(y_dev, cuda.stream), y, elementwise_tolerance<T>()));
    CHECK(compare(to_host(dx_dev, cuda.stream), dx, elementwise_tolerance<T>()));
  }
}

// --- elementwise --------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("ops::bias_add and bias_grad_accumulate", "[gpu][ops][elementwise]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(8, {1});
  // Row counts around the 256-row blocks of the column sums; 0 rows leaves dbias unchanged.
  for (const int64_t rows : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{257}, int64_t{3000}}) {
    for (const int64_t cols : kWidths) {
      INFO(rows << " x " << cols);
      const Matrix<T> y0 = random_values<T>(rng, rows, cols);
      const Matrix<T> bias = random_values<T>(rng, 1, cols);
      const Matrix<T> dbias0 = random_values<T>(rng, 1, cols);
      Matrix<T> y = y0.clone();
      ops::bias_add<T>(host(), y.view(), bias.cview());
      Matrix<T> dbias = dbias0.clone();
      ops::bias_grad_accumulate<T>(host(), y0.cview(), dbias.view());

      const auto bias_dev = to_device(bias, cuda.stream);
      auto y_dev = to_device(y0, cuda.stream);
      ops::bias_add<T>(cuda.ctx, y_dev.view(), bias_dev.cview());
      CHECK(compare(to_host(y_dev, cuda.stream), y, elementwise_tolerance<T>()));
      const auto dy_dev = to_device(y0, cuda.stream);
      auto backward = [&] {
        auto out = to_device(dbias0, cuda.stream);
        ops::bias_grad_accumulate<T>(cuda.ctx, dy_dev.cview(), out.view());
        return to_host(out, cuda.stream);
      };
      const Matrix<T> dbias_gpu = backward();
      CHECK(compare(dbias_gpu, dbias, reduction_tolerance<T>()));
      CHECK(bitwise_equal(dbias_gpu, backward()));
    }
  }
}

TEMPLATE_TEST_CASE("ops::copy_rows: gather, scatter and both, as the CPU twin", "[gpu][ops][elementwise]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(8, {2});
  for (const int64_t cols : kWidths) {
    INFO(cols << " columns");
    const Matrix<T> src = random_values<T>(rng, 300, cols);
    std::vector<int32_t> from, to;
    for (int32_t i = 0; i < 200; ++i) {
      from.push_back((i * 37) % 300);
      to.push_back((i * 53) % 200);  // a permutation of 0..199
    }
    const auto from_dev = to_device(std::span<const int32_t>(from), cuda.stream);
    const auto to_dev = to_device(std::span<const int32_t>(to), cuda.stream);
    const std::span<const int32_t> from_d(from_dev.data(), from.size()), to_d(to_dev.data(), to.size());
    const std::vector<std::pair<std::span<const int32_t>, std::span<const int32_t>>> host_lists{
        {from, {}}, {{}, to}, {from, to}};
    const std::vector<std::pair<std::span<const int32_t>, std::span<const int32_t>>> device_lists{
        {from_d, {}}, {{}, to_d}, {from_d, to_d}};
    for (std::size_t k = 0; k < host_lists.size(); ++k) {
      Matrix<T> expected(200, cols);
      ops::copy_rows<T>(host(), src.cview(), host_lists[k].first, expected.view(), host_lists[k].second);
      const auto src_dev = to_device(src, cuda.stream);
      auto out = poisoned<T>(200, cols, cuda.stream);
      ops::copy_rows<T>(cuda.ctx, src_dev.cview(), device_lists[k].first, out.view(), device_lists[k].second);
      CHECK(bitwise_equal(to_host(out, cuda.stream), expected));
    }
  }
}

TEMPLATE_TEST_CASE("ops::add_rows: rows added into their places, as the CPU twin", "[gpu][ops][elementwise]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(8, {3});
  for (const int64_t cols : kWidths) {
    INFO(cols << " columns");
    const Matrix<T> src = random_values<T>(rng, 200, cols);
    const Matrix<T> base = random_values<T>(rng, 300, cols);
    std::vector<int32_t> to;
    for (int32_t i = 0; i < 200; ++i) to.push_back((i * 37) % 300);  // distinct rows of 0..299
    const auto to_dev = to_device(std::span<const int32_t>(to), cuda.stream);
    for (const bool listed : {true, false}) {
      Matrix<T> expected(300, cols);
      std::copy(base.flat().begin(), base.flat().end(), expected.flat().begin());
      ops::add_rows<T>(host(), src.cview(), expected.view(), listed ? std::span<const int32_t>(to) : std::span<const int32_t>{});
      const auto src_dev = to_device(src, cuda.stream);
      auto out = to_device(base, cuda.stream);
      ops::add_rows<T>(cuda.ctx, src_dev.cview(), out.view(),
                       listed ? std::span<const int32_t>(to_dev.data(), to.size()) : std::span<const int32_t>{});
      CHECK(bitwise_equal(to_host(out, cuda.stream), expected));
    }
  }
}

TEST_CASE("ops::widen_16bit: every fp16 and bf16 bit pattern, as the CPU twin", "[gpu][ops][elementwise]") {
  Cuda cuda;
  std::vector<uint16_t> bits(65536);
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  const auto bits_dev = to_device(std::span<const uint16_t>(bits), cuda.stream);
  for (const bool bf16 : {false, true}) {
    Matrix<float> expected(1, 65536);
    ops::widen_16bit(host(), bits.data(), bf16, 65536, expected.view().data);
    auto out = poisoned<float>(1, 65536, cuda.stream);
    ops::widen_16bit(cuda.ctx, bits_dev.data(), bf16, 65536, out.view().data);
    const Matrix<float> got = to_host(out, cuda.stream);
    std::size_t mismatches = 0;  // (NaN payloads may differ: any NaN matches any NaN)
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const float a = got.flat()[i], b = expected.flat()[i];
      if (std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(b) && !(std::isnan(a) && std::isnan(b))) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}

namespace {

// Shapes of the pointwise tests: one element, odd widths, many rows.
struct Shape {
  int64_t rows, cols;
};
constexpr Shape kPointwiseShapes[] = {{1, 1}, {37, 130}, {1029, 3}};

// A pointwise op and its backward from the forward output on both backends, out of place and in
// place (y = x, dx = dy): forward(ctx, x, y) and backward(ctx, y, dy, dx). x holds exact zeros (the
// kink: derivatives from the left) and values in [-2, 2).
template <class T, class ForwardOp, class BackwardOp>
void check_pointwise_pair(ForwardOp forward, BackwardOp backward) {
  Cuda cuda;
  core::Rng rng(9, {1});
  for (const Shape s : kPointwiseShapes) {
    INFO(s.rows << " x " << s.cols);
    Matrix<T> x = random_values<T>(rng, s.rows, s.cols, -2, 2);
    for (int64_t i = 0; i < x.size(); i += 17) x.data()[i] = T{0};
    const Matrix<T> dy = random_values<T>(rng, s.rows, s.cols);
    Matrix<T> y(s.rows, s.cols);
    Matrix<T> dx(s.rows, s.cols);
    forward(host(), x.cview(), y.view());
    backward(host(), y.cview(), dy.cview(), dx.view());

    const auto x_dev = to_device(x, cuda.stream);
    const auto y_dev = to_device(y, cuda.stream);  // the CPU's forward output: checks the backward alone
    const auto dy_dev = to_device(dy, cuda.stream);
    auto out = poisoned<T>(s.rows, s.cols, cuda.stream);
    forward(cuda.ctx, x_dev.cview(), out.view());
    CHECK(compare(to_host(out, cuda.stream), y, elementwise_tolerance<T>()));
    auto in_place = to_device(x, cuda.stream);
    forward(cuda.ctx, in_place.cview(), in_place.view());
    CHECK(compare(to_host(in_place, cuda.stream), y, elementwise_tolerance<T>()));

    auto grad = poisoned<T>(s.rows, s.cols, cuda.stream);
    backward(cuda.ctx, y_dev.cview(), dy_dev.cview(), grad.view());
    CHECK(compare(to_host(grad, cuda.stream), dx, elementwise_tolerance<T>()));
    auto grad_in_place = to_device(dy, cuda.stream);
    backward(cuda.ctx, y_dev.cview(), grad_in_place.cview(), grad_in_place.view());
    CHECK(compare(to_host(grad_in_place, cuda.stream), dx, elementwise_tolerance<T>()));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("ops::activation and activation_backward: relu, elu, leaky_relu", "[gpu][ops][elementwise]", float,
                   double) {
  using T = TestType;
  struct Case {
    const char* name;
    Activation kind;
    double param;
  };
  const Case cases[] = {{"relu", Activation::kRelu, 0.0},
                        {"elu alpha 1", Activation::kElu, 1.0},
                        {"elu alpha 0.5", Activation::kElu, 0.5},
                        {"leaky_relu slope 0.2", Activation::kLeakyRelu, 0.2}};
  for (const Case& c : cases) {
    INFO(c.name);
    const T param = static_cast<T>(c.param);
    check_pointwise_pair<T>(
        [&](const OpContext& ctx, ConstView<T> x, MatrixView<T> y) { ops::activation<T>(ctx, c.kind, param, x, y); },
        [&](const OpContext& ctx, ConstView<T> y, ConstView<T> dy, MatrixView<T> dx) {
          ops::activation_backward<T>(ctx, c.kind, param, y, dy, dx);
        });
  }
}

TEMPLATE_TEST_CASE("ops::leaky_relu and leaky_relu_backward, slopes 0.2 and 0", "[gpu][ops][elementwise]", float,
                   double) {
  using T = TestType;
  for (const T slope : {T(0.2), T(0)}) {
    INFO("slope " << slope);
    check_pointwise_pair<T>(
        [&](const OpContext& ctx, ConstView<T> x, MatrixView<T> y) { ops::leaky_relu<T>(ctx, slope, x, y); },
        [&](const OpContext& ctx, ConstView<T> y, ConstView<T> dy, MatrixView<T> dx) {
          ops::leaky_relu_backward<T>(ctx, slope, y, dy, dx);
        });
  }
}

namespace {

// Row-id lists of the dropout tests for `rows` rows: none (row r is node r), and distinct ids in
// random order just under 2^31 (positions id * cols + c far past 32 bits).
std::vector<std::vector<graph::NodeId>> dropout_id_cases(core::Rng& rng, int64_t rows) {
  std::vector<graph::NodeId> high = distinct_ids(rng, 1'000'000, static_cast<int32_t>(rows));
  for (graph::NodeId& id : high) id = 2'147'483'647 - id;
  return {{}, std::move(high)};
}

}  // namespace

TEMPLATE_TEST_CASE("ops::dropout_forward and dropout_backward: masks bitwise equal to the CPU's",
                   "[gpu][ops][elementwise][dropout]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(10, {1});
  const core::RngKey key = core::rng_key(42, {3, 7, 1});  // (epoch, batch, layer)
  for (const Shape s : kPointwiseShapes) {
    for (const std::vector<graph::NodeId>& ids : dropout_id_cases(rng, s.rows)) {
      const auto ids_dev = to_device<graph::NodeId>(ids, cuda.stream);
      const std::span<const graph::NodeId> ids_span =
          ids.empty() ? std::span<const graph::NodeId>{} : test::device_span(ids_dev);
      // Every way a decision is read (dropout_mask.hpp): the top byte with refinement ties (0.3),
      // without (129 / 256), 4, 2 and 1 bits (0.375, 0.75, 0.5).
      for (const double p : {0.0, 0.3, 129.0 / 256, 0.375, 0.75, 0.5}) {
        INFO(s.rows << " x " << s.cols << ", " << (ids.empty() ? "no row ids" : "row ids") << ", p " << p);
        const T pt = static_cast<T>(p);
        const Matrix<T> x = random_values<T>(rng, s.rows, s.cols);
        const Matrix<T> dy = random_values<T>(rng, s.rows, s.cols);
        Matrix<T> y(s.rows, s.cols);
        const int64_t mask_cols = models::dropout_mask_row_bytes(s.cols);  // one bit per element
        Matrix<uint8_t> mask(s.rows, mask_cols);
        Matrix<T> dx(s.rows, s.cols);
        ops::dropout_forward<T>(host(), key, pt, x.cview(), ids, y.view(), mask.data());
        ops::dropout_backward<T>(host(), mask.data(), pt, dy.cview(), dx.view());

        const auto x_dev = to_device(x, cuda.stream);
        auto y_dev = poisoned<T>(s.rows, s.cols, cuda.stream);
        auto mask_dev = poisoned<uint8_t>(s.rows, mask_cols, cuda.stream);
        ops::dropout_forward<T>(cuda.ctx, key, pt, x_dev.cview(), ids_span, y_dev.view(), mask_dev.buffer().data());
        CHECK(compare(to_host(y_dev, cuda.stream), y, elementwise_tolerance<T>()));
        CHECK(bitwise_equal(to_host(mask_dev, cuda.stream), mask));
        auto in_place = to_device(x, cuda.stream);
        auto mask_in_place = poisoned<uint8_t>(s.rows, mask_cols, cuda.stream);
        ops::dropout_forward<T>(cuda.ctx, key, pt, in_place.cview(), ids_span, in_place.view(),
                                mask_in_place.buffer().data());
        CHECK(compare(to_host(in_place, cuda.stream), y, elementwise_tolerance<T>()));
        CHECK(bitwise_equal(to_host(mask_in_place, cuda.stream), mask));
        auto no_mask = poisoned<T>(s.rows, s.cols, cuda.stream);  // no mask wanted: the same y
        ops::dropout_forward<T>(cuda.ctx, key, pt, x_dev.cview(), ids_span, no_mask.view(), nullptr);
        CHECK(compare(to_host(no_mask, cuda.stream), y, elementwise_tolerance<T>()));

        const auto cpu_mask_dev = to_device(mask, cuda.stream);  // the backward alone
        const auto dy_dev = to_device(dy, cuda.stream);
        auto dx_dev = poisoned<T>(s.rows, s.cols, cuda.stream);
        ops::dropout_backward<T>(cuda.ctx, cpu_mask_dev.buffer().data(), pt, dy_dev.cview(), dx_dev.view());
        CHECK(compare(to_host(dx_dev, cuda.stream), dx, elementwise_tolerance<T>()));
        auto dx_in_place = to_device(dy, cuda.stream);
        ops::dropout_backward<T>(cuda.ctx, cpu_mask_dev.buffer().data(), pt, dx_in_place.cview(), dx_in_place.view());
        CHECK(compare(to_host(dx_in_place, cuda.stream), dx, elementwise_tolerance<T>()));
      }
    }
  }
}

TEMPLATE_TEST_CASE(
    "ops::edge_dropout_forward: GAT attention masks keyed by (dst, src, head) bitwise equal to the CPU's",
    "[gpu][ops][gat][dropout]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(12, {1});
  const core::RngKey key = core::rng_key(42, {3, 7, 1, 2});
  for (const BlockCase& bc : block_cases(cuda.stream)) {
    const int64_t e = bc.host.num_edges();
    for (const std::vector<graph::NodeId>& ids : dropout_id_cases(rng, bc.host.num_src)) {
      const auto ids_dev = to_device<graph::NodeId>(ids, cuda.stream);
      const std::span<const graph::NodeId> ids_span =
          ids.empty() ? std::span<const graph::NodeId>{} : test::device_span(ids_dev);
      for (const int64_t heads : kHeadCounts) {
        for (const double p : {0.0, 0.3, 0.5}) {  // refined top byte, one bit a decision
          INFO(bc.name << ", " << (ids.empty() ? "no row ids" : "row ids") << ", heads " << heads << ", p " << p);
          const T pt = static_cast<T>(p);
          const Matrix<T> alpha = random_values<T>(rng, e, heads, 0, 1);
          Matrix<T> y(e, heads);
          const int64_t mask_cols = models::dropout_mask_row_bytes(heads);  // one bit per (edge, head)
          Matrix<uint8_t> mask(e, mask_cols);
          ops::edge_dropout_forward<T>(host(), key, pt, bc.host, ids, alpha.cview(), y.view(), mask.data());

          const auto alpha_dev = to_device(alpha, cuda.stream);
          auto forward = [&] {
            auto out = poisoned<T>(e, heads, cuda.stream);
            auto out_mask = poisoned<uint8_t>(e, mask_cols, cuda.stream);
            ops::edge_dropout_forward<T>(cuda.ctx, key, pt, bc.device, ids_span, alpha_dev.cview(), out.view(),
                                         out_mask.buffer().data());
            return std::pair{to_host(out, cuda.stream), to_host(out_mask, cuda.stream)};
          };
          const auto [y_gpu, mask_gpu] = forward();
          CHECK(compare(y_gpu, y, elementwise_tolerance<T>()));
          CHECK(bitwise_equal(mask_gpu, mask));
          const auto [y_again, mask_again] = forward();
          CHECK(bitwise_equal(y_again, y_gpu));
          CHECK(bitwise_equal(mask_again, mask_gpu));
          auto in_place = to_device(alpha, cuda.stream);
          auto mask_in_place = poisoned<uint8_t>(e, mask_cols, cuda.stream);
          ops::edge_dropout_forward<T>(cuda.ctx, key, pt, bc.device, ids_span, in_place.cview(), in_place.view(),
                                       mask_in_place.buffer().data());
          CHECK(compare(to_host(in_place, cuda.stream), y, elementwise_tolerance<T>()));
          CHECK(bitwise_equal(to_host(mask_in_place, cuda.stream), mask));
        }
      }
    }
  }
}

// --- losses ---------------------------------------------------------------------------------------

namespace {

template <class T>
struct LossResult {
  Matrix<T> dlogits;
  double loss = 0;
};

// The loss value and dlogits of `run` (a GPU run) against the CPU's, and a second run bitwise equal.
// `gradient_scale` is the magnitude of dlogits (the per-row factor).
template <class T, class Run>
void check_loss(const LossResult<T>& expected, Run run, double gradient_scale) {
  const LossResult<T> got = run();
  CHECK(test::compare_values(got.loss, expected.loss, elementwise_tolerance<T>()));
  CHECK(compare(got.dlogits, expected.dlogits, elementwise_tolerance<T>(gradient_scale)));
  const LossResult<T> again = run();
  CHECK(std::bit_cast<uint64_t>(got.loss) == std::bit_cast<uint64_t>(again.loss));
  CHECK(bitwise_equal(got.dlogits, again.dlogits));
}

constexpr int64_t kLossRows = 1029;
constexpr int64_t kClassCounts[] = {1, 3, 37, 130};
constexpr int32_t kCountedRows[] = {0, 1, 600};

}  // namespace

TEMPLATE_TEST_CASE("ops::log_softmax_nll: mean and weighted over rows in random order", "[gpu][ops][loss]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(11, {1});
  for (const int64_t classes : kClassCounts) {
    for (const int32_t count : kCountedRows) {
      for (const bool weighted : {false, true}) {
        INFO(classes << " classes, " << count << " rows, weighted " << weighted);
        Matrix<T> logits = random_values<T>(rng, kLossRows, classes, -5, 5);
        std::vector<int32_t> labels(static_cast<std::size_t>(kLossRows));
        for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
        const std::vector<int32_t> rows = distinct_ids(rng, static_cast<int32_t>(kLossRows), count);
        // exp(80) overflows float: the row maximum must be subtracted.
        if (count > 0) {
          for (T& v : logits.view().row(rows[0])) v += T(80);
        }
        std::vector<float> weights;
        if (weighted) {
          for (int32_t k = 0; k < count; ++k) weights.push_back((0.5f + rng.uniform()) / static_cast<float>(count));
        }

        LossResult<T> expected{Matrix<T>(kLossRows, classes), std::nan("")};
        ops::log_softmax_nll<T>(host(), logits.cview(), labels, rows, weights, expected.dlogits.view(), nullptr,
                                &expected.loss);
        const auto logits_dev = to_device(logits, cuda.stream);
        const auto labels_dev = to_device<int32_t>(labels, cuda.stream);
        const auto rows_dev = to_device<int32_t>(rows, cuda.stream);
        const auto weights_dev = to_device<float>(weights, cuda.stream);  // empty when unweighted
        auto run = [&] {
          auto dlogits = poisoned<T>(kLossRows, classes, cuda.stream);
          auto scratch = test::poisoned_buffer<double>(rows.size(), cuda.stream);
          auto loss = test::poisoned_buffer<double>(1, cuda.stream);
          ops::log_softmax_nll<T>(cuda.ctx, logits_dev.cview(), test::device_span(labels_dev),
                                  test::device_span(rows_dev), test::device_span(weights_dev), dlogits.view(),
                                  scratch.data(), loss.data());
          return LossResult<T>{to_host(dlogits, cuda.stream), to_host(loss, cuda.stream)[0]};
        };
        check_loss<T>(expected, run, (weighted ? 1.5 : 1.0) / std::max(count, 1));
      }
    }
  }
}

TEMPLATE_TEST_CASE("ops::bce_with_logits over rows in random order", "[gpu][ops][loss]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(12, {1});
  for (const int64_t classes : kClassCounts) {
    for (const int32_t count : kCountedRows) {
      INFO(classes << " classes, " << count << " rows");
      Matrix<T> logits = random_values<T>(rng, kLossRows, classes, -5, 5);
      Matrix<uint8_t> targets(kLossRows, classes);
      for (uint8_t& t : targets.flat()) t = static_cast<uint8_t>(rng.below(2));
      const std::vector<int32_t> rows = distinct_ids(rng, static_cast<int32_t>(kLossRows), count);
      // |x| = 80: the stable form is needed for both signs.
      if (count > 0) {
        for (int64_t c = 0; c < classes; ++c) logits(rows[0], c) = c % 2 == 0 ? T(80) : T(-80);
      }

      std::vector<float> weights(rows.size());
      for (float& w : weights) w = 0.1f + rng.uniform();
      for (const bool weighted : {false, true}) {
        INFO((weighted ? "weighted" : "mean"));
        const std::span<const float> host_weights = weighted ? std::span<const float>(weights) : std::span<const float>();
        LossResult<T> expected{Matrix<T>(kLossRows, classes), std::nan("")};
        ops::bce_with_logits<T>(host(), logits.cview(), targets.cview(), rows, host_weights, expected.dlogits.view(),
                                nullptr, &expected.loss);
        const auto logits_dev = to_device(logits, cuda.stream);
        const auto targets_dev = to_device(targets, cuda.stream);
        const auto rows_dev = to_device<int32_t>(rows, cuda.stream);
        const auto weights_dev = to_device<float>(weights, cuda.stream);
        auto run = [&] {
          auto dlogits = poisoned<T>(kLossRows, classes, cuda.stream);
          auto scratch = test::poisoned_buffer<double>(rows.size(), cuda.stream);
          auto loss = test::poisoned_buffer<double>(1, cuda.stream);
          ops::bce_with_logits<T>(cuda.ctx, logits_dev.cview(), targets_dev.cview(), test::device_span(rows_dev),
                                  weighted ? test::device_span(weights_dev) : std::span<const float>(), dlogits.view(),
                                  scratch.data(), loss.data());
          return LossResult<T>{to_host(dlogits, cuda.stream), to_host(loss, cuda.stream)[0]};
        };
        check_loss<T>(expected, run, 1.0 / (static_cast<double>(std::max(count, 1)) * static_cast<double>(classes)));
      }
    }
  }
}

// --- utilities ------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("ops::zero and ops::copy write every element exactly", "[gpu][ops][utility]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(13, {1});
  for (const int64_t rows : {int64_t{0}, int64_t{1}, int64_t{1029}}) {
    for (const int64_t cols : kWidths) {
      INFO(rows << " x " << cols);
      const Matrix<T> src = random_values<T>(rng, rows, cols);
      Matrix<T> zeros = src.clone();
      ops::zero<T>(host(), zeros.view());
      Matrix<T> copied(rows, cols);
      ops::copy<T>(host(), src.cview(), copied.view());

      auto zeros_dev = poisoned<T>(rows, cols, cuda.stream);
      ops::zero<T>(cuda.ctx, zeros_dev.view());
      CHECK(bitwise_equal(to_host(zeros_dev, cuda.stream), zeros));
      const auto src_dev = to_device(src, cuda.stream);
      auto copied_dev = poisoned<T>(rows, cols, cuda.stream);
      ops::copy<T>(cuda.ctx, src_dev.cview(), copied_dev.view());
      CHECK(bitwise_equal(to_host(copied_dev, cuda.stream), copied));
    }
  }
}

// --- shape checks -----------------------------------------------------------------------------------

namespace {

// True when `f` throws core::Error from a host-side check (not a CudaError from a failed launch).
template <class F>
bool rejected_on_host(F&& f) {
  try {
    f();
  } catch (const core::CudaError&) {
    return false;
  } catch (const core::Error&) {
    return true;
  }
  return false;
}

template <class T>
bool all_poisoned(const Matrix<T>& m) {
  return std::all_of(m.flat().begin(), m.flat().end(), [](T v) { return std::isnan(v); });
}

}  // namespace

TEST_CASE("ops on a CUDA context reject mismatched shapes on the host before launching", "[gpu][ops][errors]") {
  // Each bad argument is larger than expected, so that an unchecked launch would still stay in
  // bounds (and not poison the CUDA context for the tests after this one); outputs must stay NaN.
  using T = float;
  Cuda cuda;
  core::Rng rng(14, {1});
  const graph::Block block = to_device(test::tiny_block(true), cuda.stream);  // 3 dst, 4 src, 4 edges

  SECTION("gemm: op(a) 4 x 5 times op(b) 6 x 3") {
    const auto a = to_device(random_values<T>(rng, 4, 5), cuda.stream);
    const auto b = to_device(random_values<T>(rng, 6, 3), cuda.stream);
    auto c = poisoned<T>(4, 3, cuda.stream);
    CHECK(rejected_on_host([&] { ops::gemm<T>(cuda.ctx, false, false, 1.0f, a.cview(), b.cview(), 0.0f, c.view()); }));
    CHECK(all_poisoned(to_host(c, cuda.stream)));
  }
  SECTION("spmm: x with num_src + 1 rows") {
    const auto x = to_device(random_values<T>(rng, 5, 2), cuda.stream);
    auto y = poisoned<T>(3, 2, cuda.stream);
    CHECK(rejected_on_host([&] { ops::spmm<T>(cuda.ctx, block, x.cview(), y.view()); }));
    CHECK(all_poisoned(to_host(y, cuda.stream)));
  }
  SECTION("spmm_edge_weighted: 4 feature columns for 3 heads") {
    const auto alpha = to_device(random_values<T>(rng, 4, 3), cuda.stream);
    const auto x = to_device(random_values<T>(rng, 4, 4), cuda.stream);
    auto y = poisoned<T>(3, 4, cuda.stream);
    CHECK(rejected_on_host([&] { ops::spmm_edge_weighted<T>(cuda.ctx, block, alpha.cview(), x.cview(), y.view()); }));
    CHECK(all_poisoned(to_host(y, cuda.stream)));
  }
  SECTION("head_mean: 10 columns do not average into 3") {
    const auto x = to_device(random_values<T>(rng, 4, 10), cuda.stream);
    auto y = poisoned<T>(4, 3, cuda.stream);
    CHECK(rejected_on_host([&] { ops::head_mean<T>(cuda.ctx, x.cview(), y.view()); }));
    CHECK(all_poisoned(to_host(y, cuda.stream)));
  }
  SECTION("bias_add: a bias one wider than y") {
    const Matrix<T> y0 = random_values<T>(rng, 5, 4);
    auto y = to_device(y0, cuda.stream);
    const auto bias = to_device(random_values<T>(rng, 1, 5), cuda.stream);
    CHECK(rejected_on_host([&] { ops::bias_add<T>(cuda.ctx, y.view(), bias.cview()); }));
    CHECK(bitwise_equal(to_host(y, cuda.stream), y0));
  }
  SECTION("log_softmax_nll: one label more than logits rows") {
    const auto logits = to_device(random_values<T>(rng, 6, 3), cuda.stream);
    const auto labels = to_device<int32_t>(std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0}, cuda.stream);
    const auto rows = to_device<int32_t>(std::vector<int32_t>{4, 1}, cuda.stream);
    auto dlogits = poisoned<T>(6, 3, cuda.stream);
    auto scratch = test::poisoned_buffer<double>(2, cuda.stream);
    auto loss = test::poisoned_buffer<double>(1, cuda.stream);
    CHECK(rejected_on_host([&] {
      ops::log_softmax_nll<T>(cuda.ctx, logits.cview(), test::device_span(labels), test::device_span(rows), {},
                              dlogits.view(), scratch.data(), loss.data());
    }));
    CHECK(all_poisoned(to_host(dlogits, cuda.stream)));
    CHECK(std::isnan(to_host(loss, cuda.stream)[0]));
  }
}
#endif
