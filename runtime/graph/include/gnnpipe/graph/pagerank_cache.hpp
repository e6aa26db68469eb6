#pragma once
// PageRank computed once per graph and reused (edge-cut strategies, issue #13).
//
// Two levels, both keyed by CsrGraph::structure_hash(), the node count and the PageRankOptions:
//  - in memory, process-wide: while any caller still holds a result, asking again for the same
//    graph and options returns that very object (no recomputation). The cache holds weak
//    references only, so it never keeps ~8 bytes per node alive by itself: a run keeps the
//    shared_ptr for as long as it cuts edges.
//  - on disk, optional (`cache_dir`, as for the Cluster-GCN partitions, graph_partition.hpp): one
//    file per graph and options, written atomically (temporary file + rename), validated on load
//    (magic, format version, node count, options, structure hash, file size, every score finite
//    and >= 0, sum within 1e-6 of 1); a bad file is logged as a warning, recomputed and rewritten.
//    Worth it for big graphs (PageRank over papers100M's 1.6 B edges takes minutes; reading
//    888 MB back takes about a second); an unusable folder is a warning, never an error.
// Thread-safe: concurrent callers wait for one computation (run inside an isolated task arena, so
// a oneTBB thread waiting in it never picks up another task that would ask the cache again).
#include <filesystem>
#include <memory>

#include "gnnpipe/graph/pagerank.hpp"

namespace gnnpipe::graph {

enum class PageRankOrigin {
  kComputed,  // computed by this call
  kMemory,    // the object an earlier call returned, still held by someone
  kDisk,      // read from the cache folder
};

struct CachedPageRank {
  std::shared_ptr<const PageRank> pagerank;  // never null
  PageRankOrigin origin = PageRankOrigin::kComputed;
};

// pagerank(graph, options), from the in-memory cache, else from `cache_dir` (empty: no disk
// cache; created when missing), else computed (and then written to `cache_dir`).
CachedPageRank cached_pagerank(const CsrGraph& graph, const PageRankOptions& options = {},
                               const std::filesystem::path& cache_dir = {});

// The cache file's name (inside cache_dir) for `graph` and `options`.
std::filesystem::path pagerank_cache_name(const CsrGraph& graph, const PageRankOptions& options = {});

}  // namespace gnnpipe::graph
