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
#include <string_view>

namespace gnnpipe::graph {

enum class CutStrategy { kRandom, kDegreeSum, kDegreeProduct, kPagerankSum, kPagerankProduct };

// The YAML name: random, degree_sum, degree_product, pagerank_sum, pagerank_product.
std::string_view to_string(CutStrategy strategy);

// The strategy named `name`; ConfigError naming the key `memory.cut` and the allowed values otherwise.
CutStrategy parse_cut_strategy(std::string_view name);

// What a strategy's scores are computed from.
enum class CutNodeValue { kNone, kDegree, kPagerank };
CutNodeValue node_value_of(CutStrategy strategy);

}  // namespace gnnpipe::graph
