// The degree-corrected stochastic block model of synthetic.hpp: communities, power-law weights,
// endpoint sampling with alias tables, and edge generation in Philox-keyed chunks.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "alias_table.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/synthetic.hpp"
#include "synthetic_streams.hpp"

namespace gnnpipe::graph {
namespace {

using detail::AliasEntry;
using Range = tbb::blocked_range<std::size_t>;

// Edges per RNG chunk (see EdgeKind::extend): a longer run's edge list extends a shorter one's.
constexpr std::size_t kEdgeChunk = 1 << 14;
// Edges are added in rounds until the deduplicated count is within kTolerance below the target.
constexpr int kMaxRounds = 8;
constexpr double kTolerance = 0.005;
// Iterations of the fixed point that scales the capped weights to the requested mean.
constexpr int kScaleIterations = 50;

// Community (= label) of every node: a seeded permutation dealt round-robin, so sizes differ by
// at most one and ids carry no class order.
HostArray<int32_t> assign_communities(std::size_t n, int classes, uint64_t seed) {
  std::vector<NodeId> order(n);
  std::iota(order.begin(), order.end(), NodeId{0});
  core::Rng rng(seed, {synthetic_streams::kCommunities});
  for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  HostArray<int32_t> community(n);
  for (std::size_t i = 0; i < n; ++i) community[static_cast<std::size_t>(order[i])] = static_cast<int32_t>(i % classes);
  return community;
}

// Expected degrees: Pareto(x_min = 1, alpha = exponent - 1) draws, scaled and capped at
// sqrt(n * avg_degree) so that their mean is avg_degree. Node v's draw uses positions 2v, 2v+1 of
// stream (seed, kWeights): parallel and positional. The scale is found sequentially (fixed order:
// the same double sums for any thread count).
std::vector<double> degree_weights(const SyntheticOptions& o) {
  const auto n = static_cast<std::size_t>(o.nodes);
  const core::RngKey key = core::rng_key(o.seed, {synthetic_streams::kWeights});
  const double inv_alpha = 1.0 / (o.power_law_exponent - 1.0);
  std::vector<double> raw(n);
  tbb::parallel_for(Range(0, n, 1 << 14), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t v = r.begin(); v < r.end(); ++v) {
      const uint64_t bits = (static_cast<uint64_t>(key.u32_at(2 * v)) << 21) | (key.u32_at(2 * v + 1) >> 11);
      const double u = static_cast<double>(bits) * 0x1p-53;  // 53 random bits in [0, 1)
      raw[v] = std::pow(1.0 - u, -inv_alpha);                                              // >= 1
    }
  }));
  const double cap = std::sqrt(static_cast<double>(o.nodes) * o.avg_degree);  // >= 2 * avg (validate)
  auto capped_mean = [&](double scale) {
    double sum = 0;
    for (double x : raw) sum += std::min(scale * x, cap);
    return sum / static_cast<double>(n);
  };
  double scale = o.avg_degree / capped_mean(1.0);
  for (int it = 0; it < kScaleIterations; ++it) {
    const double mean = capped_mean(scale);
    if (std::abs(mean - o.avg_degree) <= 1e-9 * o.avg_degree) break;
    scale *= o.avg_degree / mean;
  }
  for (double& x : raw) x = std::min(scale * x, cap);
  return raw;
}

// Draws the endpoints of one undirected edge as synthetic.hpp describes.
class EndpointSampler {
 public:
  EndpointSampler(std::span<const int32_t> community, int classes, std::span<const double> weights)
      : community_(community),
        global_(community.size()),
        grouped_(community.size()),
        begin_(static_cast<std::size_t>(classes) + 1, 0) {
    const std::size_t n = community.size();
    std::vector<NodeId> all(n);
    std::iota(all.begin(), all.end(), NodeId{0});
    detail::build_alias(all, weights, global_);
    // Counting sort of the nodes by community, then one alias table per community segment.
    for (int32_t c : community) ++begin_[static_cast<std::size_t>(c) + 1];
    std::partial_sum(begin_.begin(), begin_.end(), begin_.begin());
    std::vector<std::size_t> cursor(begin_.begin(), begin_.end() - 1);
    std::vector<NodeId> members(n);
    std::vector<double> member_weights(n);
    for (std::size_t v = 0; v < n; ++v) {
      const std::size_t slot = cursor[static_cast<std::size_t>(community[v])]++;
      members[slot] = static_cast<NodeId>(v);
      member_weights[slot] = weights[v];
    }
    tbb::parallel_for(std::size_t{0}, static_cast<std::size_t>(classes), core::tsan::fork_join([&](std::size_t c) {
      const std::size_t b = begin_[c];
      const std::size_t len = begin_[c + 1] - b;
      detail::build_alias(std::span(members).subspan(b, len), std::span(member_weights).subspan(b, len),
                          std::span(grouped_).subspan(b, len));
    }));
  }

  // u in proportion to weight; v in proportion to weight inside u's community (`inside`), or
  // among the other communities (validate guarantees there is one).
  void draw(bool inside, core::Rng& rng, NodeId& u, NodeId& v) const {
    u = detail::draw_alias(global_, rng);
    const auto c = static_cast<std::size_t>(community_[static_cast<std::size_t>(u)]);
    if (inside) {
      v = detail::draw_alias(std::span(grouped_).subspan(begin_[c], begin_[c + 1] - begin_[c]), rng);
      return;
    }
    do {
      v = detail::draw_alias(global_, rng);
    } while (static_cast<std::size_t>(community_[static_cast<std::size_t>(v)]) == c);
  }

