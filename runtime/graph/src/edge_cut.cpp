#include "gnnpipe/graph/edge_cut.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::graph {
namespace {

using Range = tbb::blocked_range<std::size_t>;

// The cut's stream tag ("edge_cut" in ASCII), first in the key so no (epoch, batch, ...) key
// of the samplers or dropout can coincide with it.
constexpr uint64_t kCutTag = 0x656467655f637574ull;

// One removable edge in the ranking; ordered by score, then tie, then position (a total order).
struct Ranked {
  double score;
  uint64_t tie;
  int64_t pos;  // -1: a self-loop, dropped before sorting
  bool operator<(const Ranked& o) const {
    if (score != o.score) return score < o.score;
    if (tie != o.tie) return tie < o.tie;
    return pos < o.pos;
  }
};

// 64 random bits for position `pos`: the two 32-bit lanes at 2 * pos and 2 * pos + 1 of the stream.
uint64_t tie_of(const core::RngKey& key, int64_t pos) {
  const auto p = static_cast<uint64_t>(pos);
  const core::PhiloxCounter b = key.block(p >> 1);
  const unsigned lane = 2u * static_cast<unsigned>(p & 1u);
  return (static_cast<uint64_t>(b[lane]) << 32) | b[lane + 1];
}

// Sorts `v` by its total order: fixed-size runs sorted in parallel, then merged pairwise, each
// round in parallel, between two buffers. Every step is a parallel_for annotated for TSan (unlike
// tbb::parallel_sort, whose tasks hand elements over inside libtbb), and with a total order the
// result is unique, whatever the thread count.
void sort_ranked(std::vector<Ranked>& v) {
  constexpr std::size_t kRun = std::size_t{1} << 15;
  const std::size_t n = v.size();
  const std::size_t runs = (n + kRun - 1) / kRun;
  tbb::parallel_for(std::size_t{0}, runs, core::tsan::fork_join([&](std::size_t r) {
    std::sort(v.begin() + static_cast<std::ptrdiff_t>(r * kRun), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, (r + 1) * kRun)));
  }));
  if (runs <= 1) return;
  std::vector<Ranked> other(n);
  std::vector<Ranked>* from = &v;
  std::vector<Ranked>* to = &other;
  for (std::size_t width = kRun; width < n; width *= 2) {
    const std::size_t pairs = (n + 2 * width - 1) / (2 * width);
    tbb::parallel_for(std::size_t{0}, pairs, core::tsan::fork_join([&](std::size_t p) {
      const auto at = [&](std::size_t i) { return static_cast<std::ptrdiff_t>(std::min(n, i)); };
      const std::ptrdiff_t begin = at(p * 2 * width), middle = at(p * 2 * width + width), end = at((p + 1) * 2 * width);
      std::merge(from->begin() + begin, from->begin() + middle, from->begin() + middle, from->begin() + end,
                 to->begin() + begin);
    }));
    std::swap(from, to);
  }
  if (from != &v) v.swap(*from);
}

}  // namespace

core::RngKey cut_rng_key(uint64_t seed, int64_t epoch, int64_t batch) {
  return core::rng_key(seed, {kCutTag, static_cast<uint64_t>(epoch), static_cast<uint64_t>(batch)});
}

