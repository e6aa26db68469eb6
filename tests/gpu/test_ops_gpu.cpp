// CPU-vs-CUDA parity of the ops in models/ops/ops.hpp, for float and double (this file: GEMM, the
// sparse-dense products and GAT's edge scores; test_pointwise_ops_gpu.cpp: the elementwise ops,
// dropout, losses, utilities and shape checks): each test runs the op through ops:: on
// OpContext::host() over host memory (the reference) and on a CUDA context over device copies of
// the same inputs, with every output poisoned first (NaN, 0xFF mask bytes) so an element the GPU
// never writes fails. Bounds (test::elementwise_tolerance / reduction_tolerance in
// device_helpers.hpp) allow for floating-point reassociation only; the reductions also run twice
// and must be bitwise equal (the ops use no floating-point atomics).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include "op_test_prelude.hpp"

namespace {

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

#endif
