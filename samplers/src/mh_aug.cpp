#include "gnnpipe/samplers/mh_aug.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::samplers::mh {
namespace {

constexpr uint64_t kChainStream = 0x6d686175;   // "mhau": proposals
constexpr uint64_t kAcceptStream = 0x6d686163;  // "mhac": acceptance tests

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// Uniform in [0, 1) with 53 random bits.
double uniform01(DrawCursor& draws) {
  const uint64_t hi = draws.next_u32();
  const uint64_t bits = (hi << 32) | draws.next_u32();
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// Drops exactly `count` of [0, n) uniformly without replacement (Floyd's algorithm, the mask as
// its set): keep[i] = 0 for the dropped.
void drop_uniform(std::vector<uint8_t>& keep, int64_t count, DrawCursor& draws) {
  const auto n = static_cast<int64_t>(keep.size());
  for (int64_t j = n - count; j < n; ++j) {
    const int64_t t = draws.below(static_cast<uint32_t>(j + 1));
    keep[static_cast<std::size_t>(keep[static_cast<std::size_t>(t)] == 0 ? j : t)] = 0;
  }
}

}  // namespace

double log_truncated_normal(double x, double mu, double sigma) {
  const double z = (x - mu) / sigma;
  const double mass = normal_cdf((1.0 - mu) / sigma) - normal_cdf((0.0 - mu) / sigma);
  return -0.5 * z * z - 0.5 * std::log(2.0 * std::numbers::pi) - std::log(sigma) - std::log(mass);
}

double betaln(double a, double b) { return std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b); }

double sample_truncated_normal(double mu, double sigma, DrawCursor& draws) {
  GNNPIPE_CHECK(mu >= 0.0 && mu <= 1.0 && sigma > 0.0, "truncated normal around {} with sd {}", mu, sigma);
  for (;;) {
    // Box-Muller, one value per pair (draws stay positional within the proposal's range).
    const double u1 = 1.0 - uniform01(draws), u2 = uniform01(draws);
    const double x = mu + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    if (x >= 0.0 && x <= 1.0) return x;
  }
}

std::vector<double> aggregate(const graph::CsrGraph& graph, std::span<const double> x, std::span<const uint8_t> edge_keep, int k) {
  const auto offsets = graph.offsets();
  const auto indices = graph.indices();
  std::vector<double> y(x.begin(), x.end()), next(y.size());
  using Range = tbb::blocked_range<std::size_t>;
  for (int round = 0; round < k; ++round) {
    // Rows are independent and each sums in its CSR order: the same bits on any thread count.
    tbb::parallel_for(Range(0, y.size(), 2048), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        double sum = y[i];
        for (auto e = static_cast<std::size_t>(offsets[i]); e < static_cast<std::size_t>(offsets[i + 1]); ++e) {
          if (edge_keep.empty() || edge_keep[e] != 0) sum += y[static_cast<std::size_t>(indices[e])];
        }
        next[i] = sum;
      }
    }));
    y.swap(next);
  }
  return y;
}

MhMasks MhMasks::keep_all(int64_t m, int64_t n) {
  MhMasks masks;
  masks.edge_keep.assign(static_cast<std::size_t>(m), 1);
  masks.node_keep.assign(static_cast<std::size_t>(n), 1);
  return masks;
}

float feature_row_factor(const MhMasks& masks, int64_t i) {
  if (masks.node_keep[static_cast<std::size_t>(i)] == 0) return 0.0f;
  const auto n = static_cast<double>(masks.node_keep.size());
  return masks.nodes_masked == 0 ? 1.0f : static_cast<float>(n / (n - static_cast<double>(masks.nodes_masked)));
}

