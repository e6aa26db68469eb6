#pragma once
// What the CPU-vs-CUDA op tests (test_ops_gpu.cpp, test_pointwise_ops_gpu.cpp, test_edge_cases_gpu.cpp,
// test_divergence_ops_gpu.cpp) share: their includes, names and fixtures' short forms, the host context and the
// feature widths they sweep.
// A test header for one binary: it brings names into the including file's scope on purpose.
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

namespace gnnpipe_op_tests {

using test::block_cases;
using test::BlockCase;
using test::Cuda;
using test::distinct_ids;
using test::random_values;

inline const OpContext& host() { return OpContext::host(); }

// Feature widths: one column, under a warp, a warp, odd, and a vector-friendly width and just past it.
inline constexpr int64_t kWidths[] = {1, 3, 32, 37, 128, 130};

}  // namespace gnnpipe_op_tests
using namespace gnnpipe_op_tests;
