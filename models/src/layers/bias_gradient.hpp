#pragma once
// Internal to gnnpipe::models: layers accumulate parameter gradients (a split batch runs backward
// several times before one step), while cpu::bias_add_backward overwrites its output.
#include <vector>

#include "gnnpipe/models/matrix.hpp"
#include "gnnpipe/models/ops/elementwise.hpp"

namespace gnnpipe::models {

template <class T>
void add_bias_gradient(MatrixView<const T> dy, MatrixView<T> dbias) {
  std::vector<T> column_sums(static_cast<std::size_t>(dbias.size()));
  cpu::bias_add_backward<T>(dy, column_sums);
  for (std::size_t c = 0; c < column_sums.size(); ++c) dbias.data[c] += column_sums[c];
}

}  // namespace gnnpipe::models
