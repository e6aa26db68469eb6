#include "gnnpipe/samplers/graph_partition.hpp"

#include <metis.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "gnnpipe/core/atomic_file.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/timer.hpp"

namespace gnnpipe::samplers {
namespace {

namespace fs = std::filesystem;
using graph::CsrGraph;
using graph::EdgeOffset;
using graph::NodeId;

// METIS's input: the undirected graph as a symmetric adjacency without self-loops or repeats.
struct MetisGraph {
  std::vector<idx_t> xadj;    // [n + 1]
  std::vector<idx_t> adjncy;  // [2 * undirected edges]
};

MetisGraph metis_graph(const CsrGraph& g) {
  // An already symmetric graph with strictly sorted rows (no repeated edges) is used as it is;
  // anything else is rebuilt with both directions of every edge, deduplicated.
  CsrGraph sym = g;
  if (!(g.rows_sorted(/*strictly=*/true) && g.is_symmetric())) {
    std::vector<NodeId> dst(static_cast<std::size_t>(g.num_edges()));
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      std::fill(dst.begin() + g.offsets()[static_cast<std::size_t>(v)],
                dst.begin() + g.offsets()[static_cast<std::size_t>(v) + 1], v);
    }
    sym = CsrGraph::from_coo(g.num_nodes(), g.indices(), dst,
                             {.symmetrize = true, .dedupe = true, .self_loops = graph::SelfLoops::kRemove});
  }
  GNNPIPE_CHECK(sym.num_edges() <= static_cast<EdgeOffset>(std::numeric_limits<idx_t>::max()),
                "METIS: the symmetrized graph has {} edges, more than its {}-bit idx_t can index", sym.num_edges(),
                IDXTYPEWIDTH);
  MetisGraph m;
  m.xadj.reserve(static_cast<std::size_t>(sym.num_nodes()) + 1);
  m.adjncy.reserve(static_cast<std::size_t>(sym.num_edges()));
  m.xadj.push_back(0);
  for (NodeId v = 0; v < sym.num_nodes(); ++v) {
    for (NodeId u : sym.in_neighbors(v)) {
      if (u != v) m.adjncy.push_back(static_cast<idx_t>(u));
    }
    m.xadj.push_back(static_cast<idx_t>(m.adjncy.size()));
  }
  return m;
}

std::string_view metis_status_name(int status) {
  switch (status) {
    case METIS_OK: return "METIS_OK";
    case METIS_ERROR_INPUT: return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY: return "METIS_ERROR_MEMORY";
    case METIS_ERROR: return "METIS_ERROR";
    default: return "an unknown status";
  }
}

void check_num_parts(const CsrGraph& g, int num_parts) {
  GNNPIPE_CHECK_CONFIG(num_parts >= 1 && num_parts <= g.num_nodes(), "sampler.num_parts: must be in [1, {}] ({} nodes), got {}",
                       g.num_nodes(), g.num_nodes(), num_parts);
}

// ---- cache file ----

constexpr char kMagic[8] = {'G', 'N', 'P', 'M', 'E', 'T', 'I', 'S'};
constexpr uint32_t kFormatVersion = 1;

// The file header, written as raw bytes (native byte order; a file from a machine of the other
// endianness fails the magic check and is recomputed).
struct CacheHeader {
  char magic[8];
  uint32_t version;
  int32_t num_parts;
  int64_t num_nodes;
  uint64_t seed;
  uint64_t structure_hash;
};
static_assert(sizeof(CacheHeader) == 40, "the cache header has no padding");

CacheHeader expected_header(const CsrGraph& g, int num_parts, uint64_t seed, uint64_t hash) {
  CacheHeader h{.magic = {},
                .version = kFormatVersion,
                .num_parts = num_parts,
                .num_nodes = g.num_nodes(),
                .seed = seed,
                .structure_hash = hash};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  return h;
}

fs::path cache_name(uint64_t hash, int num_parts, uint64_t seed) {
  return fmt::format("metis-{:016x}-p{}-s{}.parts", hash, num_parts, seed);
}

// A cache file's parts, or why they cannot be used (`problem` non-empty).
struct CacheRead {
  std::vector<int32_t> parts;
  std::string problem;
};

CacheRead read_cache(const fs::path& file, const CacheHeader& want) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) return {{}, fmt::format("cannot read its size: {}", ec.message())};
  const uintmax_t want_size = sizeof(CacheHeader) + sizeof(int32_t) * static_cast<uintmax_t>(want.num_nodes);
  if (size != want_size) return {{}, fmt::format("it has {} bytes, {} expected for {} nodes", size, want_size, want.num_nodes)};
  std::ifstream in(file, std::ios::binary);
  CacheHeader h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  if (!in) return {{}, "cannot read its header"};
  if (std::memcmp(h.magic, want.magic, sizeof h.magic) != 0) return {{}, "it is not a gnnpipe partition file (bad magic)"};
  if (h.version != want.version) return {{}, fmt::format("format version {}, expected {}", h.version, want.version)};
  if (h.num_nodes != want.num_nodes) return {{}, fmt::format("it is for {} nodes, not {}", h.num_nodes, want.num_nodes)};
  if (h.num_parts != want.num_parts) return {{}, fmt::format("it is for {} parts, not {}", h.num_parts, want.num_parts)};
  if (h.seed != want.seed) return {{}, fmt::format("it is for seed {}, not {}", h.seed, want.seed)};
  if (h.structure_hash != want.structure_hash) {
    return {{}, fmt::format("it is for graph hash {:016x}, not {:016x}", h.structure_hash, want.structure_hash)};
  }
  std::vector<int32_t> parts(static_cast<std::size_t>(want.num_nodes));
  in.read(reinterpret_cast<char*>(parts.data()), static_cast<std::streamsize>(parts.size() * sizeof(int32_t)));
  if (!in) return {{}, "cannot read its part ids"};
  const auto bad = std::find_if(parts.begin(), parts.end(), [&](int32_t p) { return p < 0 || p >= want.num_parts; });
  if (bad != parts.end()) {
    return {{}, fmt::format("node {} has part {}, outside [0, {})", bad - parts.begin(), *bad, want.num_parts)};
  }
  return {std::move(parts), {}};
}


}  // namespace

