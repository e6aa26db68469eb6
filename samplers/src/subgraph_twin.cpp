#include "subgraph_twin.hpp"

#include "gnnpipe/samplers/induced_phases.hpp"
#include "twin_phases.hpp"

namespace gnnpipe::samplers::twin {

void SubgraphArrays::compact_marked() {
  exclusive_scan(mark, rank, int64_t{0});
  const int64_t k = rank.back();
  nodes.resize(static_cast<std::size_t>(k));
  phase(static_cast<int64_t>(mark.size()), [&](int64_t v) {
    if (mark[static_cast<std::size_t>(v)] != 0) nodes[static_cast<std::size_t>(rank[static_cast<std::size_t>(v)])] = static_cast<int32_t>(v);
  });
  phase(k, [&](int64_t i) { local_of[static_cast<std::size_t>(nodes[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i); });
}

void SubgraphArrays::induced_rows(const graph::CsrGraph& graph, bool self_loops, bool with_edge_ids) {
  const auto k = static_cast<int64_t>(nodes.size());
  lengths.resize(nodes.size());
  induced::InducedView view{.graph_offsets = graph.offsets().data(),
                            .graph_indices = graph.indices().data(),
                            .nodes = nodes.data(),
                            .local_of = local_of.data(),
                            .self_loops = self_loops,
                            .lengths = lengths.data(),
                            .row_start = nullptr,
                            .row_indices = nullptr,
                            .edge_ids = nullptr};
  phase(k, [&](int64_t i) { induced::row_length(view, i); });
  exclusive_scan(lengths, row_start, int64_t{0});
  const auto num_edges = static_cast<std::size_t>(row_start.back());
  row_indices.resize(num_edges);
  edge_ids.resize(with_edge_ids ? num_edges : 0);
  view.row_start = row_start.data();
  view.row_indices = row_indices.data();
  view.edge_ids = with_edge_ids ? edge_ids.data() : nullptr;
  phase(k, [&](int64_t i) { induced::write_row(view, i); });
}

std::vector<int32_t> SubgraphArrays::loss_rows(std::span<const uint8_t> is_train) {
  const auto k = static_cast<int64_t>(nodes.size());
  is_loss.resize(nodes.size());
  phase(k, [&](int64_t i) { is_loss[static_cast<std::size_t>(i)] = is_train[static_cast<std::size_t>(nodes[static_cast<std::size_t>(i)])]; });
  exclusive_scan(is_loss, loss_start, int64_t{0});
  std::vector<int32_t> rows(static_cast<std::size_t>(loss_start.back()));
  phase(k, [&](int64_t i) {
    if (is_loss[static_cast<std::size_t>(i)] != 0) rows[static_cast<std::size_t>(loss_start[static_cast<std::size_t>(i)])] = static_cast<int32_t>(i);
  });
  return rows;
}

void SubgraphArrays::clear() {
  for (int32_t v : nodes) {
    mark[static_cast<std::size_t>(v)] = 0;
    local_of[static_cast<std::size_t>(v)] = -1;
  }
  nodes.clear();
}

}  // namespace gnnpipe::samplers::twin
