#include "gnnpipe/graph/csr_graph.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "parallel_find.hpp"

namespace gnnpipe::graph {
namespace {

using detail::first_index_where;
using Range = tbb::blocked_range<std::size_t>;
constexpr std::size_t kEdgeGrain = 1 << 16;
constexpr std::size_t kRowGrain = 1 << 10;

// Exclusive prefix sum of counts[0..n) into offsets[0..n]; offsets[0] = 0.
HostArray<EdgeOffset> offsets_from_counts(std::span<const EdgeOffset> counts) {
  HostArray<EdgeOffset> offsets(counts.size() + 1);
  offsets[0] = 0;
  std::inclusive_scan(counts.begin(), counts.end(), offsets.begin() + 1);
  return offsets;
}

void sort_rows(std::span<const EdgeOffset> offsets, std::span<NodeId> indices) {
  if (offsets.empty()) return;  // a default-constructed (empty) graph has no offsets at all
  const std::size_t n = offsets.size() - 1;
  tbb::parallel_for(Range(0, n, kRowGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      std::sort(indices.begin() + offsets[v], indices.begin() + offsets[v + 1]);
    }
  }));
}

// Writes sorted row v of the compacted graph into `out` (or only counts it when out is null).
EdgeOffset emit_row(NodeId v, std::span<const NodeId> row, const CsrBuildOptions& options, NodeId* out) {
  EdgeOffset written = 0;
  bool self_done = options.self_loops != SelfLoops::kAdd;
  auto put = [&](NodeId u) {
    if (out != nullptr) out[written] = u;
    ++written;
  };
  for (std::size_t i = 0; i < row.size(); ++i) {
    const NodeId u = row[i];
    if (u == v && options.self_loops != SelfLoops::kKeep) continue;  // kAdd re-inserts exactly one
    if (options.dedupe && i > 0 && row[i - 1] == u) continue;
    if (!self_done && u > v) {
      put(v);
      self_done = true;
    }
    put(u);
  }
  if (!self_done) put(v);
  return written;
}

// Rewrites sorted rows as `options` asks (dedupe, self-loops), in two parallel passes: count, then
// write at the scanned offsets. Rows stay sorted.
CsrGraph compact_sorted_rows(std::span<const EdgeOffset> offsets, std::span<const NodeId> indices,
                             const CsrBuildOptions& options) {
  const std::size_t n = offsets.size() - 1;
  std::vector<EdgeOffset> counts(n);
  auto row = [&](std::size_t v) {
    return indices.subspan(static_cast<std::size_t>(offsets[v]), static_cast<std::size_t>(offsets[v + 1] - offsets[v]));
  };
  tbb::parallel_for(Range(0, n, kRowGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) counts[v] = emit_row(static_cast<NodeId>(v), row(v), options, nullptr);
  }));
  HostArray<EdgeOffset> new_offsets = offsets_from_counts(counts);
  HostArray<NodeId> new_indices(static_cast<std::size_t>(new_offsets[n]));
  tbb::parallel_for(Range(0, n, kRowGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      emit_row(static_cast<NodeId>(v), row(v), options, new_indices.data() + new_offsets[v]);
    }
  }));
  return CsrGraph::from_arrays(std::move(new_offsets), std::move(new_indices), "compacted graph");
}

}  // namespace

