// CPU-vs-CUDA parity of the ops in models/ops/ops.hpp, for float and double (this file: the
// elementwise ops, dropout, losses, utilities and shape checks; test_ops_gpu.cpp: GEMM, the
// sparse-dense products and GAT's edge scores): each test runs the op through ops:: on
// OpContext::host() over host memory (the reference) and on a CUDA context over device copies of
// the same inputs, with every output poisoned first (NaN, 0xFF mask bytes) so an element the GPU
// never writes fails. Bounds (test::elementwise_tolerance / reduction_tolerance in
// device_helpers.hpp) allow for floating-point reassociation only; the reductions also run twice
// and must be bitwise equal (the ops use no floating-point atomics).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include "op_test_prelude.hpp"

namespace {

// Attention heads (edge dropout's columns).
constexpr int64_t kHeadCounts[] = {1, 3, 8};

}  // namespace

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
