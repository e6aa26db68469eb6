#pragma once
// Where computation runs, chosen at run time: `cpu` or `cuda:N`. The CPU backend runs every
// stream's work inline, so the same pipeline, governor and model code runs without a GPU.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::core {

class Device {
 public:
  enum class Type { kCpu, kCuda };

  static Device cpu() { return Device(Type::kCpu, 0); }
  static Device cuda(int index);
  // Parses "cpu", "cuda" (= cuda:0) or "cuda:N". Throws ConfigError naming the text otherwise.
  // It does not check that the device exists: see require_available().
  static Device parse(std::string_view text);

  Type type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == Type::kCpu; }
  bool is_cuda() const { return type_ == Type::kCuda; }
  std::string str() const;

  // Throws CudaError when this is a CUDA device that this build or machine does not have.
  void require_available() const;

  friend bool operator==(const Device&, const Device&) = default;

 private:
  Device(Type type, int index) : type_(type), index_(index) {}
  Type type_;
  int index_;
};

// One visible GPU.
struct GpuInfo {
  int index = 0;
  std::string name;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

// What asking the CUDA driver for devices gave, once per process.
struct CudaProbe {
  int device_count = 0;
  // Empty when the answer can be trusted: GPUs found, a CPU-only build, no NVIDIA driver
  // installed, or a driver that reports no device. Otherwise why the driver could not be asked
  // (a driver older than the runtime, the toolkit's stub library, a broken installation); the
  // count is then 0, but that is an error to report, never "no GPU".
  std::string error;
};

// True when this build has the CUDA backend (GNNPIPE_CUDA) compiled in.
bool cuda_compiled();
const CudaProbe& cuda_probe();
// Number of usable GPUs: cuda_probe().device_count.
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }
// The visible GPUs (empty without any).
std::vector<GpuInfo> list_gpus();

}  // namespace gnnpipe::core
