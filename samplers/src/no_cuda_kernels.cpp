// The GPU sampler's launches in a build without CUDA: GpuNeighborSampler refuses a CPU device
// before it gets here, so these only say what is missing.
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/error.hpp"
#include "neighbor_kernels.hpp"

namespace gnnpipe::samplers::kernels {
namespace {
[[noreturn]] void no_cuda() {
  GNNPIPE_THROW(CudaError, "this gnnpipe was built without CUDA: the GPU sampler needs it (configure with -DGNNPIPE_CUDA=ON)");
}
}  // namespace

void launch_hop_phase(HopPhase, const hop::HopView&, int64_t, void*) { no_cuda(); }
void launch_set_local(int32_t*, const int32_t*, int64_t, int32_t, bool, void*) { no_cuda(); }
std::size_t scan_temp_bytes(int64_t) { no_cuda(); }
void exclusive_scan(const int64_t*, int64_t*, int64_t, int64_t, void*, std::size_t, void*) { no_cuda(); }
void exclusive_scan(const int32_t*, int32_t*, int64_t, int32_t, void*, std::size_t, void*) { no_cuda(); }

}  // namespace gnnpipe::samplers::kernels