EdgeCutPlan::EdgeCutPlan(const MiniBatch& batch, const NodeScores& scores, const EdgeCutOptions& options)
    : batch_(&batch), weights_(options.weights) {
  const auto& blocks = batch.blocks;
  GNNPIPE_CHECK(!blocks.empty(), "edge cut: batch {} has no blocks", batch.index);
  num_layers_ = batch.shape.edges.empty() ? blocks.size() : batch.shape.edges.size();
  (void)batch.layer_blocks(num_layers_);  // throws unless one block per layer or one shared square block
  GNNPIPE_CHECK(batch.input_nodes.size() == static_cast<std::size_t>(blocks[0].num_src),
                "edge cut: batch {} has {} input nodes for {} sources of block 0", batch.index,
                batch.input_nodes.size(), blocks[0].num_src);
  for (std::size_t l = 0; l + 1 < blocks.size(); ++l) {
    GNNPIPE_CHECK(blocks[l].num_dst == blocks[l + 1].num_src,
                  "edge cut: batch {}: block {} has {} destinations but block {} has {} sources", batch.index, l,
                  blocks[l].num_dst, l + 1, blocks[l + 1].num_src);
  }
  const bool scored = node_value_of(scores.strategy) != CutNodeValue::kNone;
  const std::vector<double>* values = scores.values.get();
  if (scored) {
    GNNPIPE_CHECK(values != nullptr, "edge cut: strategy {} needs node values, none given", to_string(scores.strategy));
    for (const NodeId v : batch.input_nodes) {
      GNNPIPE_CHECK(v >= 0 && static_cast<std::size_t>(v) < values->size(),
                    "edge cut: node {} of batch {} has no value ({} values)", v, batch.index, values->size());
      const double x = (*values)[static_cast<std::size_t>(v)];
      GNNPIPE_CHECK(std::isfinite(x) && x > 0.0, "edge cut: node {} has value {} (must be finite and > 0)", v, x);
    }
  }

  block_start_.assign(blocks.size() + 1, 0);
  for (std::size_t b = 0; b < blocks.size(); ++b) block_start_[b + 1] = block_start_[b] + blocks[b].num_edges();

  // Score every edge in parallel (self-loops marked), drop the loops, sort by the total order.
  std::vector<Ranked> ranked(static_cast<std::size_t>(num_edges()));
  const NodeId* global = batch.input_nodes.data();
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Block& block = blocks[b];
    const int64_t start = block_start_[b];
    tbb::parallel_for(Range(0, static_cast<std::size_t>(block.num_dst), 512), core::tsan::fork_join([&](const Range& r) {
      for (std::size_t row = r.begin(); row < r.end(); ++row) {
        const NodeId v = global[row];
        for (auto e = block.offsets[row]; e < block.offsets[row + 1]; ++e) {
          const NodeId u = global[block.indices[static_cast<std::size_t>(e)]];
          const int64_t pos = start + e;
          Ranked& out = ranked[static_cast<std::size_t>(pos)];
          if (u == v) {
            out = {0.0, 0, -1};
          } else {
            const double score = scored ? edge_score(scores.strategy, (*values)[static_cast<std::size_t>(u)],
                                                     (*values)[static_cast<std::size_t>(v)])
                                        : 0.0;
            out = {score, tie_of(options.key, pos), pos};
          }
        }
      }
    }));
  }
  std::erase_if(ranked, [](const Ranked& x) { return x.pos < 0; });
  sort_ranked(ranked);

  order_.resize(ranked.size());
  rank_offsets_.assign(blocks.size() + 1, 0);
  auto block_of = [&](int64_t pos) {
    return static_cast<std::size_t>(std::upper_bound(block_start_.begin(), block_start_.end(), pos) - block_start_.begin() - 1);
  };
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    order_[i] = ranked[i].pos;
    ++rank_offsets_[block_of(ranked[i].pos) + 1];
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) rank_offsets_[b + 1] += rank_offsets_[b];
  block_ranks_.resize(order_.size());
  std::vector<int64_t> cursor(rank_offsets_.begin(), rank_offsets_.end() - 1);
  for (std::size_t i = 0; i < order_.size(); ++i) {
    block_ranks_[static_cast<std::size_t>(cursor[block_of(order_[i])]++)] = static_cast<int64_t>(i);
  }
}

int64_t EdgeCutPlan::removed_in_block(std::size_t block, int64_t count) const {
  const auto begin = block_ranks_.begin() + rank_offsets_[block];
  const auto end = block_ranks_.begin() + rank_offsets_[block + 1];
  return std::lower_bound(begin, end, std::min(count, removable_edges())) - begin;
}

