#pragma once
// GNNPIPE_HD marks small pure functions that CPU code and CUDA kernels share (the RNG, index math),
// so a kernel and its CPU twin compute bit-identical values. It expands to nothing outside nvcc,
// which keeps public headers free of CUDA headers.
#if defined(__CUDACC__)
#define GNNPIPE_HD __host__ __device__ __forceinline__
#else
#define GNNPIPE_HD inline
#endif
