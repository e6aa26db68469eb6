// The GPU test binary. It exits 77 (ctest: skipped) with a message when this build has no CUDA
// backend or the machine has no GPU (no NVIDIA driver, or a driver that reports no device). A
// driver that cannot be asked (too old for the runtime, a stub library) is a failure, exit 1:
// skipping there would hide a broken GPU machine. Otherwise it runs every test in it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "gnnpipe/core/device.hpp"

int main(int argc, char** argv) {
  if (!gnnpipe::core::cuda_compiled()) {
    std::printf("gnnpipe_gpu_tests: SKIP: built without CUDA (configure with -DGNNPIPE_CUDA=ON)\n");
    return 77;
  }
  if (const auto& probe = gnnpipe::core::cuda_probe(); !probe.error.empty()) {
    std::printf("gnnpipe_gpu_tests: FAIL: CUDA cannot be used: %s\n", probe.error.c_str());
    return 1;
  }
  if (!gnnpipe::core::cuda_available()) {
    std::printf("gnnpipe_gpu_tests: SKIP: no CUDA device visible\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
