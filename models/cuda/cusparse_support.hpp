#pragma once
// Small kernels that prepare a block for cuSPARSE's generic SpMM (cusparse_spmm.cpp), which wants
// one index type for offsets and column ids and a value array of the compute type.
// Internal to models/cuda/.
#include <cuda_runtime.h>

#include <cstdint>

namespace gnnpipe::models::cuda {

// dst[i] = int32(src[i]) for i < n (offsets below 2^31, checked by the caller).
void launch_narrow_offsets(const int64_t* src, int32_t* dst, int64_t n, cudaStream_t stream);

// values[k] = T(weights ? weights[edge_of ? edge_of[k] : k] : 1) for k < n: the forward weights,
// the weights in transpose order (edge_of = t_edges) or ones for an unweighted block.
template <class T>
void launch_edge_values(const float* weights, const int64_t* edge_of, T* values, int64_t n, cudaStream_t stream);

}  // namespace gnnpipe::models::cuda
