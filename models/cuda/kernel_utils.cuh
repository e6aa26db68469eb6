#pragma once
// Internal helpers of the kernels in models/cuda/*.cu (included only by them): launch geometry,
// packed vector loads, uncontracted arithmetic, warp-ordered folds and the fixed-order column sum.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace gnnpipe::models::cuda::util {

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int kWarpSize = 32;
inline constexpr int kBlockThreads = 256;
inline constexpr int kWarpsPerBlock = kBlockThreads / kWarpSize;
// Grid cap: the kernels loop grid-stride, so any row or element count fits.
inline constexpr int64_t kMaxBlocks = 65535;

// Blocks for `items` work items of which one block takes `per_block` per sweep (at least one block).
inline unsigned grid_for(int64_t items, int64_t per_block) {
  const int64_t wanted = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < kMaxBlocks ? wanted : kMaxBlocks));
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Elements of T in one 16-byte load (float4, double2).
template <class T>
inline constexpr int kVecWidth = static_cast<int>(16 / sizeof(T));

// V consecutive elements loaded or stored with one instruction when the address is V * sizeof(T)
// aligned. Each lane owns whole packs, so the per-element summation order is unchanged.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Loads pack i of p through the read-only data cache (the data must not change during the kernel).
template <class T, int V>
__device__ __forceinline__ Pack<T, V> ldg_pack(const Pack<T, V>* p, int64_t i) {
  Pack<T, V> out;
  if constexpr (std::is_same_v<T, float> && V == 4) {
    const float4 r = __ldg(reinterpret_cast<const float4*>(p + i));
    out.v[0] = r.x;
    out.v[1] = r.y;
    out.v[2] = r.z;
    out.v[3] = r.w;
  } else if constexpr (std::is_same_v<T, double> && V == 2) {
    const double2 r = __ldg(reinterpret_cast<const double2*>(p + i));
    out.v[0] = r.x;
    out.v[1] = r.y;
  } else {
    static_assert(V == 1, "packs are 16 bytes or one element");
    out.v[0] = __ldg(reinterpret_cast<const T*>(p + i));
  }
  return out;
}

// Calls f.template operator()<G>() for the power of two G in [1, 32] given at run time.
template <class F>
void with_group_size(int g, F&& f) {
  switch (g) {
    case 1: f.template operator()<1>(); break;
    case 2: f.template operator()<2>(); break;
    case 4: f.template operator()<4>(); break;
    case 8: f.template operator()<8>(); break;
    case 16: f.template operator()<16>(); break;
    default: f.template operator()<32>(); break;
  }
}

// The smallest power of two >= n, clamped to [1, 32]: lanes per row for rows of about n items.
inline int group_size_for(int64_t n) {
  int g = 1;
  while (g < kWarpSize && g < n) g *= 2;
  return g;
}

// Round-to-nearest arithmetic that nvcc never contracts into a fused multiply-add: the CPU twins
// (x86-64 without FMA) round each product and sum separately, so sums of products keep their bits.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }
__device__ __forceinline__ float exp_t(float a) { return expf(a); }
__device__ __forceinline__ double exp_t(double a) { return exp(a); }
__device__ __forceinline__ float expm1_t(float a) { return expm1f(a); }
__device__ __forceinline__ double expm1_t(double a) { return expm1(a); }

inline __device__ int64_t global_thread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
inline __device__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
inline __device__ int lane_id() { return static_cast<int>(threadIdx.x % kWarpSize); }

