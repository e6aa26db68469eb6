#include "gnnpipe/graph/pagerank_cache.hpp"

#include <tbb/task_arena.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <tuple>

#include "gnnpipe/core/atomic_file.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"

namespace gnnpipe::graph {
namespace {

namespace fs = std::filesystem;

// ---- in memory ----

struct Key {
  uint64_t hash;
  int64_t num_nodes;
  double damping;
  double tolerance;
  int max_iterations;
  auto operator<=>(const Key&) const = default;
};

Key make_key(const CsrGraph& g, const PageRankOptions& o) {
  return {g.structure_hash(), g.num_nodes(), o.damping, o.tolerance, o.max_iterations};
}

// ---- on disk ----

constexpr char kMagic[8] = {'G', 'N', 'P', 'P', 'R', 'A', 'N', 'K'};
constexpr uint32_t kFormatVersion = 1;

// The file header, raw bytes in native byte order (a file from a machine of the other endianness
// fails the magic check and is recomputed), followed by num_nodes doubles.
struct CacheHeader {
  char magic[8];
  uint32_t version;
  int32_t max_iterations;
  int64_t num_nodes;
  double damping;
  double tolerance;
  uint64_t structure_hash;
  int32_t iterations;
  int32_t converged;
  double delta;
};
static_assert(sizeof(CacheHeader) == 64, "the cache header has no padding");

CacheHeader expected_header(const Key& key) {
  CacheHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.max_iterations = key.max_iterations;
  h.num_nodes = key.num_nodes;
  h.damping = key.damping;
  h.tolerance = key.tolerance;
  h.structure_hash = key.hash;
  return h;
}

fs::path cache_name(const Key& key) {
  return fmt::format("pagerank-{:016x}-n{}-d{}-t{}-i{}.f64", key.hash, key.num_nodes, key.damping, key.tolerance,
                     key.max_iterations);
}

// The cached PageRank, or why it cannot be used (`problem` non-empty).
struct CacheRead {
  PageRank pagerank;
  std::string problem;
};

CacheRead read_cache(const fs::path& file, const CacheHeader& want) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) return {{}, fmt::format("cannot read its size: {}", ec.message())};
  const uintmax_t want_size = sizeof(CacheHeader) + sizeof(double) * static_cast<uintmax_t>(want.num_nodes);
  if (size != want_size) return {{}, fmt::format("it has {} bytes, {} expected for {} nodes", size, want_size, want.num_nodes)};
  std::ifstream in(file, std::ios::binary);
  CacheHeader h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  if (!in) return {{}, "cannot read its header"};
  if (std::memcmp(h.magic, want.magic, sizeof h.magic) != 0) return {{}, "it is not a gnnpipe PageRank file (bad magic)"};
  if (h.version != want.version) return {{}, fmt::format("format version {}, expected {}", h.version, want.version)};
  if (h.num_nodes != want.num_nodes) return {{}, fmt::format("it is for {} nodes, not {}", h.num_nodes, want.num_nodes)};
  if (h.structure_hash != want.structure_hash) {
    return {{}, fmt::format("it is for graph hash {:016x}, not {:016x}", h.structure_hash, want.structure_hash)};
  }
  if (h.damping != want.damping || h.tolerance != want.tolerance || h.max_iterations != want.max_iterations) {
    return {{}, fmt::format("it is for damping {}, tolerance {}, max_iterations {}, not {}, {}, {}", h.damping,
                            h.tolerance, h.max_iterations, want.damping, want.tolerance, want.max_iterations)};
  }
  if (h.iterations < 1 || h.iterations > want.max_iterations || (h.converged != 0 && h.converged != 1) ||
      !(h.delta >= 0.0)) {
    return {{}, fmt::format("its run record is invalid ({} iterations, converged {}, change {})", h.iterations,
                            h.converged, h.delta)};
  }
  PageRank pr;
  pr.iterations = h.iterations;
  pr.converged = h.converged == 1;
  pr.delta = h.delta;
  pr.scores.resize(static_cast<std::size_t>(want.num_nodes));
  in.read(reinterpret_cast<char*>(pr.scores.data()), static_cast<std::streamsize>(pr.scores.size() * sizeof(double)));
  if (!in) return {{}, "cannot read its scores"};
  double sum = 0.0;
  for (std::size_t v = 0; v < pr.scores.size(); ++v) {
    if (!std::isfinite(pr.scores[v]) || pr.scores[v] < 0.0) {
      return {{}, fmt::format("node {} has score {}", v, pr.scores[v])};
    }
    sum += pr.scores[v];
  }
  if (std::abs(sum - 1.0) > 1e-6) return {{}, fmt::format("its scores sum to {}, not 1", sum)};
  return {std::move(pr), {}};
}


// Disk level: load, or compute and store. Called with the cache mutex held.
CachedPageRank load_or_compute(const CsrGraph& graph, const PageRankOptions& options, const Key& key,
                               const fs::path& cache_dir) {
  auto compute = [&] {
    // Isolated: while this thread waits inside pagerank's parallel loops it runs only their tasks,
    // never an outer one that could ask for the (locked) cache again.
    return std::make_shared<const PageRank>(tbb::this_task_arena::isolate([&] { return pagerank(graph, options); }));
  };
  // A graph without nodes has nothing worth a file.
  if (cache_dir.empty() || key.num_nodes == 0) return {compute(), PageRankOrigin::kComputed};

  CacheHeader header = expected_header(key);
  const fs::path file = cache_dir / cache_name(key);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    CacheRead cached = read_cache(file, header);
    if (cached.problem.empty()) {
      core::logger().info("PageRank: loaded from {}", file.string());
      return {std::make_shared<const PageRank>(std::move(cached.pagerank)), PageRankOrigin::kDisk};
    }
    core::logger().warn("PageRank: ignoring cache file {}: {}; recomputing it", file.string(), cached.problem);
  }

  std::shared_ptr<const PageRank> pr = compute();
  fs::create_directories(cache_dir, ec);
  if (ec) {
    core::logger().warn("PageRank: cannot create cache folder {}: {}; continuing without the cache",
                        cache_dir.string(), ec.message());
    return {std::move(pr), PageRankOrigin::kComputed};
  }
  header.iterations = pr->iterations;
  header.converged = pr->converged ? 1 : 0;
  header.delta = pr->delta;
  const std::string problem = core::write_file_atomically(
      file, {std::as_bytes(std::span(&header, 1)), std::as_bytes(std::span<const double>(pr->scores))});
  if (!problem.empty()) {
    core::logger().warn("PageRank: cannot write cache file {}: {}; continuing without the cache", file.string(),
                        problem);
  }
  return {std::move(pr), PageRankOrigin::kComputed};
}

}  // namespace

fs::path pagerank_cache_name(const CsrGraph& graph, const PageRankOptions& options) {
  return cache_name(make_key(graph, options));
}

CachedPageRank cached_pagerank(const CsrGraph& graph, const PageRankOptions& options, const fs::path& cache_dir) {
  const Key key = make_key(graph, options);
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const PageRank>> cache;
  const std::lock_guard lock(mutex);
  std::erase_if(cache, [](const auto& entry) { return entry.second.expired(); });
  if (const auto it = cache.find(key); it != cache.end()) {
    if (std::shared_ptr<const PageRank> held = it->second.lock()) return {std::move(held), PageRankOrigin::kMemory};
  }
  CachedPageRank result = load_or_compute(graph, options, key, cache_dir);
  cache[key] = result.pagerank;
  return result;
}

}  // namespace gnnpipe::graph
