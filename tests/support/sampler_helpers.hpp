#pragma once
// Fixtures shared by the sampler and pipeline tests: seeded random graphs, a byte-level
// fingerprint of a mini-batch, and HostArray -> vector.
#include <bit>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "gnnpipe/core/rng.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/mini_batch.hpp"

namespace gnnpipe::test {

// `e` random (src, dst) pairs over `n` nodes: symmetrized, deduplicated, without self-loops; or,
// with `directed`, as drawn (unsymmetric, repeated edges and self-loops kept): samplers take any CsrGraph.
inline graph::CsrGraph random_graph(graph::NodeId n, std::size_t e, uint64_t seed, bool directed = false) {
  core::Rng rng(seed, {});
  std::vector<graph::NodeId> src, dst;
  for (std::size_t i = 0; i < e; ++i) {
    src.push_back(static_cast<graph::NodeId>(rng.below(static_cast<uint64_t>(n))));
    dst.push_back(static_cast<graph::NodeId>(rng.below(static_cast<uint64_t>(n))));
  }
  if (directed) return graph::CsrGraph::from_coo(n, src, dst);
  return graph::CsrGraph::from_coo(n, src, dst, {.symmetrize = true, .dedupe = true, .self_loops = graph::SelfLoops::kRemove});
}

// A hash of everything a mini-batch holds (weights bit for bit), for byte-identity checks.
inline uint64_t fingerprint(const graph::MiniBatch& b) {
  uint64_t h = 0;
  auto mix = [&](auto span) {
    for (auto x : span) h = core::splitmix64(h ^ static_cast<uint64_t>(x));
  };
  auto mix_floats = [&](std::span<const float> span) {
    for (float x : span) h = core::splitmix64(h ^ std::bit_cast<uint32_t>(x));
  };
  for (const auto& block : b.blocks) {
    mix(block.offsets.span());
    mix(block.indices.span());
    mix_floats(block.weights.span());
    mix(block.t_offsets.span());
    mix(block.t_indices.span());
    mix(block.t_edges.span());
  }
  mix(b.input_nodes.span());
  mix(b.targets.span());
  mix(b.loss_rows.span());
  mix_floats(b.loss_weights.span());
  return h;
}

// 0, 1, ..., n - 1.
inline std::vector<graph::NodeId> all_nodes(graph::NodeId n) {
  std::vector<graph::NodeId> v(static_cast<std::size_t>(n));
  for (graph::NodeId i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

template <class T>
std::vector<std::remove_const_t<T>> vec(const graph::HostArray<T>& a) {
  return {a.begin(), a.end()};
}

}  // namespace gnnpipe::test
