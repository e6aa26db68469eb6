// Sparse-dense products over a Block (cpu twins: models/cpu/spmm.cpp). Forward walks the
// destination CSR, gradients with respect to sources walk the transpose (t_edges gives the forward
// edge id of each entry): each output row is reduced by one lane group in edge order (a row of
// more than kLongRow entries by a thread block in a fixed order of runs), no atomics.
#include <cstdint>

#include "cuda_check.hpp"
#include "kernel_utils.cuh"
#include "kernels.hpp"

namespace gnnpipe::models::cuda {
namespace {

using util::add_rn;
using util::kBlockThreads;
using util::mul_rn;
using util::Pack;

// out[r, :] = sum over entries k of row r (in order) of w_k * in[neighbor[k], :], w_k being
// alpha[e, head of the column] (kHeads), weights[e] or 1, where e = edge_of ? edge_of[k] : k.
template <class T>
struct AggregateArgs {
  int64_t rows = 0;
  const int64_t* offsets = nullptr;  // [rows + 1]
  const int32_t* neighbor = nullptr;
  const int64_t* edge_of = nullptr;  // nullptr: entry k is forward edge k
  const float* weights = nullptr;    // by forward edge id, nullptr for 1; unused with kHeads
  const T* alpha = nullptr;          // [E x heads] by forward edge id (kHeads)
  int64_t heads = 1;
  int64_t channels = 0;  // f / heads
  const T* in = nullptr;
  int64_t f = 0;
  T* out = nullptr;
  // The store's epilogue (launch_spmm_bias): out = sum + bias[c], then v > 0 ? v : 0 when relu.
  const T* bias = nullptr;  // [f], nullptr: none
  bool relu = false;
};

// The value stored for column c of a row whose sum is v: the epilogue of AggregateArgs, with the
// bias_add and ReLU kernels' expressions (add_rn, v > 0 ? v : 0), so that fusing changes no bit.
template <class T>
__device__ __forceinline__ T finish(const AggregateArgs<T>& a, T v, int64_t c) {
  if (a.bias != nullptr) v = add_rn(v, __ldg(a.bias + c));
  if (a.relu) v = v > T{0} ? v : T{0};
  return v;
}

// Rows of more than kLongRow entries are summed by a whole thread block (aggregate_long_kernel);
// the row kernel skips them. Power-law graphs have a few rows of thousands of entries (ogbn-arxiv:
// 13k), and one lane group walking such a row in order was the whole kernel's time.
constexpr int64_t kLongRow = 256;
constexpr int kLongThreads = 1024;
constexpr int kLongWarps = kLongThreads / util::kWarpSize;

// Accumulates entries [k0, k1) of one row into acc (lane `lane` of a group of G owns packs
// tile + lane + q * G, q < kTile), in entry order. The group loads G entries' (neighbor, edge,
// weight) at once and broadcasts them by shuffles; kUnroll neighbour rows are loaded before any is
// added, so that many loads are in flight (a row's loads do not depend on each other, only the sums).
template <class T, int V, int G, int kTile, int kUnroll, bool kHeads>
__device__ __forceinline__ void accumulate_entries(const AggregateArgs<T>& a, int64_t k0, int64_t k1, int64_t tile,
                                                   int lane, unsigned mask, const int64_t (&head)[kTile],
                                                   T (&acc)[kTile][V]) {
  using P = Pack<T, V>;
  const int64_t nvec = a.f / V;
  const P* in = reinterpret_cast<const P*>(a.in);
  for (int64_t base = k0; base < k1; base += G) {
    const int64_t k = base + lane;
    int32_t nb = 0;
    int64_t e = 0;
    T w{1};
    if (k < k1) {
      nb = __ldg(a.neighbor + k);
      e = a.edge_of != nullptr ? __ldg(a.edge_of + k) : k;
      if (!kHeads && a.weights != nullptr) w = static_cast<T>(__ldg(a.weights + e));
    }
    const int n = k1 - base < G ? static_cast<int>(k1 - base) : G;  // uniform in the group
    for (int j0 = 0; j0 < n; j0 += kUnroll) {
      P p[kUnroll][kTile];
      T wj[kUnroll];
      int64_t ej[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        wj[u] = T{1};
        ej[u] = 0;
        if (j0 + u < n) {
          const P* row = in + static_cast<int64_t>(__shfl_sync(mask, nb, j0 + u, G)) * nvec;
          if constexpr (kHeads) {
            ej[u] = __shfl_sync(mask, e, j0 + u, G);
          } else {
            wj[u] = __shfl_sync(mask, w, j0 + u, G);
          }
#pragma unroll
          for (int q = 0; q < kTile; ++q) {
            const int64_t vi = tile + lane + int64_t{q} * G;
            if (vi < nvec) p[u][q] = util::ldg_pack(row, vi);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (j0 + u < n) {
#pragma unroll
          for (int q = 0; q < kTile; ++q) {
            const int64_t vi = tile + lane + int64_t{q} * G;
            if (vi < nvec) {
              const T wq = kHeads ? __ldg(a.alpha + ej[u] * a.heads + head[q]) : wj[u];
#pragma unroll
              for (int t = 0; t < V; ++t) acc[q][t] = add_rn(acc[q][t], mul_rn(wq, p[u][q].v[t]));
            }
          }
        }
      }
    }
  }
}

// One group of G lanes per output row of at most kLongRow entries (grid-stride); lane i owns packs
// i, i + G, ... of the row (kTile per pass over the entries), so every output element is summed by
// one lane in entry order, as the CPU twin sums it.
template <class T, int V, int G, int kTile, int kUnroll, bool kHeads>
__global__ void aggregate_kernel(AggregateArgs<T> a) {
  using P = Pack<T, V>;
  const int lane = static_cast<int>(threadIdx.x % G);
  const unsigned mask = G == 32 ? util::kFullMask : ((1u << G) - 1u) << (threadIdx.x % util::kWarpSize / G * G);
  const int64_t nvec = a.f / V;
  P* out = reinterpret_cast<P*>(a.out);
  for (int64_t r = util::global_thread() / G; r < a.rows; r += util::grid_threads() / G) {
    const int64_t begin = __ldg(a.offsets + r);
    const int64_t end = __ldg(a.offsets + r + 1);
    if (end - begin > kLongRow) continue;  // aggregate_long_kernel's
    for (int64_t tile = 0; tile < nvec; tile += int64_t{G} * kTile) {
      T acc[kTile][V];
      int64_t head[kTile];
#pragma unroll
      for (int q = 0; q < kTile; ++q) {
        const int64_t vi = tile + lane + int64_t{q} * G;
        head[q] = kHeads && vi < nvec ? vi * V / a.channels : 0;
#pragma unroll
        for (int t = 0; t < V; ++t) acc[q][t] = T{0};
      }
      accumulate_entries<T, V, G, kTile, kUnroll, kHeads>(a, begin, end, tile, lane, mask, head, acc);
#pragma unroll
      for (int q = 0; q < kTile; ++q) {
        const int64_t vi = tile + lane + int64_t{q} * G;
        if (vi < nvec) {
          P p;
#pragma unroll
          for (int t = 0; t < V; ++t) p.v[t] = finish(a, acc[q][t], vi * V + t);
          out[r * nvec + vi] = p;
        }
      }
    }
  }
}

// Rows of more than kLongRow entries, one thread block (kLongWarps warps) per row: the block's
// threads first find the long rows among blockDim consecutive rows (grid-stride), then each long
// row is cut into kLongWarps contiguous runs of entries; warp w sums run w in entry order (32 packs
// of the row per pass), and the runs' sums are added in run order. The order depends on the row's
// length only, so results are bitwise reproducible (they differ from the CPU twin's single pass by
// rounding).
template <class T, int V, bool kHeads>
__global__ void __launch_bounds__(kLongThreads) aggregate_long_kernel(AggregateArgs<T> a) {
  using P = Pack<T, V>;
  constexpr int G = util::kWarpSize;
  __shared__ int64_t long_rows[kLongThreads];
  __shared__ int long_count;
  __shared__ P partial[kLongWarps][G];
  const int lane = util::lane_id();
  const int warp = static_cast<int>(threadIdx.x) / G;
  const int64_t nvec = a.f / V;
  P* out = reinterpret_cast<P*>(a.out);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x; first < a.rows;
       first += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (threadIdx.x == 0) long_count = 0;
    __syncthreads();
    const int64_t mine = first + threadIdx.x;
    if (mine < a.rows && __ldg(a.offsets + mine + 1) - __ldg(a.offsets + mine) > kLongRow) {
      long_rows[atomicAdd(&long_count, 1)] = mine;  // (listed in any order: rows are independent)
    }
    __syncthreads();
    const int count = long_count;
    for (int i = 0; i < count; ++i) {
      const int64_t r = long_rows[i];
      const int64_t begin = __ldg(a.offsets + r);
      const int64_t end = __ldg(a.offsets + r + 1);
      const int64_t run = (end - begin + kLongWarps - 1) / kLongWarps;
      const int64_t k0 = begin + run * warp < end ? begin + run * warp : end;
      const int64_t k1 = k0 + run < end ? k0 + run : end;
      for (int64_t tile = 0; tile < nvec; tile += G) {
        T acc[1][V];
        int64_t head[1];
        const int64_t vi = tile + lane;
        head[0] = kHeads && vi < nvec ? vi * V / a.channels : 0;
#pragma unroll
        for (int t = 0; t < V; ++t) acc[0][t] = T{0};
        accumulate_entries<T, V, G, 1, 8, kHeads>(a, k0, k1, tile, lane, util::kFullMask, head, acc);
#pragma unroll
        for (int t = 0; t < V; ++t) partial[warp][lane].v[t] = acc[0][t];
        __syncthreads();
        if (warp == 0 && vi < nvec) {
          P sum = partial[0][lane];
          for (int w = 1; w < kLongWarps; ++w) {
#pragma unroll
            for (int t = 0; t < V; ++t) sum.v[t] = add_rn(sum.v[t], partial[w][lane].v[t]);
          }
#pragma unroll
          for (int t = 0; t < V; ++t) sum.v[t] = finish(a, sum.v[t], vi * V + t);
          out[r * nvec + vi] = sum;
        }
        __syncthreads();
      }
    }
  }
}

template <class T, int V, bool kHeads>
void launch_aggregate_packed(const AggregateArgs<T>& a, int64_t num_entries, cudaStream_t stream) {
  const int64_t nvec = a.f / V;
  // Narrow rows: a group of the smallest power of two >= nvec lanes per row, one pass. Wide rows:
  // a warp per row with up to 4 packs per lane per pass over the entries. Fewer loads in flight
  // per entry batch as the tile grows (registers).
  const auto run = [&]<int G, int kTile, int kUnroll>() {
    aggregate_kernel<T, V, G, kTile, kUnroll, kHeads>
        <<<util::grid_for(a.rows, kBlockThreads / G), kBlockThreads, 0, stream>>>(a);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  };
  if (nvec <= 16) {
    util::with_group_size(util::group_size_for(nvec), [&]<int G>() { run.template operator()<G, 1, 8>(); });
  } else if (nvec <= 32) {
    run.template operator()<32, 1, 8>();
  } else if (nvec <= 64) {
    run.template operator()<32, 2, 4>();
  } else {
    run.template operator()<32, 4, 2>();
  }
  if (num_entries > kLongRow) {  // else no row can be long
    const unsigned blocks = util::grid_for(a.rows, kLongThreads);
    aggregate_long_kernel<T, V, kHeads><<<blocks, kLongThreads, 0, stream>>>(a);
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  }
}

template <class T, bool kHeads>
void launch_aggregate(const AggregateArgs<T>& a, int64_t num_entries, cudaStream_t stream) {
  if (a.rows <= 0 || a.f <= 0 || a.heads <= 0 || (kHeads && a.channels <= 0)) return;
  constexpr int kV = util::kVecWidth<T>;
  // 16-byte packs when rows start aligned and (with heads) no pack straddles two heads.
  const bool packed =
      a.f % kV == 0 && (!kHeads || a.channels % kV == 0) && util::aligned16(a.in) && util::aligned16(a.out);
  if (packed) {
    launch_aggregate_packed<T, kV, kHeads>(a, num_entries, stream);
  } else {
    launch_aggregate_packed<T, 1, kHeads>(a, num_entries, stream);
  }
}

// dalpha[e, h] = sum over c in head h (increasing) of dy[v, c] * x[u, c]: one group of G lanes per
// destination row (dy's row is shared), one lane per edge, each dot product summed by its lane.
template <class T, int V, int G>
__global__ void edge_head_dot_kernel(int64_t rows, const int64_t* __restrict__ offsets,
                                     const int32_t* __restrict__ indices, const T* __restrict__ x,
                                     const T* __restrict__ dy, int64_t heads, int64_t f, T* __restrict__ dalpha) {
  using P = Pack<T, V>;
  const int lane = static_cast<int>(threadIdx.x % G);
  const int64_t packs_per_head = f / heads / V;
  const int64_t nvec = f / V;
  for (int64_t v = util::global_thread() / G; v < rows; v += util::grid_threads() / G) {
    const P* g = reinterpret_cast<const P*>(dy) + v * nvec;
    for (int64_t e = offsets[v] + lane, end = offsets[v + 1]; e < end; e += G) {
      const P* in = reinterpret_cast<const P*>(x) + static_cast<int64_t>(indices[e]) * nvec;
      for (int64_t h = 0; h < heads; ++h) {
        T sum{0};
        for (int64_t i = h * packs_per_head; i < (h + 1) * packs_per_head; ++i) {
          const P pg = util::ldg_pack(g, i);
          const P px = util::ldg_pack(in, i);
#pragma unroll
          for (int t = 0; t < V; ++t) sum = add_rn(sum, mul_rn(pg.v[t], px.v[t]));
        }
        dalpha[e * heads + h] = sum;
      }
    }
  }
}

}  // namespace

template <class T>
void launch_spmm(const BlockArrays& b, const T* x, int64_t f, T* y, cudaStream_t stream) {
  launch_spmm_bias<T>(b, x, f, nullptr, false, y, stream);  // no epilogue
}

template <class T>
void launch_spmm_bias(const BlockArrays& b, const T* x, int64_t f, const T* bias, bool relu, T* y,
                      cudaStream_t stream) {
  AggregateArgs<T> a;
  a.rows = b.num_dst;
  a.offsets = b.offsets;
  a.neighbor = b.indices;
  a.weights = b.weights;
  a.channels = f;
  a.in = x;
  a.f = f;
  a.out = y;
  a.bias = bias;
  a.relu = relu;
  launch_aggregate<T, false>(a, b.num_edges, stream);
}

template <class T>
void launch_spmm_transpose(const BlockArrays& b, const T* dy, int64_t f, T* dx, cudaStream_t stream) {
  AggregateArgs<T> a;
  a.rows = b.num_src;
  a.offsets = b.t_offsets;
  a.neighbor = b.t_indices;
  a.edge_of = b.weights != nullptr ? b.t_edges : nullptr;  // the edge id only selects the weight
  a.weights = b.weights;
  a.channels = f;
  a.in = dy;
  a.f = f;
  a.out = dx;
  launch_aggregate<T, false>(a, b.num_edges, stream);
}

template <class T>
void launch_spmm_edge_weighted(const BlockArrays& b, const T* alpha, int64_t heads, const T* x, int64_t f, T* y,
                               cudaStream_t stream) {
  AggregateArgs<T> a;
  a.rows = b.num_dst;
  a.offsets = b.offsets;
  a.neighbor = b.indices;
  a.alpha = alpha;
  a.heads = heads;
  a.channels = heads > 0 ? f / heads : 0;
  a.in = x;
  a.f = f;
  a.out = y;
  launch_aggregate<T, true>(a, b.num_edges, stream);
}

template <class T>
void launch_spmm_edge_weighted_backward_x(const BlockArrays& b, const T* alpha, int64_t heads, const T* dy, int64_t f,
                                          T* dx, cudaStream_t stream) {
  AggregateArgs<T> a;
  a.rows = b.num_src;
  a.offsets = b.t_offsets;
  a.neighbor = b.t_indices;
  a.edge_of = b.t_edges;
  a.alpha = alpha;
  a.heads = heads;
  a.channels = heads > 0 ? f / heads : 0;
  a.in = dy;
  a.f = f;
  a.out = dx;
  launch_aggregate<T, true>(a, b.num_edges, stream);
}

template <class T>
void launch_spmm_edge_weighted_backward_alpha(const BlockArrays& b, const T* x, const T* dy, int64_t heads, int64_t f,
                                              T* dalpha, cudaStream_t stream) {
  if (b.num_dst <= 0 || b.num_edges <= 0 || heads <= 0) return;
  constexpr int kV = util::kVecWidth<T>;
  const bool packed = (f / heads) % kV == 0 && util::aligned16(x) && util::aligned16(dy);
  const int group = util::group_size_for(b.num_edges / b.num_dst + 1);
  util::with_group_size(group, [&]<int G>() {
    const unsigned blocks = util::grid_for(b.num_dst, kBlockThreads / G);
    if (packed) {
      edge_head_dot_kernel<T, kV, G>
          <<<blocks, kBlockThreads, 0, stream>>>(b.num_dst, b.offsets, b.indices, x, dy, heads, f, dalpha);
    } else {
      edge_head_dot_kernel<T, 1, G>
          <<<blocks, kBlockThreads, 0, stream>>>(b.num_dst, b.offsets, b.indices, x, dy, heads, f, dalpha);
    }
    GNNPIPE_CUDA_CHECK(cudaGetLastError());
  });
}

#define GNNPIPE_INSTANTIATE(T)                                                                                        \
  template void launch_spmm<T>(const BlockArrays&, const T*, int64_t, T*, cudaStream_t);                              \
  template void launch_spmm_bias<T>(const BlockArrays&, const T*, int64_t, const T*, bool, T*, cudaStream_t);        \
  template void launch_spmm_transpose<T>(const BlockArrays&, const T*, int64_t, T*, cudaStream_t);                    \
  template void launch_spmm_edge_weighted<T>(const BlockArrays&, const T*, int64_t, const T*, int64_t, T*,            \
                                             cudaStream_t);                                                           \
  template void launch_spmm_edge_weighted_backward_x<T>(const BlockArrays&, const T*, int64_t, const T*, int64_t, T*, \
                                                        cudaStream_t);                                                \
  template void launch_spmm_edge_weighted_backward_alpha<T>(const BlockArrays&, const T*, const T*, int64_t, int64_t, \
                                                            T*, cudaStream_t);
GNNPIPE_INSTANTIATE(float)
GNNPIPE_INSTANTIATE(double)
#undef GNNPIPE_INSTANTIATE

}  // namespace gnnpipe::models::cuda