CsrGraph CsrGraph::from_arrays(HostArray<EdgeOffset> offsets, HostArray<NodeId> indices, std::string_view what) {
  GNNPIPE_CHECK_DATA(!offsets.empty(), "{}: the offsets array is empty (it needs num_nodes + 1 entries)", what);
  const std::size_t n = offsets.size() - 1;
  GNNPIPE_CHECK_DATA(n <= static_cast<std::size_t>(std::numeric_limits<NodeId>::max()),
                     "{}: {} nodes do not fit in int32 node ids", what, n);
  GNNPIPE_CHECK_DATA(offsets[0] == 0, "{}: offsets[0] is {}, expected 0", what, offsets[0]);
  GNNPIPE_CHECK_DATA(offsets[n] == static_cast<EdgeOffset>(indices.size()),
                     "{}: offsets end at {} but there are {} indices", what, offsets[n], indices.size());
  const std::size_t bad_offset = first_index_where(n, [&](std::size_t v) { return offsets[v + 1] < offsets[v]; });
  GNNPIPE_CHECK_DATA(bad_offset == n, "{}: offsets decrease at row {} ({} then {})", what, bad_offset,
                     bad_offset < n ? offsets[bad_offset] : 0, bad_offset < n ? offsets[bad_offset + 1] : 0);
  const auto num = static_cast<NodeId>(n);
  const std::size_t bad_index =
      first_index_where(indices.size(), [&](std::size_t e) { return indices[e] < 0 || indices[e] >= num; });
  GNNPIPE_CHECK_DATA(bad_index == indices.size(), "{}: index {} at position {} is outside [0, {})", what,
                     bad_index < indices.size() ? indices[bad_index] : 0, bad_index, n);
  return CsrGraph(std::move(offsets), std::move(indices));
}

CsrGraph CsrGraph::from_coo(NodeId num_nodes, std::span<const NodeId> src, std::span<const NodeId> dst,
                            const CsrBuildOptions& options) {
  GNNPIPE_CHECK_DATA(num_nodes >= 0, "edge list: negative node count {}", num_nodes);
  GNNPIPE_CHECK_DATA(src.size() == dst.size(), "edge list: {} sources but {} destinations", src.size(), dst.size());
  const std::size_t bad = first_index_where(src.size(), [&](std::size_t i) {
    return src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes;
  });
  GNNPIPE_CHECK_DATA(bad == src.size(), "edge list: edge {} ({} -> {}) has a node id outside [0, {})", bad,
                     bad < src.size() ? src[bad] : 0, bad < src.size() ? dst[bad] : 0, num_nodes);

  const auto n = static_cast<std::size_t>(num_nodes);
  const std::size_t e = src.size();
  const std::size_t total = options.symmetrize ? 2 * e : e;
  // Logical edge k: the k-th input edge, or for k >= e the reverse of edge k - e.
  auto edge_dst = [&](std::size_t k) { return k < e ? dst[k] : src[k - e]; };
  auto edge_src = [&](std::size_t k) { return k < e ? src[k] : dst[k - e]; };

  std::vector<EdgeOffset> counts(n, 0);
  tbb::parallel_for(Range(0, total, kEdgeGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t k = r.begin(); k < r.end(); ++k) {
      std::atomic_ref<EdgeOffset>(counts[static_cast<std::size_t>(edge_dst(k))]).fetch_add(1, std::memory_order_relaxed);
    }
  }));
  HostArray<EdgeOffset> offsets = offsets_from_counts(counts);
  std::copy(offsets.begin(), offsets.end() - 1, counts.begin());  // counts become per-row cursors
  HostArray<NodeId> indices(total);
  tbb::parallel_for(Range(0, total, kEdgeGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t k = r.begin(); k < r.end(); ++k) {
      const auto pos = std::atomic_ref<EdgeOffset>(counts[static_cast<std::size_t>(edge_dst(k))])
                           .fetch_add(1, std::memory_order_relaxed);
      indices[static_cast<std::size_t>(pos)] = edge_src(k);
    }
  }));
  counts = {};
  // Slots within a row were claimed in a scheduling-dependent order: sorting makes it canonical.
  sort_rows(offsets.span(), indices.span());
  if (!options.dedupe && options.self_loops == SelfLoops::kKeep) return CsrGraph(std::move(offsets), std::move(indices));
  return compact_sorted_rows(offsets.span(), indices.span(), options);
}

