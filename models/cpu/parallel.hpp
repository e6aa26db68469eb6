#pragma once
// Private helpers of the CPU ops: row-parallel loops and the shape checks they share.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/matrix.hpp"
#include "cpu/row_simd.hpp"

namespace gnnpipe::models::cpu::detail {

// Calls body(begin, end) over [0, n) in chunks of about `grain` rows, in parallel. Each index is
// visited exactly once; callers write only outputs owned by their indices, so results do not
// depend on how the range is split.
template <class F>
void parallel_rows(int64_t n, int64_t grain, F&& body) {
  if (n <= grain) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  oneapi::tbb::parallel_for(
      oneapi::tbb::blocked_range<int64_t>(0, n, grain),
      core::tsan::fork_join([&](const oneapi::tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); }));
}

// A grain of about 16K element-operations per task: rows of `work_per_row` operations.
// The average entries per row of a CSR with `edges` entries over `rows` rows, rounded up by one
// (at least 1): a row's work for grain_for in the graph ops.
inline int64_t edges_per_row(int64_t edges, int64_t rows) { return rows > 0 ? edges / rows + 1 : 1; }

inline int64_t grain_for(int64_t work_per_row) {
  const int64_t w = work_per_row > 0 ? work_per_row : 1;
  return w >= 16384 ? 1 : 16384 / w;
}

// Throws unless every entry of `rows` is in [0, n) and no entry repeats.
void check_row_list(std::span<const int32_t> rows, int64_t n, const char* what);

// Weight of forward edge e as T (1 for an unweighted block).
template <class T>
inline T edge_weight(const graph::Block& block, int64_t e) {
  return block.weighted() ? static_cast<T>(block.weights[static_cast<std::size_t>(e)]) : T{1};
}

// o[0, f) = sum over the entries k in [begin, end) of weight(k) * in[neighbor[k]] (f = in.cols),
// summed from +0 in entry order, multiply then add; Scaled: each source element times
// T(scale[neighbor[k]]) first, rounded, as if the rows had been scaled in a pass of their own.
// Every element bitwise the same on the AVX2 and the scalar path. o must not overlap in's rows.
template <class T, bool Scaled = false, class Weight>
inline void weighted_row(T* o, ConstView<T> in, const graph::NodeId* neighbor, int64_t begin, int64_t end,
                         const Weight& weight, const float* scale = nullptr) {
  const int64_t f = in.cols;
#if GNNPIPE_CPU_AVX2
  if constexpr (std::is_same_v<T, float> && std::is_same_v<graph::NodeId, int32_t>) {
    if (has_avx2() && f > 0) {  // the row summed in registers, bitwise the loop below
      weighted_row_avx2<Scaled>(o, in.data, in.cols, neighbor, begin, end, weight, f, scale);
      return;
    }
  }
#endif
  std::fill(o, o + f, T{0});
  for (int64_t k = begin; k < end; ++k) {
    const T w = weight(k);
    const T* x = in.row(neighbor[k]).data();
    if constexpr (Scaled) {
      const T s = static_cast<T>(scale[neighbor[k]]);
      for (int64_t c = 0; c < f; ++c) o[c] += w * (x[c] * s);
    } else {
      axpy_row(o, x, w, f);
    }
  }
}

// out[r] = sum over the entries k of CSR row r (offsets, neighbor) of weight(k) * in[neighbor[k]]
// (weighted_row; Scaled: in's rows times `scale`), for every row, one task per range of rows (no
// atomics, each row summed in entry order): SpMM over the destination CSR, and its backward over
// the transpose. `epilogue(row)` runs on each output row once its sum is complete (while the row
// is in cache).
template <class T, bool Scaled = false, class Weight, class Epilogue = void (*)(std::span<T>)>
void weighted_rows(int64_t rows, const graph::EdgeOffset* offsets, const graph::NodeId* neighbor, int64_t entries,
                   ConstView<T> in, MatrixView<T> out, Weight weight,
                   Epilogue epilogue = [](std::span<T>) {}, const float* scale = nullptr) {
  parallel_rows(rows, grain_for(edges_per_row(entries, rows) * in.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const std::span<T> o = out.row(r);
      weighted_row<T, Scaled>(o.data(), in, neighbor, offsets[r], offsets[r + 1], weight, scale);
      epilogue(o);
    }
  });
}

}  // namespace gnnpipe::models::cpu::detail