std::vector<int32_t> partition_graph(const CsrGraph& g, int num_parts, uint64_t seed) {
  check_num_parts(g, num_parts);
  const auto n = static_cast<std::size_t>(g.num_nodes());
  if (num_parts == 1) return std::vector<int32_t>(n, 0);

  const core::Stopwatch watch;
  MetisGraph m = metis_graph(g);
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t ncon = 1;
  idx_t nparts = num_parts;
  idx_t edge_cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  // METIS wants a non-negative int seed: fold the 64 bits into 31.
  options[METIS_OPTION_SEED] = static_cast<idx_t>((seed ^ (seed >> 32)) & 0x7fffffffu);
  std::vector<idx_t> part(n);
  idx_t no_edges = 0;  // METIS reads adjncy only through xadj; never hand it a null pointer
  // METIS keeps its random generator in a global (GKlib's), so two concurrent calls would race
  // and lose determinism: one METIS call at a time per process.
  static std::mutex metis_mutex;
  std::unique_lock lock(metis_mutex);
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, m.xadj.data(), m.adjncy.empty() ? &no_edges : m.adjncy.data(),
                                         /*vwgt=*/nullptr, /*vsize=*/nullptr, /*adjwgt=*/nullptr, &nparts,
                                         /*tpwgts=*/nullptr, /*ubvec=*/nullptr, options, &edge_cut, part.data());
  lock.unlock();
  GNNPIPE_CHECK(status == METIS_OK, "METIS_PartGraphKway failed with {} ({}) on {} nodes, {} parts",
                metis_status_name(status), status, n, num_parts);

  std::vector<int32_t> parts(n);
  for (std::size_t v = 0; v < n; ++v) {
    GNNPIPE_CHECK(part[v] >= 0 && part[v] < nparts, "METIS put node {} into part {}, outside [0, {})", v, part[v],
                  num_parts);
    parts[v] = static_cast<int32_t>(part[v]);
  }
  core::logger().info("METIS: partitioned {} nodes into {} parts in {:.2f} s (edge cut {} of {} undirected edges)", n,
                      num_parts, watch.seconds(), edge_cut, m.adjncy.size() / 2);
  return parts;
}

fs::path partition_cache_name(const CsrGraph& g, int num_parts, uint64_t seed) {
  return cache_name(g.structure_hash(), num_parts, seed);
}

std::vector<int32_t> load_or_partition(const CsrGraph& g, int num_parts, uint64_t seed, const fs::path& cache_dir) {
  check_num_parts(g, num_parts);
  if (cache_dir.empty() || num_parts == 1) return partition_graph(g, num_parts, seed);

  const uint64_t hash = g.structure_hash();
  const CacheHeader header = expected_header(g, num_parts, seed, hash);
  const fs::path file = cache_dir / cache_name(hash, num_parts, seed);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    CacheRead cached = read_cache(file, header);
    if (cached.problem.empty()) {
      core::logger().info("METIS: loaded partition from {}", file.string());
      return std::move(cached.parts);
    }
    core::logger().warn("METIS: ignoring partition cache {}: {}; recomputing it", file.string(), cached.problem);
  }

  std::vector<int32_t> parts = partition_graph(g, num_parts, seed);
  fs::create_directories(cache_dir, ec);
  if (ec) {
    core::logger().warn("METIS: cannot create partition cache folder {}: {}; continuing without the cache",
                        cache_dir.string(), ec.message());
    return parts;
  }
  const std::string problem = core::write_file_atomically(
      file, {std::as_bytes(std::span(&header, 1)), std::as_bytes(std::span<const int32_t>(parts))});
  if (!problem.empty()) {
    core::logger().warn("METIS: cannot write partition cache {}: {}; continuing without the cache", file.string(),
                        problem);
  }
  return parts;
}

}  // namespace gnnpipe::samplers
