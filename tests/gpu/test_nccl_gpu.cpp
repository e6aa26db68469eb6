// NCCL sums for data-parallel ranks on GPUs (issue #42): a run whose step goes through a one-rank
// NCCL collective (the gradients and the loss reduced and broadcast on the train stream) trains
// bitwise what the same run without one trains, in both pipeline modes; and the cost of the sum
// per step (the model's gradients) is printed. Skipped where this build has no NCCL or
// libnccl.so.2 cannot be loaded (put PyTorch's nvidia/nccl/lib on LD_LIBRARY_PATH).
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "experiment_helpers.hpp"
#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/pipeline/nccl_collective.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

const core::Device kGpu = core::Device::cuda(0);

// A one-rank NCCL collective, or null (with the reason printed) where there is none.
std::unique_ptr<pipeline::Collective> one_rank_nccl() {
  if (!pipeline::nccl_compiled()) {
    WARN("SKIP: this build has no NCCL (nccl.h at configure time)");
    return nullptr;
  }
  try {
    return pipeline::make_nccl_collective(nullptr, 0, 1, kGpu, {});
  } catch (const core::ConfigError& e) {
    WARN("SKIP: " << e.what());
    return nullptr;
  }
}

const char* const kConfig = R"(
name: nccl_one_rank
dataset: {synthetic: {nodes: 3000, avg_degree: 10, features: 32, classes: 6, seed: 2}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [10, 5], batch_size: 256}
optimizer: {type: adam, lr: 0.01}
run: {device: cuda, epochs: 3, seed: 4, checkpoint_every: 0}
)";

}  // namespace

TEST_CASE("a one-rank NCCL run trains bitwise what a single process trains", "[gpu][nccl]") {
  std::unique_ptr<pipeline::Collective> nccl = one_rank_nccl();
  if (!nccl) return;
  test::TempDir dir;
  for (const char* mode : {"pipelined", "sequential"}) {
    INFO("pipeline.mode " << mode);
    const std::vector<std::string> sets{std::string("pipeline.mode=") + mode};
    const auto plain = test::run_experiment(kConfig, sets, dir.path() / (std::string("plain-") + mode));
    experiments::TrainOptions options;
    options.collective = nccl.get();
    const auto summed = test::run_experiment(kConfig, sets, dir.path() / (std::string("nccl-") + mode), options);
    CHECK(summed.summary["params_checksum"] == plain.summary["params_checksum"]);
    CHECK(summed.metrics == plain.metrics);
  }
}

TEST_CASE("the NCCL sum of a step's gradients: its cost", "[gpu][nccl][bench]") {
  std::unique_ptr<pipeline::Collective> nccl = one_rank_nccl();
  if (!nccl) return;
  const core::Stream stream(kGpu);
  for (const std::size_t count : {std::size_t{99530}, std::size_t{1} << 20, std::size_t{16} << 20}) {
    core::Buffer<float> grads(count, core::MemoryKind::kDevice, kGpu);
    nccl->sum_on_device(std::span<float>(grads.data(), count), stream);  // warm
    stream.synchronize();
    constexpr int kSteps = 50;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSteps; ++i) nccl->sum_on_device(std::span<float>(grads.data(), count), stream);
    stream.synchronize();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kSteps;
    std::printf("nccl: one rank, %zu floats (%.1f MB): %.1f us a sum (reduce + broadcast)\n", count,
                static_cast<double>(count) * 4e-6, us);
  }
}

#endif
