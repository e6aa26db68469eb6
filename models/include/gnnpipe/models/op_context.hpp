#pragma once
// OpContext: where the model ops run (docs/DESIGN.md §2 "Ops", §6.1 "pass the stream explicitly").
//   CPU   (OpContext::host()): ops run inline on the calling thread over host memory; the CPU
//         ops of models/ops/ are both this backend and the reference of the parity tests.
//   CUDA  (OpContext(stream, ...)): ops queue kernels, cuBLAS and cuSPARSE calls on `stream`,
//         whose handles the context owns (bound to that stream, never to a "current" stream);
//         nothing in an op synchronises the host.
// Memory the ops need (activations, workspaces) comes from the context's allocator when it has one
// (memory::CachingAllocator: the run's budget), else straight from the driver. This header is
// CUDA-free: the CUDA state is an opaque cuda::Context.
// A context is used by one thread at a time (like its stream); it is move-only.
#include <memory>
#include <string_view>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"

namespace gnnpipe::models {

namespace cuda {
class Context;  // models/cuda/cuda_context.hpp
}

// Which implementation runs SpMM over a block on the GPU.
enum class SpmmImpl {
  kKernel,    // gnnpipe's own kernel (one warp per destination row, edge order: deterministic)
  kCusparse,  // cuSPARSE generic SpMM (CSR, deterministic algorithm), descriptors cached
};
std::string_view to_string(SpmmImpl impl);
// Parses "kernel" or "cusparse"; throws ConfigError naming `key` otherwise.
SpmmImpl parse_spmm_impl(std::string_view text, std::string_view key);

struct OpOptions {
  // cuBLAS may use TF32 tensor cores for float GEMMs: faster on Ampere and later, but only ~1e-3
  // relative accuracy, so parity with the CPU needs it off (the default).
  bool allow_tf32 = false;
  SpmmImpl spmm = SpmmImpl::kKernel;
  // CPU: a training forward gives the first layer its dropped input in CSR form when every row is
  // at most an eighth non-zero (sparse features) and the layer takes it (Layer::takes_linear_input),
  // skipping the dense dropped copy and the GEMMs over its zeros (ops/sparse_input.hpp). Off: always
  // the dense form (the tests compare the two). No effect on CUDA.
  bool sparse_input = true;

  bool operator==(const OpOptions&) const = default;
};

class OpContext {
 public:
  // The CPU context shared by all host-side callers (ops are inline, there is no state).
  static const OpContext& host();

  // A CPU context with its own (inline) stream.
  OpContext();
  // Ops on `stream` (which must outlive the context). On a CUDA stream this creates the cuBLAS and
  // cuSPARSE handles; throws CudaError when this build or machine has no CUDA. `allocator`, when
  // given, must be on the stream's device and outlive the context; on a CUDA stream cuBLAS's
  // workspace is then drawn from it too (NVIDIA's recommended size: 32 MiB on Hopper and later,
  // 4 MiB before), so the library's memory counts against the budget.
  explicit OpContext(const core::Stream& stream, OpOptions options = {}, memory::CachingAllocator* allocator = nullptr);
  OpContext(OpContext&&) noexcept;
  OpContext& operator=(OpContext&&) noexcept;
  OpContext(const OpContext&) = delete;
  OpContext& operator=(const OpContext&) = delete;
  ~OpContext();

  core::Device device() const { return stream_->device(); }
  bool is_cuda() const { return device().is_cuda(); }
  const core::Stream& stream() const { return *stream_; }
  const OpOptions& options() const { return options_; }
  memory::CachingAllocator* allocator() const { return allocator_; }
  // The CUDA state (handles, descriptor cache) for code under models/cuda/; nullptr on the CPU.
  cuda::Context* cuda() const { return cuda_.get(); }
  // Device memory the context holds for libraries and fixed-order reductions (cuBLAS's workspace,
  // the column sums' partials; 0 on the CPU).
  std::size_t library_workspace_bytes() const { return cublas_workspace_.size() + reduction_workspace_.size(); }

 private:
  std::unique_ptr<core::Stream> own_stream_;  // the CPU context's inline stream
  const core::Stream* stream_ = nullptr;
  OpOptions options_;
  memory::CachingAllocator* allocator_ = nullptr;
  memory::DeviceBlock cublas_workspace_;     // outlives the handles that use it
  memory::DeviceBlock reduction_workspace_;  // the column sums' per-block partials (bias gradients)
  std::unique_ptr<cuda::Context> cuda_;
};

}  // namespace gnnpipe::models
