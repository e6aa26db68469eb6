#include "transformed_store.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::pipeline::detail {

void TransformedStore::reset(int64_t nodes, int64_t width, int64_t heads) {
  width_ = static_cast<std::size_t>(width);
  heads_ = static_cast<std::size_t>(heads);
  h_.assign(static_cast<std::size_t>(nodes) * width_, 0.f);
  a_.assign(static_cast<std::size_t>(nodes) * heads_, 0.f);
}

void TransformedStore::copy_rows(std::span<const graph::NodeId> ids, const models::TransformedRows<float>& z,
                                 bool into_store) {
  GNNPIPE_CHECK(z.h.rows == static_cast<int64_t>(ids.size()) && static_cast<std::size_t>(z.h.cols) == width_ &&
                    z.a.rows == z.h.rows && static_cast<std::size_t>(z.a.cols) == heads_,
                "inference: transformed rows {} and {} for {} ids (width {}, {} heads)", models::shape_str(z.h),
                models::shape_str(z.a), ids.size(), width_, heads_);
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, ids.size(), 1024), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) {
      const auto v = static_cast<std::size_t>(ids[i]);
      GNNPIPE_CHECK(v < h_.size() / std::max<std::size_t>(1, width_), "inference: transformed row {} of {}", v,
                    h_.size() / std::max<std::size_t>(1, width_));
      float* h = h_.data() + v * width_;
      float* a = a_.data() + v * heads_;
      float* zh = z.h.data + i * width_;
      float* za = z.a.data + i * heads_;
      if (into_store) {
        std::copy(zh, zh + width_, h);
        std::copy(za, za + heads_, a);
      } else {
        std::copy(h, h + width_, zh);
        std::copy(a, a + heads_, za);
      }
    }
  }));
}

}  // namespace gnnpipe::pipeline::detail