std::vector<float> masked_features(std::span<const float> features, int64_t cols, const MhMasks& masks) {
  const auto n = static_cast<int64_t>(masks.node_keep.size());
  GNNPIPE_CHECK_DATA(cols > 0 && features.size() == static_cast<std::size_t>(n * cols),
                     "MH-Aug: {} feature values for {} nodes of {} columns", features.size(), n, cols);
  std::vector<float> out(features.size());
  for (int64_t i = 0; i < n; ++i) {
    const float factor = feature_row_factor(masks, i);
    for (int64_t c = 0; c < cols; ++c) {
      const auto k = static_cast<std::size_t>(i * cols + c);
      out[k] = features[k] * factor;
    }
  }
  return out;
}

MhDeltas deltas(const graph::CsrGraph& graph, std::span<const double> ego, const MhMasks& masks, int k) {
  const std::vector<double> ones(ego.size(), 1.0);
  const std::vector<double> node_mask(masks.node_keep.begin(), masks.node_keep.end());
  const std::vector<double> kept_edges = aggregate(graph, ones, masks.edge_keep, k);
  const std::vector<double> kept_nodes = aggregate(graph, node_mask, {}, k);
  MhDeltas d;
  d.de.resize(ego.size());
  d.dv.resize(ego.size());
  for (std::size_t i = 0; i < ego.size(); ++i) {
    d.de[i] = 1.0 - kept_edges[i] / ego[i];
    d.dv[i] = 1.0 - kept_nodes[i] / ego[i];
  }
  return d;
}

std::vector<double> log_target_terms(const MhDeltas& d, std::span<const double> ent, const MhAugOptions& o) {
  GNNPIPE_CHECK(ent.size() == d.de.size(), "MH-Aug: {} uncertainties for {} nodes", ent.size(), d.de.size());
  std::vector<double> terms(ent.size());
  for (std::size_t i = 0; i < ent.size(); ++i) {
    const double se = o.a_e * ent[i] + o.b_e, sv = o.a_v * ent[i] + o.b_v;
    const double re = d.de[i] - o.mu_e, rv = d.dv[i] - o.mu_v;
    terms[i] = -o.lambda1_e * re * re / (2.0 * se * se) - o.lambda1_v * rv * rv / (2.0 * sv * sv);
  }
  return terms;
}

double log_target(const MhDeltas& d, std::span<const double> ent, const MhAugOptions& o) {
  double sum = 0;
  for (double t : log_target_terms(d, ent, o)) sum += t;
  return sum;
}

double log_proposal(double to_delta_e, double to_delta_v, double from_delta_e, double from_delta_v, double to_edges_dropped,
                    double to_nodes_masked, int64_t m, int64_t n, const MhAugOptions& o) {
  const auto md = static_cast<double>(m), nd = static_cast<double>(n);
  double q = log_truncated_normal(to_delta_e, from_delta_e, o.sigma_delta_e) +
             log_truncated_normal(to_delta_v, from_delta_v, o.sigma_delta_v);
  if (o.lambda2_e != 0) q += o.lambda2_e * betaln(md - to_edges_dropped + 1, to_edges_dropped + 1);
  if (o.lambda2_v != 0) q += o.lambda2_v * betaln(nd - to_nodes_masked + 1, to_nodes_masked + 1);
  return q;
}

MhChain::MhChain(const graph::CsrGraph& graph, MhAugOptions options)
    : graph_(graph), o_(options), m_(graph.num_edges()), n_(graph.num_nodes()) {
  GNNPIPE_CHECK_CONFIG(o_.k >= 1, "augment.k: must be >= 1, got {}", o_.k);
  GNNPIPE_CHECK_CONFIG(o_.sigma_delta_e > 0 && o_.sigma_delta_v > 0, "augment.sigma_delta: must be > 0, got {} / {}",
                       o_.sigma_delta_e, o_.sigma_delta_v);
  GNNPIPE_CHECK_DATA(m_ < (int64_t{1} << 32), "MH-Aug: the graph has {} entries; the chain draws among fewer than 2^32", m_);
  for (graph::NodeId v = 0; v < graph_.num_nodes(); ++v) {
    for (graph::NodeId u : graph_.in_neighbors(v)) {
      GNNPIPE_CHECK_DATA(u != v, "MH-Aug: node {} has a self-loop; strip self-loops (the aggregator adds one per node)", v);
    }
  }
  ego_ = aggregate(graph_, std::vector<double>(static_cast<std::size_t>(n_), 1.0), {}, o_.k);
  state_ = MhMasks::keep_all(m_, n_);
  state_deltas_ = deltas(graph_, ego_, state_, o_.k);
  key_ = core::rng_key(o_.seed, {kChainStream});
}

