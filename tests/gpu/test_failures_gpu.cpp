// The GPU's failure paths: a budget too small fails with OutOfBudget (exit code 4 through the
// program) and leaves the device usable; a device index past the visible GPUs is refused with a
// CudaError naming the device (exit code 4), never a crash.
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)
#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "device_helpers.hpp"
#include "experiment_helpers.hpp"
#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/experiments/commands/cli.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using Catch::Matchers::Contains;

namespace {

// Full-batch GCN on 600 nodes (tests/unit/test_trainer.cpp's tiny experiment, 3 epochs): its
// activations need tens of KiB, so a 4 KiB budget fails in the first training step.
const char* kTiny = R"(
name: tiny
dataset: {synthetic: {nodes: 600, avg_degree: 6, features: 8, classes: 3, seed: 1, feature_noise: 2.0}}
model: {type: gcn, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: full}
optimizer: {type: adam, lr: 0.01, weight_decay: 5.0e-4}
run: {epochs: 3, seed: 3}
)";

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

// `gnnpipe args...` in-process (experiments::run_cli, what main() calls).
CliResult cli(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"gnnpipe"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = experiments::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

// The message of the CudaError `f` throws; otherwise a text that fails every Contains() below.
template <class F>
std::string cuda_error_of(F&& f) {
  try {
    f();
  } catch (const core::CudaError& e) {
    return e.message();
  } catch (const std::exception& e) {
    return std::string("<not a CudaError> ") + e.what();
  }
  return "<no exception>";
}

// A copy through device memory at `device` (`n` int32 values) comes back intact: the device works.
bool round_trip(void* device, std::size_t n, const core::Stream& stream) {
  auto sent = core::Buffer<int32_t>::pinned(n);
  std::iota(sent.span().begin(), sent.span().end(), 7);
  auto back = core::Buffer<int32_t>::pinned(n);
  std::fill(back.span().begin(), back.span().end(), -1);
  core::copy_bytes_async(device, sent.data(), n * sizeof(int32_t), stream);
  core::copy_bytes_async(back.data(), device, n * sizeof(int32_t), stream);
  stream.synchronize();
  return std::equal(sent.span().begin(), sent.span().end(), back.span().begin());
}

}  // namespace