std::vector<int64_t> EdgeCutPlan::block_edges_after(int64_t count) const {
  GNNPIPE_CHECK(count >= 0, "edge cut: cannot remove {} edges", count);
  std::vector<int64_t> edges(batch_->blocks.size());
  for (std::size_t b = 0; b < edges.size(); ++b) edges[b] = batch_->blocks[b].num_edges() - removed_in_block(b, count);
  return edges;
}

memory::BatchShape EdgeCutPlan::shape_after(int64_t count) const {
  const std::vector<int64_t> edges = block_edges_after(count);
  memory::BatchShape shape;
  shape.feature_dim = batch_->shape.feature_dim;
  const auto& blocks = batch_->blocks;
  for (std::size_t l = 0; l < num_layers_; ++l) {
    const std::size_t b = blocks.size() == 1 ? 0 : l;  // the layout MiniBatch::layer_blocks checked
    shape.src_nodes.push_back(blocks[b].num_src);
    shape.dst_nodes.push_back(blocks[b].num_dst);
    shape.edges.push_back(edges[b]);
  }
  return shape;
}

EdgeCut EdgeCutPlan::cut(int64_t count) const {
  GNNPIPE_CHECK(count >= 0, "edge cut: cannot remove {} edges", count);
  const MiniBatch& in = *batch_;
  const int64_t k = std::min(count, removable_edges());
  std::vector<uint8_t> removed(static_cast<std::size_t>(num_edges()), 0);
  for (int64_t i = 0; i < k; ++i) removed[static_cast<std::size_t>(order_[static_cast<std::size_t>(i)])] = 1;

  EdgeCut out;
  out.removed = k;
  MiniBatch& batch = out.batch;
  batch.epoch = in.epoch;
  batch.index = in.index;
  batch.input_nodes = in.input_nodes;
  batch.targets = in.targets;
  batch.loss_rows = in.loss_rows;
  batch.loss_weights = in.loss_weights;
  for (std::size_t b = 0; b < in.blocks.size(); ++b) {
    const Block& block = in.blocks[b];
    const int64_t gone = removed_in_block(b, k);
    if (gone == 0) {
      batch.blocks.push_back(block);  // shares the arrays
      continue;
    }
    const uint8_t* flag = removed.data() + block_start_[b];
    const auto nd = static_cast<std::size_t>(block.num_dst);
    const auto kept_edges = static_cast<std::size_t>(block.num_edges() - gone);
    HostArray<EdgeOffset> offsets(nd + 1);
    HostArray<NodeId> indices(kept_edges);
    HostArray<float> weights(block.weighted() ? kept_edges : 0);
    std::size_t next = 0;
    for (std::size_t row = 0; row < nd; ++row) {
      const std::size_t row_begin = next;
      for (auto e = block.offsets[row]; e < block.offsets[row + 1]; ++e) {
        const auto edge = static_cast<std::size_t>(e);
        if (flag[edge] != 0) continue;
        indices[next] = block.indices[edge];
        if (block.weighted()) weights[next] = block.weights[edge];
        ++next;
      }
      const auto length = static_cast<EdgeOffset>(next - row_begin);
      if (weights_ == CutWeights::kRowMean && block.weighted() && length < block.offsets[row + 1] - block.offsets[row]) {
        for (std::size_t e = row_begin; e < next; ++e) weights[e] = 1.0f / static_cast<float>(length);
      }
      offsets[row + 1] = static_cast<EdgeOffset>(next);
    }
    batch.blocks.push_back(Block::from_csr(block.num_dst, block.num_src, std::move(offsets), std::move(indices),
                                           std::move(weights), "cut block"));
  }
  batch.compute_shape(in.shape.feature_dim, num_layers_);
  return out;
}

EdgeCut cut_edges(const MiniBatch& batch, int64_t count, const NodeScores& scores, const EdgeCutOptions& options) {
  return EdgeCutPlan(batch, scores, options).cut(count);
}

}  // namespace gnnpipe::graph
