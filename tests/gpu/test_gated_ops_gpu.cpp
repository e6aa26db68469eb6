// The CUDA twins of the GGNN and GaAN ops (ops/gated.hpp) against the CPU twins: outputs poisoned
// first, compared within the op's tolerance, every result twice to be bitwise equal, arg-max edges
// exactly equal.
#include <catch2/catch.hpp>

#include <vector>

#include "device_helpers.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"
#include "op_fixtures.hpp"

using namespace gnnpipe;
using models::Matrix;
using test::bitwise_equal;
using test::compare;
using test::Cuda;
using test::elementwise_tolerance;
using test::poisoned;
using test::random_values;
using test::reduction_tolerance;
using test::to_device;
using test::to_host;
namespace ops = models::ops;

namespace {
const models::OpContext& host() { return models::OpContext::host(); }
}  // namespace

TEMPLATE_TEST_CASE("ops::gru_cell and gru_cell_backward, with a padded state", "[gpu][ops][gated]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(11, {1});
  const int64_t rows = 1029, c = 24;
  for (const int64_t h_cols : {c, int64_t{5}}) {
    INFO("state columns " << h_cols);
    const Matrix<T> gi = random_values<T>(rng, rows, 3 * c, -3, 3);
    const Matrix<T> gh = random_values<T>(rng, rows, 3 * c, -3, 3);
    const Matrix<T> h = random_values<T>(rng, rows, h_cols);
    const Matrix<T> dh_new = random_values<T>(rng, rows, c);
    Matrix<T> out(rows, c), dgi(rows, 3 * c), dgh(rows, 3 * c), dh(rows, h_cols);
    ops::gru_cell<T>(host(), gi.cview(), gh.cview(), h.cview(), out.view());
    ops::gru_cell_backward<T>(host(), gi.cview(), gh.cview(), h.cview(), dh_new.cview(), dgi.view(), dgh.view(),
                              dh.view());
    const auto gi_d = to_device(gi, cuda.stream), gh_d = to_device(gh, cuda.stream), h_d = to_device(h, cuda.stream);
    const auto dh_new_d = to_device(dh_new, cuda.stream);
    auto forward = [&] {
      auto o = poisoned<T>(rows, c, cuda.stream);
      ops::gru_cell<T>(cuda.ctx, gi_d.cview(), gh_d.cview(), h_d.cview(), o.view());
      return to_host(o, cuda.stream);
    };
    const Matrix<T> out_gpu = forward();
    CHECK(compare(out_gpu, out, elementwise_tolerance<T>()));
    CHECK(bitwise_equal(out_gpu, forward()));
    auto dgi_d = poisoned<T>(rows, 3 * c, cuda.stream), dgh_d = poisoned<T>(rows, 3 * c, cuda.stream);
    auto dh_d = poisoned<T>(rows, h_cols, cuda.stream);
    ops::gru_cell_backward<T>(cuda.ctx, gi_d.cview(), gh_d.cview(), h_d.cview(), dh_new_d.cview(), dgi_d.view(),
                              dgh_d.view(), dh_d.view());
    CHECK(compare(to_host(dgi_d, cuda.stream), dgi, elementwise_tolerance<T>()));
    CHECK(compare(to_host(dgh_d, cuda.stream), dgh, elementwise_tolerance<T>()));
    CHECK(compare(to_host(dh_d, cuda.stream), dh, elementwise_tolerance<T>()));
  }
}

