#include "gnnpipe/graph/io/csr_features.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::graph::io {

FeatureStore dense_from_csr(const HostArray<int64_t>& indptr, const HostArray<int64_t>& indices,
                            const HostArray<float>& values, int64_t rows, int64_t cols, std::string_view what) {
  GNNPIPE_CHECK_DATA(rows >= 0 && cols >= 0, "{}: negative feature shape {} x {}", what, rows, cols);
  GNNPIPE_CHECK_DATA(indptr.size() == static_cast<std::size_t>(rows + 1), "{}: indptr has {} entries for {} rows", what,
                     indptr.size(), rows);
  GNNPIPE_CHECK_DATA(indices.size() == values.size(), "{}: {} column ids but {} values", what, indices.size(),
                     values.size());
  GNNPIPE_CHECK_DATA(indptr[0] == 0 && indptr[static_cast<std::size_t>(rows)] == static_cast<int64_t>(indices.size()),
                     "{}: indptr runs from {} to {}, expected 0 to {}", what, indptr[0],
                     indptr[static_cast<std::size_t>(rows)], indices.size());
  for (int64_t r = 0; r < rows; ++r) {
    GNNPIPE_CHECK_DATA(indptr[static_cast<std::size_t>(r)] <= indptr[static_cast<std::size_t>(r + 1)],
                       "{}: indptr decreases at row {}", what, r);
  }
  HostArray<float> dense(static_cast<std::size_t>(rows * cols));
  using Range = tbb::blocked_range<int64_t>;
  tbb::parallel_for(Range(0, rows, 64), core::tsan::fork_join([&](const Range& range) {
    for (int64_t r = range.begin(); r < range.end(); ++r) {
      for (int64_t k = indptr[static_cast<std::size_t>(r)]; k < indptr[static_cast<std::size_t>(r + 1)]; ++k) {
        const int64_t c = indices[static_cast<std::size_t>(k)];
        GNNPIPE_CHECK_DATA(c >= 0 && c < cols, "{}: column {} of row {} is outside [0, {})", what, c, r, cols);
        dense[static_cast<std::size_t>(r * cols + c)] += values[static_cast<std::size_t>(k)];
      }
    }
  }));
  return FeatureStore(std::move(dense), rows, cols, what);
}

}  // namespace gnnpipe::graph::io
