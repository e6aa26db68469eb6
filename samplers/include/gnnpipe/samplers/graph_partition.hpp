#pragma once
// METIS k-way partitioning of a graph's nodes (Cluster-GCN's clusters), with an on-disk cache so
// that a graph is partitioned once per (structure, part count, seed): METIS takes seconds on
// arxiv and minutes on products, every run of an experiment needs the same partition, and a
// cached one makes reruns reproducible even across METIS builds.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"

namespace gnnpipe::samplers {

// The part in [0, num_parts) of every node of `g`, by METIS_PartGraphKway on the undirected
// graph that `g` induces: every edge in both directions, once, without self-loops (METIS needs a
// symmetric adjacency without loops; edge direction does not matter for clustering). METIS's seed
// is derived from `seed`, so the result is a function of (g's structure, num_parts, seed) for a
// given METIS build. Parts may come out empty (more parts than a component can fill). num_parts
// == 1 puts every node in part 0 without calling METIS. Logs the time and edge cut at info level.
// Thread-safe (calls into METIS, whose random state is global, are serialised).
// Throws ConfigError "sampler.num_parts: ..." unless 1 <= num_parts <= g.num_nodes(), Error when
// METIS fails (naming its return code) or the graph has more edges than METIS's idx_t can index.
std::vector<int32_t> partition_graph(const graph::CsrGraph& g, int num_parts, uint64_t seed);

// partition_graph with a cache in `cache_dir` (created if missing). The file
// `metis-<structure hash, 16 hex digits>-p<num_parts>-s<seed>.parts` holds a header (magic,
// format version, node count, num_parts, seed, structure hash) and one int32 part id per node, in
// this machine's byte order. A file is used only when all of that matches `g` and the arguments
// and every id lies in [0, num_parts); a corrupt or mismatching file is reported as a warning
// naming it, recomputed and rewritten. Files are written to a temporary name and renamed into
// place, so concurrent runs and crashes never leave a half-written file under the final name.
// An empty `cache_dir` disables caching; a cache folder that cannot be created or written is a
// warning, not an error (the partition is still returned). num_parts == 1 is never cached.
// Throws what partition_graph throws.
std::vector<int32_t> load_or_partition(const graph::CsrGraph& g, int num_parts, uint64_t seed,
                                       const std::filesystem::path& cache_dir);

// The cache file name load_or_partition uses for these arguments (without the folder).
std::filesystem::path partition_cache_name(const graph::CsrGraph& g, int num_parts, uint64_t seed);

}  // namespace gnnpipe::samplers
