// The cuSPARSE SpMM descriptor cache (models/cuda/cusparse_spmm.cpp): at most 16 entries keyed by
// (rows, cols, nnz, width, type, direction), the least recently used evicted, a hit re-pointed at
// the call's arrays. One context that sees more shapes than that must still compute what the CPU
// does: a hit must not use an earlier call's pointers, and an evicted shape is built again.
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include <cstdint>
#include <string>
#include <vector>

#include "device_helpers.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "op_fixtures.hpp"

using namespace gnnpipe;
using models::Matrix;
using models::OpContext;
using models::SpmmImpl;
using test::BlockCase;
using test::compare;
using test::reduction_tolerance;
namespace ops = models::ops;

TEMPLATE_TEST_CASE("cuSPARSE SpMM past its 16 cached descriptors: hits, evictions and rebuilt shapes match the CPU",
                   "[gpu][ops][spmm][cusparse]", float, double) {
  using T = TestType;
  test::Cuda cuda({.spmm = SpmmImpl::kCusparse});
  core::Rng rng(30, {1});
  const std::vector<BlockCase> blocks = test::block_cases(cuda.stream);
  const BlockCase* const large = &blocks.at(0);  // awkward weighted 1300 x 3000
  const BlockCase* const small = &blocks.at(2);  // square weighted 64 x 64

  // 20 distinct keys: two blocks, widths 1..5, forward and backward.
  struct Call {
    const BlockCase* block;
    int64_t f;
    bool backward;
  };
  std::vector<Call> calls;
  for (int64_t f = 1; f <= 5; ++f) {
    for (const BlockCase* bc : {large, small}) {
      for (const bool backward : {false, true}) calls.push_back({bc, f, backward});
    }
  }
  REQUIRE(calls.size() == 20);

  // Every call reads a fresh input (new values in a new buffer) into a fresh poisoned output, and
  // keeps both alive to the end of the test, so no two calls share an address: a hit that kept an
  // earlier call's pointers reads the wrong values or leaves NaN.
  std::vector<test::DeviceMatrix<T>> alive;
  auto run = [&](const Call& c) {
    const graph::Block& host_block = c.block->host;
    const int64_t in_rows = c.backward ? host_block.num_dst : host_block.num_src;
    const int64_t out_rows = c.backward ? host_block.num_src : host_block.num_dst;
    const Matrix<T> in = test::random_values<T>(rng, in_rows, c.f);
    Matrix<T> expected(out_rows, c.f);
    auto& in_dev = alive.emplace_back(test::to_device(in, cuda.stream));
    auto& out_dev = alive.emplace_back(test::poisoned<T>(out_rows, c.f, cuda.stream));
    if (c.backward) {
      ops::spmm_backward<T>(OpContext::host(), host_block, in.cview(), expected.view());
      ops::spmm_backward<T>(cuda.ctx, c.block->device, in_dev.cview(), out_dev.view());
    } else {
      ops::spmm<T>(OpContext::host(), host_block, in.cview(), expected.view());
      ops::spmm<T>(cuda.ctx, c.block->device, in_dev.cview(), out_dev.view());
    }
    return compare(test::to_host(out_dev, cuda.stream), expected, reduction_tolerance<T>());
  };
  auto describe = [](const Call& c) {
    return c.block->name + ", F " + std::to_string(c.f) + (c.backward ? ", backward" : ", forward");
  };

  alive.reserve(2 * (2 * calls.size() + 2));  // references into `alive` stay valid
  // First pass: 20 misses; the 17th to 20th evict the least recently used, width 1's four keys.
  for (const Call& c : calls) {
    INFO("first pass: " << describe(c));
    CHECK(run(c));
  }
  // Second pass, in reverse: widths 5 to 2 (the 16 cached keys) hit, re-pointed at new arrays;
  // width 1's four keys were evicted and are built again (evicting width 5's).
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    INFO("second pass: " << describe(*it));
    CHECK(run(*it));
  }
  // Width 5's last key, evicted by the second pass: built again, then a hit right after.
  for (int i = 0; i < 2; ++i) {
    INFO("again: " << describe(calls.back()));
    CHECK(run(calls.back()));
  }
}

#endif  // GNNPIPE_TEST_WITH_CUDA
