#include "gnnpipe/core/device.hpp"

#include <charconv>

#include "backend.hpp"
#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {

Device Device::cuda(int index) {
  GNNPIPE_CHECK_CONFIG(index >= 0, "CUDA device index must be >= 0, got {}", index);
  return Device(Type::kCuda, index);
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  constexpr std::string_view kPrefix = "cuda:";
  if (text.starts_with(kPrefix)) {
    const std::string_view digits = text.substr(kPrefix.size());
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && index >= 0) {
      return cuda(index);
    }
  }
  GNNPIPE_THROW(ConfigError, "device '{}' is not one of cpu, cuda, cuda:N", text);
}

std::string Device::str() const { return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index_); }

void Device::require_available() const {
  if (is_cpu()) return;
  GNNPIPE_CHECK_AS(CudaError, backend::compiled(),
                   "device {} requested, but this gnnpipe was built without CUDA (configure with -DGNNPIPE_CUDA=ON)",
                   str());
  const CudaProbe& probe = backend::probe();
  GNNPIPE_CHECK_AS(CudaError, probe.error.empty(), "device {} requested, but CUDA cannot be used: {}", str(), probe.error);
  GNNPIPE_CHECK_AS(CudaError, index_ < probe.device_count, "device {} requested, but {} CUDA device(s) are visible", str(),
                   probe.device_count);
}

bool cuda_compiled() { return backend::compiled(); }
const CudaProbe& cuda_probe() { return backend::probe(); }
int cuda_device_count() { return backend::device_count(); }
std::vector<GpuInfo> list_gpus() { return backend::gpus(); }

}  // namespace gnnpipe::core
