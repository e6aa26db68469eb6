#pragma once
// SparseRowsView<T>: a read-only CSR view of a [rows x cols] matrix whose absent entries are zero:
// row r holds the entries [offsets[r], offsets[r + 1]) with column ids `columns` (ascending within
// a row) and values `values`. The CPU backend gives a model's first layer its dropped input in this
// form when the input is mostly zeros (sparse features, ops/sparse_input.hpp); the view does not
// own its arrays.
#include <cstdint>

namespace gnnpipe::models {

template <class T>
struct SparseRowsView {
  int64_t rows = 0;
  int64_t cols = 0;
  const int64_t* offsets = nullptr;  // rows + 1 entries, offsets[0] == 0
  const int32_t* columns = nullptr;  // nnz() entries
  const T* values = nullptr;         // nnz() entries

  int64_t nnz() const { return offsets != nullptr ? offsets[rows] : 0; }
};

}  // namespace gnnpipe::models