 private:
  std::span<const int32_t> community_;
  std::vector<AliasEntry> global_;   // all nodes
  std::vector<AliasEntry> grouped_;  // one table per community, segment [begin_[c], begin_[c+1])
  std::vector<std::size_t> begin_;
};

// One kind of edge (inside communities or across them) with its own Philox stream, so the
// edge homophily can be met exactly: each kind is topped up to its own target count.
struct EdgeKind {
  bool inside = true;
  uint64_t stream = 0;
  double target = 0;  // distinct undirected edges wanted
  std::vector<NodeId> src, dst;
  std::size_t raw = 0, prev_raw = 0;  // raw edges drawn now and before the last extension
  double distinct = 0, prev_distinct = 0;

  bool done() const { return distinct >= target * (1.0 - kTolerance); }

  // Draws edges [raw, want) of this kind's sequence. Chunk c of the sequence uses stream
  // (seed, kind, c), so edge k depends only on (seed, kind, k); a chunk that straddles `raw` is
  // replayed from its start (its draws are sequential).
  void extend(const EndpointSampler& sampler, uint64_t seed, std::size_t want) {
    const std::size_t first = raw;
    src.resize(want);
    dst.resize(want);
    const std::size_t chunks_end = (want + kEdgeChunk - 1) / kEdgeChunk;
    tbb::parallel_for(first / kEdgeChunk, chunks_end, core::tsan::fork_join([&](std::size_t c) {
      core::Rng rng(seed, {stream, c});
      const std::size_t end = std::min(want, (c + 1) * kEdgeChunk);
      for (std::size_t k = c * kEdgeChunk; k < end; ++k) {
        NodeId u = 0, v = 0;
        sampler.draw(inside, rng, u, v);
        if (k >= first) {
          src[k] = u;
          dst[k] = v;
        }
      }
    }));
    prev_raw = raw;
    prev_distinct = distinct;
    raw = want;
  }

  // Raw edges to have after the next round. Repeats and self-loops are lost to the CSR build, so
  // the deficit is divided by the marginal yield (new distinct edges per raw edge): the secant
  // through the last two rounds, or first 2 * (distinct / raw) - 1, exact when repeats grow
  // quadratically in the edge count.
  std::size_t next_want() const {
    if (done()) return raw;
    if (raw == 0) return static_cast<std::size_t>(std::ceil(target));
    const double yield = prev_raw == 0 ? 2.0 * distinct / static_cast<double>(raw) - 1.0
                                       : (distinct - prev_distinct) / static_cast<double>(raw - prev_raw);
    return raw + static_cast<std::size_t>(std::ceil((target - distinct) / std::clamp(yield, 0.05, 1.0)));
  }
};

// Directed CSR entries whose two ends share a community (parallel; exact integer sum).
EdgeOffset count_inside_entries(const CsrGraph& g, std::span<const int32_t> community) {
  return tbb::parallel_reduce(
      Range(0, static_cast<std::size_t>(g.num_nodes()), 1 << 12), EdgeOffset{0},
      core::tsan::fork_join([&](const Range& r, EdgeOffset sum) {
        for (std::size_t v = r.begin(); v < r.end(); ++v) {
          for (NodeId u : g.in_neighbors(static_cast<NodeId>(v))) sum += community[static_cast<std::size_t>(u)] == community[v];
        }
        return sum;
      }),
      std::plus<>());
}

}  // namespace

SyntheticGraph make_synthetic_graph(const SyntheticOptions& options) {
  validate(options);
  const auto n = static_cast<NodeId>(options.nodes);
  SyntheticGraph out;
  out.communities = assign_communities(static_cast<std::size_t>(n), options.classes, options.seed);
  const EndpointSampler sampler(out.communities.span(), options.classes, degree_weights(options));

  const double target = static_cast<double>(options.nodes) * options.avg_degree / 2.0;  // undirected edges
  EdgeKind inside, across;
  inside.stream = synthetic_streams::kInsideEdges;
  inside.target = options.homophily * target;
  across.inside = false;
  across.stream = synthetic_streams::kAcrossEdges;
  across.target = target - inside.target;
  const CsrBuildOptions build{.symmetrize = true, .dedupe = true, .self_loops = SelfLoops::kRemove};
  for (int round = 0;; ++round) {
    for (EdgeKind* kind : {&inside, &across}) {
      const std::size_t want = kind->next_want();
      if (want > kind->raw) kind->extend(sampler, options.seed, want);
    }
    std::vector<NodeId> src(inside.src), dst(inside.dst);
    src.insert(src.end(), across.src.begin(), across.src.end());
    dst.insert(dst.end(), across.dst.begin(), across.dst.end());
    out.graph = CsrGraph();  // release the previous round's graph before building the next
    out.graph = CsrGraph::from_coo(n, src, dst, build);
    const EdgeOffset inside_entries = count_inside_entries(out.graph, out.communities.span());
    inside.distinct = static_cast<double>(inside_entries) / 2.0;
    across.distinct = static_cast<double>(out.graph.num_edges() - inside_entries) / 2.0;
    if ((inside.done() && across.done()) || round + 1 == kMaxRounds) break;
  }
  return out;
}

}  // namespace gnnpipe::graph
