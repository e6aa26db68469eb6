#pragma once
// MH-Aug's chain (Park et al., NeurIPS 2021; issue #41), as ../shared/reference/MH-AUG.md
// specifies it from the official code: a state is an edge keep-mask over the graph's CSR entries
// (no self-loops: the aggregator adds one per node) and a node keep-mask; a proposal draws drop
// ratios from truncated normals around the state's realised ratios and drops exactly
// floor(m delta'_E) entries and masks floor(N delta'_V) nodes of the ORIGINAL graph; the target
// scores how far each node's ego-aggregate moved (Delta e, Delta v) against mu, with a spread that
// grows with the model's uncertainty (ent); Metropolis-Hastings accepts with log A (§2). This is the
// chain's math on the host (width-1 aggregates by plain loops over the CSR); the pipeline stage,
// the three views and the loss are issue #41's next steps.
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/augment_options.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"

namespace gnnpipe::samplers::mh {


// log of the normal density N(mu, sigma) truncated to [0, 1], at x (its normaliser included).
double log_truncated_normal(double x, double mu, double sigma);
// log B(a, b).
double betaln(double a, double b);
// A draw of N(mu, sigma) truncated to [0, 1] (rejection from the normal: mu in [0, 1] keeps at
// least about half the mass inside, so a handful of draws).
double sample_truncated_normal(double mu, double sigma, DrawCursor& draws);

// s(x; kept entries) = (A + I)^k x with (A x)_i = sum over kept j -> i of x_j; `edge_keep` empty
// keeps every entry.
std::vector<double> aggregate(const graph::CsrGraph& graph, std::span<const double> x, std::span<const uint8_t> edge_keep, int k);

// A state or a candidate: the keep-masks and what was dropped.
struct MhMasks {
  std::vector<uint8_t> edge_keep;  // per CSR entry
  std::vector<uint8_t> node_keep;  // per node
  int64_t edges_dropped = 0;
  int64_t nodes_masked = 0;
  double delta_e(int64_t m) const { return m > 0 ? static_cast<double>(edges_dropped) / static_cast<double>(m) : 0.0; }
  double delta_v(int64_t n) const { return n > 0 ? static_cast<double>(nodes_masked) / static_cast<double>(n) : 0.0; }
  static MhMasks keep_all(int64_t m, int64_t n);
};

// The factor a view multiplies node i's feature row by (MH-AUG.md §1.2): 0 for a masked node,
// else N / (N - c_V) (1 when nothing is masked), so the feature matrix keeps its expected sum. A
// gather applies it per row; masked_features() applies it to a whole [N x cols] matrix.
float feature_row_factor(const MhMasks& masks, int64_t i);
std::vector<float> masked_features(std::span<const float> features, int64_t cols, const MhMasks& masks);

// Per node: Delta e_i = 1 - s(1; kept edges)_i / ego_i and Delta v_i = 1 - s(node mask; all
// edges)_i / ego_i.
struct MhDeltas {
  std::vector<double> de, dv;
};
MhDeltas deltas(const graph::CsrGraph& graph, std::span<const double> ego, const MhMasks& masks, int k);

// sum_i log p_i: -lambda1 (Delta - mu)^2 / (2 sigma_i^2) for edges and nodes, sigma_i = a ent_i + b.
double log_target(const MhDeltas& d, std::span<const double> ent, const MhAugOptions& o);
// Per node (for tests and diagnostics).
std::vector<double> log_target_terms(const MhDeltas& d, std::span<const double> ent, const MhAugOptions& o);

// log q(to | from): the truncated normals of to's ratios around from's, plus lambda2 times the
// log-probability of one subset of `to_edges_dropped` of m entries (and of nodes): the candidate's
// continuous m delta', a state's integer count (MH-AUG.md §1.4).
double log_proposal(double to_delta_e, double to_delta_v, double from_delta_e, double from_delta_v, double to_edges_dropped,
                    double to_nodes_masked, int64_t m, int64_t n, const MhAugOptions& o);

// A proposal: the drawn ratios and the masks they give.
struct MhCandidate {
  double delta_e = 0, delta_v = 0;  // drawn (continuous)
  MhMasks masks;
};

// The chain over one graph (rows sorted or not; a self-loop entry is refused with a DataError
// naming it: strip them, the aggregator adds one per node). Proposal t draws from its own range of
// the chain's stream, so a chain is a function of (seed, the ent vectors it is given).
class MhChain {
 public:
  MhChain(const graph::CsrGraph& graph, MhAugOptions options);

  const MhMasks& state() const { return state_; }
  // Replaces the state (a resumed chain, tests); its deltas are recomputed. DataError when the
  // masks do not fit the graph.
  void set_state(MhMasks masks);
  const MhDeltas& state_deltas() const { return state_deltas_; }
  std::span<const double> ego() const { return ego_; }
  int64_t num_entries() const { return m_; }

  // Proposal number `t` from the state.
  MhCandidate propose(int64_t t) const;
  // log A of moving from the state to `c` (its deltas computed here) with uncertainties `ent`.
  double log_acceptance(const MhCandidate& c, const MhDeltas& cd, std::span<const double> ent) const;
  // Proposes (numbers t, t + 1, ...) until one is accepted or `max_tries` ran out; an accepted
  // candidate becomes the state. Returns the proposals made and whether one was accepted.
  struct Step {
    int tries = 0;
    bool accepted = false;
  };
  // `accept` forces the test for diagnostics: kAlways takes the first proposal, kNever makes
  // none (the state stays; tries 0).
  Step step(int64_t& t, std::span<const double> ent, int max_tries, AugmentAccept accept = AugmentAccept::kMh);
  // log u of proposal t's acceptance test.
  double log_uniform(int64_t t) const;

 private:
  const graph::CsrGraph& graph_;
  MhAugOptions o_;
  int64_t m_ = 0, n_ = 0;
  std::vector<double> ego_;
  MhMasks state_;
  MhDeltas state_deltas_;
  core::RngKey key_;
};

}  // namespace gnnpipe::samplers::mh