// --- warp-ordered folds over the (entry, head) pairs of one CSR row ---------------------------------
// A row of `count` entries with heads [h0, h0 + hn), hn <= 32, is walked entry-major (k, then h)
// in chunks of 32 pairs: lane i gets pair (chunk start + i). body(k, h, valid, n, h_first) runs on
// every lane of the warp (the walk is warp-uniform, so shuffles inside are safe): (k, h - h0) is the
// lane's pair, valid whether it exists, n the pairs in this chunk, h_first the head offset of the
// chunk's first pair. The lane of a pair depends only on (count, hn), so passes agree.
template <class Body>
__device__ __forceinline__ void for_each_chunk(int64_t count, int hn, Body&& body) {
  const int lane = lane_id();
  const int64_t total = count * hn;
  int64_t k_first = 0;
  int h_first = 0;
  for (int64_t start = 0; start < total; start += kWarpSize) {
    const int offset = h_first + lane;
    const int64_t k = k_first + offset / hn;
    const int h = offset % hn;
    const int64_t left = total - start;
    const int n = left < kWarpSize ? static_cast<int>(left) : kWarpSize;
    body(k, h, lane < n, n, h_first);
    h_first += kWarpSize;
    k_first += h_first / hn;
    h_first %= hn;
  }
}

// Folds one chunk's values (lane i holds pair i's value) into per-head accumulators in pair order:
// lane l's acc is head h0 + l's, so each head is folded in increasing entry order, as the CPU loops.
template <class T, class Fold>
__device__ __forceinline__ T fold_chunk(T acc, T value, int n, int h_first, int hn, Fold fold) {
  const int lane = lane_id();
  int h = h_first;
  for (int j = 0; j < n; ++j) {
    const T t = __shfl_sync(kFullMask, value, j);
    if (lane == h) acc = fold(acc, t);
    if (++h == hn) h = 0;
  }
  return acc;
}

// --- fixed-order column sums -----------------------------------------------------------------------
// out[c] += sum over rows r of value(r, c), in the CPU's order (bias_add_backward): the partial of
// each block of kSumRows rows sums its rows in order from 0, the total adds the partials in block
// order from 0, then out[c] += total. No atomics and no scratch: a thread block owns kSumCols
// columns; its lanes are (row block slot, column), so a round covers kSumSlots row blocks in
// parallel, and after each round one thread per column adds that round's partials in block order.
inline constexpr int64_t kSumRows = 256;
inline constexpr int kSumCols = 8;  // columns per thread block: one 32-byte sector of floats per row
inline constexpr int kSumThreads = 512;
inline constexpr int kSumSlots = kSumThreads / kSumCols;  // row blocks per round

inline unsigned column_sum_grid(int64_t cols) { return grid_for(cols, kSumCols); }

// Body of a kernel launched with column_sum_grid(cols) blocks of kSumThreads threads.
template <class T, class Value>
__device__ __forceinline__ void column_block_sum(int64_t rows, int64_t cols, const Value& value, T* out) {
  __shared__ T partial[kSumSlots][kSumCols];
  const int col_in_tile = static_cast<int>(threadIdx.x % kSumCols);
  const int slot = static_cast<int>(threadIdx.x / kSumCols);
  for (int64_t tile = blockIdx.x; tile * kSumCols < cols; tile += gridDim.x) {
    const int64_t c = tile * kSumCols + col_in_tile;
    const bool active = c < cols;
    T total{0};  // meaningful in slot 0's threads
    for (int64_t round = 0; round < rows; round += kSumRows * kSumSlots) {
      const int64_t first = round + slot * kSumRows;
      const int64_t last = first + kSumRows < rows ? first + kSumRows : rows;
      T sum{0};
      if (active) {
#pragma unroll 8
        for (int64_t r = first; r < last; ++r) sum = add_rn(sum, value(r, c));
      }
      partial[slot][col_in_tile] = sum;
      __syncthreads();
      if (slot == 0 && active) {
        for (int s = 0; s < kSumSlots && round + s * kSumRows < rows; ++s) {
          total = add_rn(total, partial[s][col_in_tile]);
        }
      }
      __syncthreads();
    }
    if (slot == 0 && active) out[c] = add_rn(out[c], total);
  }
}

}  // namespace gnnpipe::models::cuda::util
