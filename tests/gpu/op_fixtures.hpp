#pragma once
// Inputs of the CPU-vs-CUDA op tests (test_ops_gpu.cpp, test_pointwise_ops_gpu.cpp,
// test_edge_cases_gpu.cpp, test_divergence_ops_gpu.cpp): a CUDA op context on a stream of its own, random matrices, and blocks
// with the rows that break kernels, each with its device copy; the SpMM parity check they use.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device_helpers.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "model_helpers.hpp"

namespace gnnpipe::test {

// A CUDA context on a stream of its own (cuda:0).
struct Cuda {
  explicit Cuda(models::OpOptions options = {}, memory::CachingAllocator* allocator = nullptr)
      : ctx(stream, options, allocator) {}
  core::Stream stream{gpu()};
  models::OpContext ctx;
};

// Uniform values in [lo, hi) as T.
template <class T>
models::Matrix<T> random_values(core::Rng& rng, int64_t rows, int64_t cols, double lo = -1, double hi = 1) {
  const models::Matrix<double> m = random_matrix(rng, rows, cols, lo, hi);
  std::vector<T> values(static_cast<std::size_t>(m.size()));
  std::transform(m.flat().begin(), m.flat().end(), values.begin(), [](double v) { return static_cast<T>(v); });
  return models::Matrix<T>(rows, cols, std::move(values));
}

// `count` distinct values of [0, n) in random order (a partial Fisher-Yates shuffle).
inline std::vector<int32_t> distinct_ids(core::Rng& rng, int32_t n, int32_t count) {
  std::vector<int32_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  for (int32_t i = 0; i < count; ++i) {
    const auto j = i + static_cast<int32_t>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(ids[static_cast<std::size_t>(i)], ids[static_cast<std::size_t>(j)]);
  }
  ids.resize(static_cast<std::size_t>(count));
  return ids;
}

// A block with the rows that break kernels: empty destinations (every 7th), one destination with
// min(1500, num_src) in-edges (more than a 1024-thread block) and one with 33 (a warp and one), one
// whose only edge is its self-loop, self-loops elsewhere, and source 1 feeding every other row (a
// transpose row of > 1024 entries for num_dst = 1300). Weights in [0.1, 1.1) when `weighted`.
inline graph::Block awkward_block(core::Rng& rng, graph::NodeId num_dst, graph::NodeId num_src, bool weighted) {
  std::vector<graph::EdgeOffset> offsets{0};
  std::vector<graph::NodeId> indices;
  std::vector<float> weights;
  for (graph::NodeId v = 0; v < num_dst; ++v) {
    std::vector<graph::NodeId> row;
    if (v % 7 == 0) {
      // empty
    } else if (v == 1) {
      row = distinct_ids(rng, num_src, std::min<graph::NodeId>(1500, num_src));
    } else if (v == 2) {
      row = distinct_ids(rng, num_src, std::min<graph::NodeId>(33, num_src));
    } else if (v == 3) {
      row = {3};
    } else {
      row = distinct_ids(rng, num_src, static_cast<graph::NodeId>(rng.below(12)));
      for (const graph::NodeId extra : {v, graph::NodeId{1}}) {
        if ((extra == 1 || rng.below(2) == 0) && std::find(row.begin(), row.end(), extra) == row.end()) {
          row.push_back(extra);
        }
      }
    }
    for (const graph::NodeId u : row) {
      indices.push_back(u);
      if (weighted) weights.push_back(0.1f + rng.uniform());
    }
    offsets.push_back(static_cast<graph::EdgeOffset>(indices.size()));
  }
  return graph::Block::from_csr(num_dst, num_src, graph::HostArray<graph::EdgeOffset>(std::move(offsets)),
                                graph::HostArray<graph::NodeId>(std::move(indices)),
                                graph::HostArray<float>(std::move(weights)), "awkward block");
}

// A block and its device copy.
struct BlockCase {
  std::string name;
  graph::Block host;
  graph::Block device;
};

// The blocks every graph op runs on: large awkward ones (weighted and not, num_dst < num_src), a
// small square one (full-batch shape) and one without edges (E = 0: empty edge matrices).
inline std::vector<BlockCase> block_cases(const core::Stream& stream) {
  core::Rng rng(2024, {7});
  std::vector<BlockCase> cases;
  auto add = [&](std::string name, graph::Block block) {
    graph::Block device = to_device(block, stream);
    cases.push_back({std::move(name), std::move(block), std::move(device)});
  };
  add("awkward weighted 1300 x 3000", awkward_block(rng, 1300, 3000, true));
  add("awkward unweighted 1300 x 3000", awkward_block(rng, 1300, 3000, false));
  add("square weighted 64 x 64", awkward_block(rng, 64, 64, true));
  add("no edges 5 x 9",
      graph::Block::from_csr(5, 9, graph::HostArray<graph::EdgeOffset>(std::vector<graph::EdgeOffset>(6, 0)),
                             graph::HostArray<graph::NodeId>(), graph::HostArray<float>()));
  return cases;
}

// ops::spmm and ops::spmm_backward on `cuda` against the CPU twins for one block and width F:
// outputs poisoned first, compared within the reduction tolerance, and each run twice to be
// bitwise equal (determinism).
// MH-Aug's scaled SpMMs (ops::spmm_bias_scaled, ops::spmm_backward_scaled): against the CPU twins
// (which fuse the scaling), factors 0, negative, fractional and 1, and every accumulate case.
template <class T>
void check_scaled_spmm_against_cpu(Cuda& cuda, const BlockCase& bc, const models::Matrix<T>& x,
                                   const models::Matrix<T>& dy, const models::Matrix<T>& bias, core::Rng& rng) {
  const models::OpContext& host = models::OpContext::host();
  const int64_t f = x.cols();
  std::vector<float> factors(static_cast<std::size_t>(bc.host.num_src));
  for (std::size_t i = 0; i < factors.size(); ++i) factors[i] = std::array{0.0f, 1.25f, -2.0f, 0.6f, 1.0f}[i % 5];
  const auto x_dev = to_device(x, cuda.stream);
  const auto dy_dev = to_device(dy, cuda.stream);
  const auto bias_dev = to_device(bias, cuda.stream);
  const auto factors_dev = to_device<float>(factors, cuda.stream);
  const std::span<const float> f_dev = device_span(factors_dev);
  models::Matrix<T> y(bc.host.num_dst, f), scratch_host(bc.host.num_src, f);
  models::ops::spmm_bias_scaled<T>(host, bc.host, x.cview(), factors, scratch_host.view(), bias.cview(), true,
                                   y.view());
  auto scratch = poisoned<T>(bc.host.num_src, f, cuda.stream);
  auto y_dev = poisoned<T>(bc.host.num_dst, f, cuda.stream);
  models::ops::spmm_bias_scaled<T>(cuda.ctx, bc.device, x_dev.cview(), f_dev, scratch.view(), bias_dev.cview(), true,
                                   y_dev.view());
  CHECK(compare(to_host(y_dev, cuda.stream), y, reduction_tolerance<T>()));
  const models::Matrix<T> g0 = random_values<T>(rng, bc.host.num_src, f);
  for (const bool empty : {false, true}) {
    for (const bool accumulate : {false, true}) {
      INFO("spmm_backward_scaled, factors " << (empty ? "none" : "given") << ", accumulate " << accumulate);
      const std::span<const float> fh = empty ? std::span<const float>{} : std::span<const float>(factors);
      models::Matrix<T> g = g0.clone();
      models::ops::spmm_backward_scaled<T>(host, bc.host, dy.cview(), fh, accumulate, scratch_host.view(), g.view());
      auto g_dev = to_device(g0, cuda.stream);
      models::ops::spmm_backward_scaled<T>(cuda.ctx, bc.device, dy_dev.cview(), empty ? std::span<const float>{} : f_dev,
                                           accumulate, scratch.view(), g_dev.view());
      CHECK(compare(to_host(g_dev, cuda.stream), g, reduction_tolerance<T>()));
    }
  }
}

template <class T>
void check_spmm_against_cpu(Cuda& cuda, const BlockCase& bc, int64_t f, core::Rng& rng) {
  const models::OpContext& host = models::OpContext::host();
  const models::Matrix<T> x = random_values<T>(rng, bc.host.num_src, f);
  const models::Matrix<T> dy = random_values<T>(rng, bc.host.num_dst, f);
  models::Matrix<T> y(bc.host.num_dst, f);
  models::Matrix<T> dx(bc.host.num_src, f);
  models::ops::spmm<T>(host, bc.host, x.cview(), y.view());
  models::ops::spmm_backward<T>(host, bc.host, dy.cview(), dx.view());
  const auto x_dev = to_device(x, cuda.stream);
  const auto dy_dev = to_device(dy, cuda.stream);
  auto forward = [&] {
    auto out = poisoned<T>(bc.host.num_dst, f, cuda.stream);
    models::ops::spmm<T>(cuda.ctx, bc.device, x_dev.cview(), out.view());
    return to_host(out, cuda.stream);
  };
  auto backward = [&] {
    auto out = poisoned<T>(bc.host.num_src, f, cuda.stream);
    models::ops::spmm_backward<T>(cuda.ctx, bc.device, dy_dev.cview(), out.view());
    return to_host(out, cuda.stream);
  };
  const models::Matrix<T> y_gpu = forward();
  CHECK(compare(y_gpu, y, reduction_tolerance<T>()));
  CHECK(bitwise_equal(y_gpu, forward()));
  const models::Matrix<T> dx_gpu = backward();
  CHECK(compare(dx_gpu, dx, reduction_tolerance<T>()));
  CHECK(bitwise_equal(dx_gpu, backward()));
  // The fused epilogue: against the CPU twin, and bitwise the device's spmm, bias_add and ReLU in turn.
  const models::Matrix<T> bias = random_values<T>(rng, 1, f);
  const auto bias_dev = to_device(bias, cuda.stream);
  for (const bool relu : {false, true}) {
    INFO("spmm_bias, relu " << relu);
    models::Matrix<T> yb(bc.host.num_dst, f);
    models::ops::spmm_bias<T>(host, bc.host, x.cview(), bias.cview(), relu, yb.view());
    auto fused = poisoned<T>(bc.host.num_dst, f, cuda.stream);
    models::ops::spmm_bias<T>(cuda.ctx, bc.device, x_dev.cview(), bias_dev.cview(), relu, fused.view());
    auto apart = poisoned<T>(bc.host.num_dst, f, cuda.stream);
    models::ops::spmm<T>(cuda.ctx, bc.device, x_dev.cview(), apart.view());
    models::ops::bias_add<T>(cuda.ctx, apart.view(), bias_dev.cview());
    if (relu) models::ops::activation<T>(cuda.ctx, models::Activation::kRelu, T{0}, apart.cview(), apart.view());
    const models::Matrix<T> fused_host = to_host(fused, cuda.stream);
    CHECK(compare(fused_host, yb, reduction_tolerance<T>()));
    CHECK(bitwise_equal(fused_host, to_host(apart, cuda.stream)));
  }
  check_scaled_spmm_against_cpu<T>(cuda, bc, x, dy, bias, rng);
}

}  // namespace gnnpipe::test
