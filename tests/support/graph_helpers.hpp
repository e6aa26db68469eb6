#pragma once
// Small helpers shared by the graph tests.
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/graph/csr_graph.hpp"

namespace gnnpipe::test {

// Row v of `g` (the in-neighbors of v) as a vector, for exact comparisons.
inline std::vector<graph::NodeId> row(const graph::CsrGraph& g, graph::NodeId v) {
  const auto r = g.in_neighbors(v);
  return {r.begin(), r.end()};
}

// The message of the ErrorType thrown by `f`, or a marker that fails every Contains().
template <class ErrorType, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const ErrorType& e) {
    return e.message();
  }
  return "<no matching error thrown>";
}

template <class F>
std::string data_error_of(F&& f) {
  return message_of<core::DataError>(std::forward<F>(f));
}

}  // namespace gnnpipe::test