TEST_CASE("the caching allocator on the GPU: past memory.limit OutOfBudget before the driver, then still usable",
          "[gpu][allocator][errors]") {
  const core::Stream stream(test::gpu());
  memory::CachingAllocator allocator(test::gpu(), std::size_t{1} << 20);  // 1 MiB
  auto first = allocator.allocate(std::size_t{512} << 10, stream);
  CHECK_THROWS_AS(allocator.allocate(std::size_t{1} << 20, stream), core::OutOfBudget);  // 512 KiB + 1 MiB
  CHECK(allocator.stats().driver_allocations == 1);                  // the refused request never reached cudaMalloc
  auto second = allocator.allocate(std::size_t{256} << 10, stream);  // fits beside the first
  CHECK(round_trip(first.data(), (std::size_t{512} << 10) / sizeof(int32_t), stream));
  CHECK(round_trip(second.data(), (std::size_t{256} << 10) / sizeof(int32_t), stream));
  first.free();
  second.free();

  // An op context on that budget: its workspaces (cuBLAS's, the column sums') take at most an
  // eighth of it; a DeviceArray past the budget throws, then the context's ops still run.
  const models::OpContext ctx(stream, {}, &allocator);
  CHECK(ctx.library_workspace_bytes() > 0);
  CHECK(ctx.library_workspace_bytes() <= (std::size_t{1} << 20) / 8);
  models::DeviceArray<float> too_big;
  CHECK_THROWS_AS(too_big.ensure(ctx, std::size_t{1} << 18), core::OutOfBudget);  // 1 MiB
  models::DeviceArray<float> fits;
  const models::MatrixView<float> m = fits.matrix(ctx, 100, 300);  // 117 KiB
  models::ops::zero<float>(ctx, m);
  const std::vector<float> zeros = test::to_host(m.data, static_cast<std::size_t>(m.size()), stream);
  CHECK(std::all_of(zeros.begin(), zeros.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("a GPU run past memory.limit fails with OutOfBudget (exit code 4), the next run on the device succeeds",
          "[gpu][runs][errors]") {
  test::TempDir dir;
  CHECK_THROWS_AS(test::run_experiment(kTiny, {"run.device=cuda:0", "memory.limit=4KiB"}, dir / "small"),
                  core::OutOfBudget);
  // The run directory records the failure (as on the CPU: test_runner.cpp).
  const auto small = nlohmann::json::parse(test::read_file(dir / "small" / "summary.json"));
  CHECK(small["status"] == "failed");
  CHECK_THAT(small["error"].get<std::string>(), Contains("memory.limit"));
  CHECK(small["epochs"] == 0);

  test::write_text(dir / "tiny.yaml", kTiny);
  const std::string config = (dir / "tiny.yaml").string();
  const auto refused = cli({"run", config, "--set", "run.device=cuda:0", "--set", "memory.limit=4KiB", "--out",
                            (dir / "cli_small").string()});
  CHECK(refused.code == 4);
  CHECK_THAT(refused.err, Contains("memory.limit") && Contains("budget of 3.50 KiB"));  // 4 KiB - 512 B reserve
  CHECK(refused.err.find('\n') == refused.err.size() - 1);  // one line
  const auto cli_small = nlohmann::json::parse(test::read_file(dir / "cli_small" / "summary.json"));
  CHECK(cli_small["status"] == "failed");
  CHECK_THAT(cli_small["error"].get<std::string>(), Contains("memory.limit") && Contains("budget of 3.50 KiB"));

  // The same process and device, with room: both ways succeed within the budget.
  const auto fits = test::run_experiment(kTiny, {"run.device=cuda:0", "memory.limit=64MiB"}, dir / "fits");
  CHECK(fits.summary["device"] == "cuda:0");
  CHECK(fits.summary["epochs"] == 3);
  CHECK(fits.summary["memory"]["peak_device_bytes"].get<std::size_t>() > 0);
  CHECK(fits.summary["memory"]["peak_device_bytes"].get<std::size_t>() <= std::size_t{64} << 20);
  const auto ok = cli({"run", config, "--set", "run.device=cuda:0", "--set", "memory.limit=64MiB", "--out",
                       (dir / "cli_fits").string()});
  CHECK(ok.code == 0);
  CHECK(ok.err.empty());
  CHECK(std::filesystem::exists(dir / "cli_fits" / "summary.json"));
}

TEST_CASE("a CUDA device past the visible ones is refused with a CudaError naming it, not a crash",
          "[gpu][device][errors]") {
  // cuda:<count> is the first index that does not exist (cuda:1 on a one-GPU machine).
  const int count = core::cuda_device_count();
  const core::Device missing = core::Device::cuda(count);
  const std::string name = missing.str();
  const std::string refusal =
      "device " + name + " requested, but " + std::to_string(count) + " CUDA device(s) are visible";
  INFO("device " << name);
  CHECK_THAT(cuda_error_of([&] { core::Stream s(missing); }), Contains(refusal));
  CHECK_THAT(cuda_error_of([&] { core::Event e(missing); }), Contains(refusal));
  CHECK_THAT(cuda_error_of([&] { auto b = core::Buffer<float>::on(missing, 16); }), Contains(refusal));
  CHECK_THAT(cuda_error_of([&] { missing.require_available(); }), Contains(refusal));

  // A run on it is refused before its run directory exists, and the program exits 4 naming it.
  test::TempDir dir;
  CHECK_THAT(cuda_error_of([&] { test::run_experiment(kTiny, {"run.device=" + name}, dir / "run"); }),
             Contains(refusal));
  CHECK_FALSE(std::filesystem::exists(dir / "run"));
  test::write_text(dir / "tiny.yaml", kTiny);
  const auto r =
      cli({"run", (dir / "tiny.yaml").string(), "--set", "run.device=" + name, "--out", (dir / "cli").string()});
  CHECK(r.code == 4);
  CHECK(r.err == "gnnpipe: " + refusal + "\n");
  CHECK_FALSE(std::filesystem::exists(dir / "cli"));

  // cuda:0 is unaffected.
  const core::Stream stream(test::gpu());
  auto buffer = core::Buffer<int32_t>::on(test::gpu(), 1024);
  CHECK(round_trip(buffer.data(), buffer.size(), stream));
}

#endif  // GNNPIPE_TEST_WITH_CUDA
