#pragma once
// Layer-wise inference's layer-0 rows in CSR form (LayerwiseInferenceOptions::sparse_features):
// a chunk's input rows picked from the features' CSR matrix by node id.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/models/sparse_rows.hpp"

namespace gnnpipe::pipeline::detail {

// A chunk's input rows picked from a CSR matrix by node id, into arrays reused from chunk to chunk.
class SparseRowsGather {
 public:
  models::SparseRowsView<float> gather(const models::SparseRowsView<float>& from, std::span<const graph::NodeId> ids) {
    offsets_.resize(ids.size() + 1);
    offsets_[0] = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto v = static_cast<std::size_t>(ids[i]);
      GNNPIPE_CHECK(ids[i] >= 0 && ids[i] < from.rows, "inference: node {} of a chunk outside the {} feature rows",
                    ids[i], from.rows);
      offsets_[i + 1] = offsets_[i] + (from.offsets[v + 1] - from.offsets[v]);
    }
    const auto nnz = static_cast<std::size_t>(offsets_.back());
    columns_.resize(nnz);
    values_.resize(nnz);
    using Range = tbb::blocked_range<std::size_t>;
    tbb::parallel_for(Range(0, ids.size(), 1024), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        const auto v = static_cast<std::size_t>(ids[i]);
        const int64_t begin = from.offsets[v], count = from.offsets[v + 1] - begin;
        std::copy_n(from.columns + begin, count, columns_.begin() + offsets_[i]);
        std::copy_n(from.values + begin, count, values_.begin() + offsets_[i]);
      }
    }));
    return {static_cast<int64_t>(ids.size()), from.cols, offsets_.data(), columns_.data(), values_.data()};
  }

 private:
  std::vector<int64_t> offsets_;
  std::vector<int32_t> columns_;
  std::vector<float> values_;
};

}  // namespace gnnpipe::pipeline::detail
