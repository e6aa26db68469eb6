// The GPU test binary. It exits 77 (ctest: skipped) with a message when this build has no CUDA
// backend or no GPU is visible; otherwise it runs every test in it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "gnnpipe/core/device.hpp"

int main(int argc, char** argv) {
  if (!gnnpipe::core::cuda_compiled()) {
    std::printf("gnnpipe_gpu_tests: SKIP: built without CUDA (configure with -DGNNPIPE_CUDA=ON)\n");
    return 77;
  }
  if (!gnnpipe::core::cuda_available()) {
    std::printf("gnnpipe_gpu_tests: SKIP: no CUDA device visible\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
