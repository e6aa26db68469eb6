// The backend-neutral pieces of the ops: the CPU context, memory that follows a context, parameter
// placement, and the dispatching ops on the CPU (which must be exactly their CPU twins).
#include <catch2/catch.hpp>

#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/models/ops/loss.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/param_store.hpp"
#include "model_helpers.hpp"

using namespace gnnpipe;
using models::Matrix;
using models::OpContext;

TEST_CASE("the host op context runs inline on the CPU, spmm implementations parse strictly", "[models][ops]") {
  const OpContext& host = OpContext::host();
  CHECK(host.device() == core::Device::cpu());
  CHECK_FALSE(host.is_cuda());
  CHECK(host.cuda() == nullptr);
  CHECK(host.allocator() == nullptr);
  CHECK_FALSE(host.options().allow_tf32);
  CHECK(models::parse_spmm_impl("cusparse", "run.spmm") == models::SpmmImpl::kCusparse);
  CHECK(models::parse_spmm_impl("kernel", "run.spmm") == models::SpmmImpl::kKernel);
  CHECK(test::message_of<core::ConfigError>([] { models::parse_spmm_impl("fast", "run.spmm"); }) ==
        "run.spmm: 'fast' is not an SpMM implementation (allowed: kernel, cusparse)");
  if (!core::cuda_compiled()) {
    const core::Stream cpu(core::Device::cpu());
    CHECK_NOTHROW(OpContext(cpu));  // a context on a CPU stream is a CPU context
  }
}

TEST_CASE("DeviceArray grows only, and draws from the context's allocator under its budget", "[models][ops]") {
  const core::Stream stream(core::Device::cpu());
  memory::CachingAllocator allocator(core::Device::cpu(), 64 * 1024);
  const OpContext ctx(stream, {}, &allocator);
  models::DeviceArray<float> a;
  CHECK(a.capacity() == 0);
  float* first = a.ensure(ctx, 100);
  CHECK(a.capacity() == 100);
  CHECK(a.ensure(ctx, 50) == first);  // no shrink, no reallocation
  CHECK(allocator.stats().in_use_bytes >= 400);
  const auto m = a.matrix(ctx, 20, 10);
  CHECK(m.rows == 20);
  CHECK(a.capacity() == 200);
  CHECK_THROWS_AS(a.ensure(ctx, 1 << 20), core::OutOfBudget);  // 4 MiB past a 64 KiB budget
}

TEST_CASE("ParamStore: placement on the CPU keeps host views, snapshots copy every value", "[models][ops]") {
  models::ParamStore<float> a, b;
  for (auto* s : {&a, &b}) {
    s->add("w", 2, 3, 0);
    s->add("bias", 1, 3, 0, models::Init::kZeros);
  }
  a.initialize(7);
  b.initialize(8);
  const core::Stream& host_stream = OpContext::host().stream();
  CHECK(a.size() == 9);
  CHECK(a.checksum(host_stream) != b.checksum(host_stream));
  a.place(OpContext::host());
  CHECK_THROWS_AS(a.place(OpContext::host()), core::Error);
  CHECK_THROWS_AS(a.add("late", 1, 1, 0), core::Error);
  CHECK(a.device() == core::Device::cpu());
  const std::vector<float> values = a.values_to_host(host_stream);
  CHECK(std::vector<float>(a.values().begin(), a.values().end()) == values);
  b.copy_values_from(a, OpContext::host().stream());
  CHECK(b.checksum(host_stream) == a.checksum(host_stream));
  a.grads()[4] = 3;
  a.zero_grad();
  CHECK(a.grads()[4] == 0);
}