std::vector<EdgeOffset> CsrGraph::out_degrees() const {
  std::vector<EdgeOffset> degrees(static_cast<std::size_t>(num_nodes()), 0);
  tbb::parallel_for(Range(0, indices_.size(), kEdgeGrain), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t k = r.begin(); k < r.end(); ++k) {
      std::atomic_ref<EdgeOffset>(degrees[static_cast<std::size_t>(indices_[k])]).fetch_add(1, std::memory_order_relaxed);
    }
  }));
  return degrees;
}

bool CsrGraph::rows_sorted(bool strictly) const {
  const auto n = static_cast<std::size_t>(num_nodes());
  return first_index_where(n, [&](std::size_t v) {
           for (auto k = offsets_[v] + 1; k < offsets_[v + 1]; ++k) {
             const NodeId a = indices_[static_cast<std::size_t>(k - 1)];
             const NodeId b = indices_[static_cast<std::size_t>(k)];
             if (strictly ? a >= b : a > b) return true;
           }
           return false;
         }) == n;
}

EdgeOffset CsrGraph::count_self_loops() const {
  const auto n = static_cast<std::size_t>(num_nodes());
  return tbb::parallel_reduce(
      Range(0, n, kRowGrain), EdgeOffset{0},
      core::tsan::fork_join([&](const Range& r, EdgeOffset sum) {
        for (std::size_t v = r.begin(); v < r.end(); ++v) {
          for (NodeId u : in_neighbors(static_cast<NodeId>(v))) sum += u == static_cast<NodeId>(v) ? 1 : 0;
        }
        return sum;
      }),
      std::plus<>());
}

CsrGraph CsrGraph::transposed() const {
  // Edge (row v, column u) is u -> v; in the transpose it is v -> u, i.e. row u, column v.
  std::vector<NodeId> rows(indices_.size());
  const Range nodes(0, static_cast<std::size_t>(num_nodes()), kRowGrain);
  tbb::parallel_for(nodes, core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      std::fill(rows.begin() + offsets_[v], rows.begin() + offsets_[v + 1], static_cast<NodeId>(v));
    }
  }));
  return from_coo(num_nodes(), rows, indices_.span());
}

bool CsrGraph::is_symmetric() const {
  const CsrGraph sorted = normalized({});
  const CsrGraph t = transposed();
  return std::equal(sorted.offsets_.begin(), sorted.offsets_.end(), t.offsets_.begin(), t.offsets_.end()) &&
         std::equal(sorted.indices_.begin(), sorted.indices_.end(), t.indices_.begin(), t.indices_.end());
}

CsrGraph CsrGraph::normalized(const CsrBuildOptions& options) const {
  GNNPIPE_CHECK(!options.symmetrize, "normalized() does not symmetrize: build with from_coo(symmetrize) instead");
  HostArray<NodeId> sorted = indices_.clone();
  sort_rows(offsets_.span(), sorted.span());
  if (!options.dedupe && options.self_loops == SelfLoops::kKeep) return CsrGraph(offsets_.clone(), std::move(sorted));
  return compact_sorted_rows(offsets_.span(), sorted.span(), options);
}

uint64_t CsrGraph::structure_hash() const {
  // Fixed-size chunks hashed in parallel, combined in order: the same value for any thread count.
  constexpr std::size_t kChunk = 1 << 20;
  auto hash_range = [](auto values, std::size_t begin, std::size_t end, uint64_t h) {
    for (std::size_t i = begin; i < end; ++i) h = core::splitmix64(h ^ static_cast<uint64_t>(values[i]));
    return h;
  };
  const std::size_t chunks = (indices_.size() + kChunk - 1) / kChunk;
  std::vector<uint64_t> partial(chunks);
  tbb::parallel_for(std::size_t{0}, chunks, core::tsan::fork_join([&](std::size_t c) {
    partial[c] = hash_range(indices_.data(), c * kChunk, std::min(indices_.size(), (c + 1) * kChunk), c);
  }));
  uint64_t h = hash_range(offsets_.data(), 0, offsets_.size(), 0x6e6e7069706521ull);
  for (uint64_t p : partial) h = core::splitmix64(h ^ p);
  return h;
}

}  // namespace gnnpipe::graph
