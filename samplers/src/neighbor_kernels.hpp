#pragma once
// Launches of the GPU neighbor sampler's kernels (samplers/cuda/neighbor_kernels.cu): one kernel
// per phase of neighbor_hop.hpp over the view's device arrays, and the scans between them. Every
// launch is asynchronous on `stream` (a cudaStream_t). CUDA-free, so the host side compiles in
// every build; a build without CUDA links no_cuda_kernels.cpp, whose launches throw.
#include <cstddef>
#include <cstdint>

#include "gnnpipe/samplers/neighbor_hop.hpp"

namespace gnnpipe::samplers::kernels {

enum class HopPhase { kCount, kDraw, kFirstReach, kFlag, kAssign, kRowLength, kWriteRow, kReset };

// The phase over its elements: frontier nodes (count, draw, row length, write row) or picks
// (first reach, flag, assign, reset); `n` of them.
void launch_hop_phase(HopPhase phase, const hop::HopView& view, int64_t n, void* stream);

// local_of[ids[i]] = first_local + i for i in [0, n) (the seeds), or -1 when `clear` (every node
// of a finished batch).
void launch_set_local(int32_t* local_of, const int32_t* ids, int64_t n, int32_t first_local, bool clear, void* stream);

// out[i] = init + in[0] + ... + in[i - 1] for i in [0, n]: n + 1 outputs. `temp` (temp_bytes) is
// device scratch; scan_temp_bytes(n) says how much it needs.
std::size_t scan_temp_bytes(int64_t n);
void exclusive_scan(const int64_t* in, int64_t* out, int64_t n, int64_t init, void* temp, std::size_t temp_bytes, void* stream);
void exclusive_scan(const int32_t* in, int32_t* out, int64_t n, int32_t init, void* temp, std::size_t temp_bytes, void* stream);

}  // namespace gnnpipe::samplers::kernels