TEST_CASE("ParamStore: an inference store is placed without gradients and charges only its values", "[models][ops]") {
  const core::Stream stream(core::Device::cpu());
  for (const bool grads : {true, false}) {
    memory::CachingAllocator allocator(core::Device::cpu(), 64 * 1024);
    const OpContext ctx(stream, {}, &allocator);
    models::ParamStore<float> p;
    p.add("w", 100, 20, 0);
    p.initialize(3);
    const uint64_t before = p.checksum(OpContext::host().stream());
    p.place(ctx, grads);
    CHECK(p.checksum(stream) == before);
    CHECK(allocator.stats().in_use_bytes == (grads ? 2 : 1) * memory::CachingAllocator::size_class(2000 * sizeof(float)));
    if (grads) {
      CHECK_NOTHROW(p.zero_grad(ctx));
    } else {
      CHECK_THROWS_WITH(p.grad(0), Catch::Contains("parameter w: the store was placed without gradients"));
      CHECK_THROWS_AS(p.zero_grad(ctx), core::Error);
    }
  }
}

TEST_CASE("ParamStore: a parameter past its budget is an OutOfBudget before any memory is taken", "[models][ops]") {
  models::ParamStore<float> p;
  p.limit_bytes(64 * 1024);
  p.add("w", 100, 20, 0);  // 2 x 8,000 bytes of values and gradients
  CHECK_THROWS_WITH(p.add("huge", 1433, 100000000, 0),
                    Catch::Contains("model: with parameter huge (1433 x 100000000) the parameters and their gradients "
                                    "take 1.04 TiB, more than the 64.00 KiB budget (memory.limit)"));
  CHECK_THROWS_AS(p.add("huge", 1433, 100000000, 0), core::OutOfBudget);
  CHECK(p.count() == 1);
  // A model's store is bounded by its context's budget; model.layers by GnnModel::kMaxLayers.
  memory::CachingAllocator allocator(core::Device::cpu(), 64 * 1024);
  const core::Stream stream(core::Device::cpu());
  const OpContext ctx(stream, {}, &allocator);
  models::ModelOptions o;
  o.hidden = 1 << 20;
  CHECK_THROWS_AS(models::GnnModel<float>(o, 8, 3, 1, ctx), core::OutOfBudget);
  o.hidden = 8;
  o.layers = models::GnnModel<float>::kMaxLayers + 1;
  CHECK_THROWS_WITH(models::GnnModel<float>(o, 8, 3, 1, ctx), Catch::Contains("model.layers: must be in [1, 1024], got 1025"));
}

TEST_CASE("ops on the host context are their CPU twins, the loss is written, not returned", "[models][ops]") {
  const Matrix<double> logits(3, 2, {1, 2, 0.5, -1, 3, 3});
  const std::vector<int32_t> labels{1, 0, 1}, rows{2, 0};
  const std::vector<float> weights{0.25f, 2.0f};
  Matrix<double> d_ops(3, 2), d_cpu(3, 2);
  double loss = -1;
  models::ops::log_softmax_nll<double>(OpContext::host(), logits.view(), labels, rows, weights, d_ops.view(), nullptr,
                                       &loss);
  const double expected = models::cpu::log_softmax_nll<double>(logits.view(), labels, rows, weights, d_cpu.view());
  CHECK(loss == expected);
  CHECK(test::values_of(d_ops.cview()) == test::values_of(d_cpu.cview()));

  Matrix<double> y(2, 3);
  y.fill(1);
  const Matrix<double> bias(1, 3, {1, 2, 3});
  models::ops::bias_add<double>(OpContext::host(), y.view(), bias.view());
  CHECK(test::values_of(y.cview()) == std::vector<double>{2, 3, 4, 2, 3, 4});
  Matrix<double> dbias(1, 3, {10, 10, 10});
  models::ops::bias_grad_accumulate<double>(OpContext::host(), y.view(), dbias.view());
  CHECK(test::values_of(dbias.cview()) == std::vector<double>{14, 16, 18});
  const Matrix<double> short_bias(1, 2);
  CHECK_THROWS_AS(models::ops::bias_add<double>(OpContext::host(), y.view(), short_bias.view()), core::Error);
}
