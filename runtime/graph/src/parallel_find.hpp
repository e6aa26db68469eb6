#pragma once
// Internal to gnnpipe::graph: the smallest index where a predicate holds, found in parallel.
// Validation uses it so that an error names the *first* bad position whatever the thread count.
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cstddef>

#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::graph::detail {

// The smallest i in [0, n) with bad(i), or n when there is none. `bad` must be thread-safe.
template <class Pred>
std::size_t first_index_where(std::size_t n, Pred bad, std::size_t grain = 1 << 14) {
  using Range = tbb::blocked_range<std::size_t>;
  return tbb::parallel_reduce(
      Range(0, n, grain), n,
      core::tsan::fork_join([&](const Range& r, std::size_t found) {
        for (std::size_t i = r.begin(); i < r.end() && i < found; ++i) {
          if (bad(i)) return i;
        }
        return found;
      }),
      [](std::size_t a, std::size_t b) { return std::min(a, b); });
}

}  // namespace gnnpipe::graph::detail
