#include <catch2/catch.hpp>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/error.hpp"

using namespace gnnpipe::core;

TEST_CASE("Device::parse accepts cpu, cuda and cuda:N", "[core][device]") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:3").index() == 3);
  CHECK(Device::parse("cuda:3").is_cuda());
  CHECK(Device::parse("cuda:12").str() == "cuda:12");
  CHECK(Device::cpu().str() == "cpu");
}

TEST_CASE("Device::parse rejects anything else with a ConfigError naming the text", "[core][device]") {
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:1x", "CPU", "cuda:0 ", ""}) {
    INFO(bad);
    CHECK_THROWS_AS(Device::parse(bad), ConfigError);
  }
  CHECK_THROWS_WITH(Device::parse("gpu:0"), Catch::Contains("'gpu:0'") && Catch::Contains("cpu, cuda, cuda:N"));
}

TEST_CASE("device discovery never fails and agrees with itself", "[core][device]") {
  const int count = cuda_device_count();
  CHECK(count >= 0);
  CHECK(cuda_available() == (count > 0));
  CHECK(static_cast<int>(list_gpus().size()) == count);
  if (!cuda_compiled()) CHECK(count == 0);
  Device::cpu().require_available();
}

TEST_CASE("requiring a CUDA device that is not there is a CudaError", "[core][device]") {
  const Device missing = Device::cuda(cuda_device_count());  // one past the last
  CHECK_THROWS_AS(missing.require_available(), CudaError);
}