TEMPLATE_TEST_CASE("ops::segment_max, spmm_mean and their backwards on the awkward blocks", "[gpu][ops][gated]", float,
                   double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(12, {1});
  for (const test::BlockCase& bc : test::block_cases(cuda.stream)) {
    for (const int64_t f : {int64_t{1}, int64_t{37}}) {
      INFO(bc.name << ", F " << f);
      const int64_t nd = bc.host.num_dst, ns = bc.host.num_src;
      const Matrix<T> x = random_values<T>(rng, ns, f);
      const Matrix<T> dy = random_values<T>(rng, nd, f);
      Matrix<T> y(nd, f), dx(ns, f), mean(nd, f), dmean(ns, f);
      Matrix<int64_t> arg(nd, f);
      ops::segment_max<T>(host(), bc.host, x.cview(), y.view(), arg.view());
      ops::segment_max_backward<T>(host(), bc.host, arg.cview(), dy.cview(), dx.view());
      ops::spmm_mean<T>(host(), bc.host, x.cview(), mean.view());
      ops::spmm_mean_backward<T>(host(), bc.host, dy.cview(), dmean.view());
      const auto x_d = to_device(x, cuda.stream), dy_d = to_device(dy, cuda.stream);
      auto y_d = poisoned<T>(nd, f, cuda.stream);
      auto arg_d = poisoned<int64_t>(nd, f, cuda.stream);
      ops::segment_max<T>(cuda.ctx, bc.device, x_d.cview(), y_d.view(), arg_d.view());
      CHECK(bitwise_equal(to_host(y_d, cuda.stream), y));  // a max is exact
      CHECK(bitwise_equal(to_host(arg_d, cuda.stream), arg));
      auto backward_max = [&] {
        auto o = poisoned<T>(ns, f, cuda.stream);
        ops::segment_max_backward<T>(cuda.ctx, bc.device, arg_d.cview(), dy_d.cview(), o.view());
        return to_host(o, cuda.stream);
      };
      const Matrix<T> dx_gpu = backward_max();
      CHECK(compare(dx_gpu, dx, reduction_tolerance<T>()));
      CHECK(bitwise_equal(dx_gpu, backward_max()));
      auto mean_d = poisoned<T>(nd, f, cuda.stream);
      ops::spmm_mean<T>(cuda.ctx, bc.device, x_d.cview(), mean_d.view());
      CHECK(compare(to_host(mean_d, cuda.stream), mean, reduction_tolerance<T>()));
      auto dmean_d = poisoned<T>(ns, f, cuda.stream);
      ops::spmm_mean_backward<T>(cuda.ctx, bc.device, dy_d.cview(), dmean_d.view());
      CHECK(compare(to_host(dmean_d, cuda.stream), dmean, reduction_tolerance<T>()));
    }
  }
}

TEMPLATE_TEST_CASE("ops::head_scale, head_scale_backward and axpy", "[gpu][ops][gated]", float, double) {
  using T = TestType;
  Cuda cuda;
  core::Rng rng(13, {1});
  const int64_t rows = 1029, heads = 8, ch = 9;
  const Matrix<T> gate = random_values<T>(rng, rows, heads);
  const Matrix<T> x = random_values<T>(rng, rows, heads * ch);
  const Matrix<T> dy = random_values<T>(rng, rows, heads * ch);
  Matrix<T> y(rows, heads * ch), dx(rows, heads * ch), dgate(rows, heads);
  ops::head_scale<T>(host(), gate.cview(), x.cview(), y.view());
  ops::head_scale_backward<T>(host(), gate.cview(), x.cview(), dy.cview(), dx.view(), dgate.view());
  const auto gate_d = to_device(gate, cuda.stream), x_d = to_device(x, cuda.stream), dy_d = to_device(dy, cuda.stream);
  auto y_d = poisoned<T>(rows, heads * ch, cuda.stream);
  ops::head_scale<T>(cuda.ctx, gate_d.cview(), x_d.cview(), y_d.view());
  CHECK(bitwise_equal(to_host(y_d, cuda.stream), y));  // one product per element
  auto dx_d = poisoned<T>(rows, heads * ch, cuda.stream);
  auto dgate_d = poisoned<T>(rows, heads, cuda.stream);
  ops::head_scale_backward<T>(cuda.ctx, gate_d.cview(), x_d.cview(), dy_d.cview(), dx_d.view(), dgate_d.view());
  CHECK(bitwise_equal(to_host(dx_d, cuda.stream), dx));
  CHECK(compare(to_host(dgate_d, cuda.stream), dgate, reduction_tolerance<T>()));
  // axpy: y += 0.5 x.
  Matrix<T> acc = y.clone();
  ops::axpy<T>(host(), T{0.5}, x.cview(), acc.view());
  ops::axpy<T>(cuda.ctx, T{0.5}, x_d.cview(), y_d.view());
  CHECK(compare(to_host(y_d, cuda.stream), acc, elementwise_tolerance<T>()));
}
