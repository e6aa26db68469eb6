// The GPU neighbor sampler's kernels: each phase of neighbor_hop.hpp as a grid-stride loop over
// its elements calling the same element function as the CPU twin (neighbor_twin.cpp), and
// exclusive scans (CUB). Bitwise the twin's results: the element functions are the same code and
// no phase depends on the order its elements run in.
#include <cub/device/device_scan.cuh>

#include "cuda_check.hpp"
#include "grid_loop.cuh"
#include "neighbor_kernels.hpp"

namespace gnnpipe::samplers::kernels {
namespace {

using core::cuda::blocks_for;
using core::cuda::first_index;
using core::cuda::grid_stride;
constexpr unsigned kThreads = core::cuda::kGridThreads;

struct DeviceAtomicMin {
  __device__ void operator()(int64_t* slot, int64_t value) const {
    atomicMin(reinterpret_cast<long long*>(slot), static_cast<long long>(value));
  }
};

template <HopPhase P>
__global__ void hop_kernel(hop::HopView view, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    if constexpr (P == HopPhase::kCount) hop::count(view, i);
    if constexpr (P == HopPhase::kDraw) hop::draw(view, i);
    if constexpr (P == HopPhase::kFirstReach) hop::first_reach(view, i, DeviceAtomicMin{});
    if constexpr (P == HopPhase::kFlag) hop::flag(view, i);
    if constexpr (P == HopPhase::kAssign) hop::assign(view, i);
    if constexpr (P == HopPhase::kRowLength) hop::row_length(view, i);
    if constexpr (P == HopPhase::kWriteRow) hop::write_row(view, i);
    if constexpr (P == HopPhase::kReset) hop::reset(view, i);
  }
}

__global__ void set_local_kernel(int32_t* local_of, const int32_t* ids, int64_t n, int32_t first_local, bool clear) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) local_of[ids[i]] = clear ? -1 : first_local + static_cast<int32_t>(i);
}

// After an inclusive scan into out[1..n]: out[0] = init, out[i] += init.
template <class T>
__global__ void finish_scan_kernel(T* out, int64_t n, T init) {
  for (int64_t i = first_index(); i <= n; i += grid_stride()) out[i] = i == 0 ? init : out[i] + init;
}

template <class T>
void scan(const T* in, T* out, int64_t n, T init, void* temp, std::size_t temp_bytes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (n > 0) {
    std::size_t bytes = temp_bytes;
    GNNPIPE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, out + 1, n, s));
  }
  finish_scan_kernel<T><<<blocks_for(n + 1), kThreads, 0, s>>>(out, n, init);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_hop_phase(HopPhase phase, const hop::HopView& view, int64_t n, void* stream) {
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = blocks_for(n);
  switch (phase) {
    case HopPhase::kCount: hop_kernel<HopPhase::kCount><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kDraw: hop_kernel<HopPhase::kDraw><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kFirstReach: hop_kernel<HopPhase::kFirstReach><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kFlag: hop_kernel<HopPhase::kFlag><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kAssign: hop_kernel<HopPhase::kAssign><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kRowLength: hop_kernel<HopPhase::kRowLength><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kWriteRow: hop_kernel<HopPhase::kWriteRow><<<blocks, kThreads, 0, s>>>(view, n); break;
    case HopPhase::kReset: hop_kernel<HopPhase::kReset><<<blocks, kThreads, 0, s>>>(view, n); break;
  }
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

void launch_set_local(int32_t* local_of, const int32_t* ids, int64_t n, int32_t first_local, bool clear, void* stream) {
  if (n == 0) return;
  set_local_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(local_of, ids, n, first_local, clear);
  GNNPIPE_CUDA_CHECK(cudaGetLastError());
}

std::size_t scan_temp_bytes(int64_t n) {
  std::size_t a = 0, b = 0;
  if (n > 0) {
    GNNPIPE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, a, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n));
    GNNPIPE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, b, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n));
  }
  return a > b ? a : b;
}

void exclusive_scan(const int64_t* in, int64_t* out, int64_t n, int64_t init, void* temp, std::size_t temp_bytes, void* stream) {
  scan(in, out, n, init, temp, temp_bytes, stream);
}
void exclusive_scan(const int32_t* in, int32_t* out, int64_t n, int32_t init, void* temp, std::size_t temp_bytes, void* stream) {
  scan(in, out, n, init, temp, temp_bytes, stream);
}

}  // namespace gnnpipe::samplers::kernels