void MhChain::set_state(MhMasks masks) {
  GNNPIPE_CHECK_DATA(masks.edge_keep.size() == static_cast<std::size_t>(m_) && masks.node_keep.size() == static_cast<std::size_t>(n_),
                     "MH-Aug: a state of {} edge and {} node flags for a graph of {} entries and {} nodes", masks.edge_keep.size(),
                     masks.node_keep.size(), m_, n_);
  masks.edges_dropped = std::count(masks.edge_keep.begin(), masks.edge_keep.end(), uint8_t{0});
  masks.nodes_masked = std::count(masks.node_keep.begin(), masks.node_keep.end(), uint8_t{0});
  state_deltas_ = deltas(graph_, ego_, masks, o_.k);
  state_ = std::move(masks);
}

MhCandidate MhChain::propose(int64_t t) const {
  DrawCursor draws = DrawCursor::at(key_, static_cast<uint64_t>(t));
  MhCandidate c;
  c.delta_e = sample_truncated_normal(state_.delta_e(m_), o_.sigma_delta_e, draws);
  c.delta_v = sample_truncated_normal(state_.delta_v(n_), o_.sigma_delta_v, draws);
  c.masks = MhMasks::keep_all(m_, n_);
  c.masks.edges_dropped = static_cast<int64_t>(std::floor(static_cast<double>(m_) * c.delta_e));
  c.masks.nodes_masked = static_cast<int64_t>(std::floor(static_cast<double>(n_) * c.delta_v));
  drop_uniform(c.masks.edge_keep, c.masks.edges_dropped, draws);
  drop_uniform(c.masks.node_keep, c.masks.nodes_masked, draws);
  return c;
}

double MhChain::log_acceptance(const MhCandidate& c, const MhDeltas& cd, std::span<const double> ent) const {
  const double from_e = state_.delta_e(m_), from_v = state_.delta_v(n_);
  const double forward = log_proposal(c.delta_e, c.delta_v, from_e, from_v, static_cast<double>(m_) * c.delta_e,
                                      static_cast<double>(n_) * c.delta_v, m_, n_, o_);
  const double backward = log_proposal(from_e, from_v, c.delta_e, c.delta_v, static_cast<double>(state_.edges_dropped),
                                       static_cast<double>(state_.nodes_masked), m_, n_, o_);
  return log_target(cd, ent, o_) - log_target(state_deltas_, ent, o_) + backward - forward;
}

double MhChain::log_uniform(int64_t t) const {
  DrawCursor draws = DrawCursor::at(key_.with(kAcceptStream), static_cast<uint64_t>(t));
  return std::log(1.0 - uniform01(draws));  // u in (0, 1]
}

MhChain::Step MhChain::step(int64_t& t, std::span<const double> ent, int max_tries, AugmentAccept accept) {
  Step s;
  if (accept == AugmentAccept::kNever) return s;
  GNNPIPE_CHECK(ent.size() == static_cast<std::size_t>(n_), "MH-Aug: {} uncertainties for {} nodes", ent.size(), n_);
  while (s.tries < max_tries) {
    MhCandidate c = propose(t);
    MhDeltas cd = deltas(graph_, ego_, c.masks, o_.k);
    const bool take = accept == AugmentAccept::kAlways || log_uniform(t) < log_acceptance(c, cd, ent);
    ++t;
    ++s.tries;
    if (take) {
      state_ = std::move(c.masks);
      state_deltas_ = std::move(cd);
      s.accepted = true;
      break;
    }
  }
  return s;
}

}  // namespace gnnpipe::samplers::mh
