#pragma once
// Which edges the memory governor removes first when a batch must be cut (`memory.cut`, issue #13).
// Each edge u -> v gets a score and the LOWEST scores go first; d = full-graph in-degree + 1 (the
// +1 keeps a node without in-edges from dividing by zero), pr = full-graph PageRank:
//   random            a uniformly random order keyed by (seed, epoch, batch)
//   degree_sum        1 / (d_u + d_v)
//   degree_product    1 / (d_u * d_v)
//   pagerank_sum      1 / (pr_u + pr_v)
//   pagerank_product  1 / (pr_u * pr_v)
// so edges between well-connected nodes, which lose least when one of their many paths goes,
// are cut first.
// The enum, its YAML names and their parsing live with the memory options (memory_options.hpp).
#include "gnnpipe/memory/memory_options.hpp"

namespace gnnpipe::graph {

using memory::CutStrategy;

// What a strategy's scores are computed from.
enum class CutNodeValue { kNone, kDegree, kPagerank };
CutNodeValue node_value_of(CutStrategy strategy);

}  // namespace gnnpipe::graph
