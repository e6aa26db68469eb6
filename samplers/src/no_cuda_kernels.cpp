// The GPU sampler's launches in a build without CUDA: GpuNeighborSampler refuses a CPU device
// before it gets here, so these only say what is missing.
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/error.hpp"
#include "neighbor_kernels.hpp"
#include "subgraph_kernels.hpp"

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
void launch_saint_mark(const SaintDraws&, int32_t*, void*) { no_cuda(); }
void launch_parts_mark(const int32_t*, const int64_t*, int64_t, int64_t, const int32_t*, const int32_t*, int32_t*, void*) { no_cuda(); }
void launch_compact(const int32_t*, const int32_t*, int64_t, int32_t*, void*) { no_cuda(); }
void launch_clear_set(const int32_t*, int64_t, int32_t*, int32_t*, void*) { no_cuda(); }
void launch_induced(InducedPhase, const induced::InducedView&, int64_t, void*) { no_cuda(); }
void launch_saint_weights(const induced::SaintWeightView&, int64_t, float*, void*) { no_cuda(); }
void launch_cluster_weights(const induced::ClusterWeightView&, int64_t, float*, void*) { no_cuda(); }
void launch_loss_flags(const int32_t*, int64_t, const uint8_t*, int32_t*, void*) { no_cuda(); }
void launch_loss_rows(const int32_t*, const int32_t*, const int32_t*, int64_t, int32_t*, float*, int, const uint32_t*, double, void*) {
  no_cuda();
}

}  // namespace gnnpipe::samplers::kernels
