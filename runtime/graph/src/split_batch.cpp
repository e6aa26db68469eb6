#include "gnnpipe/graph/split_batch.hpp"

#include <algorithm>
#include <string>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph {
namespace {

// Parent-local id -> micro-batch local id, with the micro-batch's nodes (as parent-local ids) in
// micro order. Sized once per call to the parent's node count; reset() clears only the entries a
// micro-batch set, so a split costs what its micro-batches hold, not what the parent holds.
class LocalMap {
 public:
  explicit LocalMap(std::size_t parent_nodes) : micro_of_(parent_nodes, -1) {}

  // The micro id of parent-local node u, appending u the first time it is seen.
  NodeId add(NodeId u) {
    NodeId& slot = micro_of_[static_cast<std::size_t>(u)];
    if (slot < 0) {
      slot = static_cast<NodeId>(nodes_.size());
      nodes_.push_back(u);
    }
    return slot;
  }
  std::size_t size() const { return nodes_.size(); }
  NodeId parent_of(std::size_t micro) const { return nodes_[micro]; }

  void reset() {
    for (NodeId u : nodes_) micro_of_[static_cast<std::size_t>(u)] = -1;
    nodes_.clear();
  }

 private:
  std::vector<NodeId> micro_of_;
  std::vector<NodeId> nodes_;
};

// Which of the two batch forms (see split_batch.hpp), after checking what the split relies on.
enum class Form { kLayerWise, kShared };

Form check_batch(const MiniBatch& batch, std::size_t num_layers, int parts) {
  GNNPIPE_CHECK(parts >= 1, "split_batch: batch {}: parts must be >= 1, got {}", batch.index, parts);
  batch.layer_blocks(num_layers);  // throws on a block count that fits neither form
  GNNPIPE_CHECK(!batch.loss_rows.empty(), "split_batch: batch {} has no loss rows to split", batch.index);
  const Block& first = batch.blocks.front();
  const Block& last = batch.blocks.back();
  GNNPIPE_CHECK(batch.input_nodes.size() == static_cast<std::size_t>(first.num_src) &&
                    batch.targets.size() == static_cast<std::size_t>(last.num_dst),
                "split_batch: batch {}: {} input nodes and {} targets for blocks of {} sources and {} destinations",
                batch.index, batch.input_nodes.size(), batch.targets.size(), first.num_src, last.num_dst);
  for (std::size_t l = 0; l + 1 < batch.blocks.size(); ++l) {
    GNNPIPE_CHECK(batch.blocks[l].num_dst == batch.blocks[l + 1].num_src,
                  "split_batch: batch {}: block {} has {} destinations but block {} reads {} sources", batch.index, l,
                  batch.blocks[l].num_dst, l + 1, batch.blocks[l + 1].num_src);
  }
  GNNPIPE_CHECK(batch.loss_weights.empty() || batch.loss_weights.size() == batch.loss_rows.size(),
                "split_batch: batch {}: {} loss weights for {} loss rows", batch.index, batch.loss_weights.size(),
                batch.loss_rows.size());
  for (std::size_t i = 0; i < batch.loss_rows.size(); ++i) {
    const int32_t r = batch.loss_rows[i];
    GNNPIPE_CHECK(r >= 0 && r < last.num_dst && (i == 0 || r > batch.loss_rows[i - 1]),
                  "split_batch: batch {}: loss row {} at position {} is outside [0, {}) or not ascending", batch.index,
                  r, i, last.num_dst);
  }
  return batch.blocks.size() == 1 && first.num_dst == first.num_src ? Form::kShared : Form::kLayerWise;
}

// One micro-batch's blocks, built row by row; or only counted (Sink::kCount) for split_shapes.
enum class Sink { kBuild, kCount };

struct BlockRows {
  NodeId num_dst = 0;
  NodeId num_src = 0;
  EdgeOffset num_edges = 0;
  std::vector<EdgeOffset> offsets;
  std::vector<NodeId> indices;
  std::vector<float> weights;
};

// Starts an empty block (no rows yet).
void start_rows(Sink sink, BlockRows& out) {
  out.num_edges = 0;
  if (sink == Sink::kCount) return;
  out.offsets.assign(1, 0);
  out.indices.clear();
  out.weights.clear();
}

// Appends the rows of micro nodes [first, last): each node's row of `parent`, whole and in parent
// edge order, with weights copied and sources renumbered through `map` (which appends every
// source not seen before). kCount only counts edges and grows the map.
void append_rows(const Block& parent, LocalMap& map, std::size_t first, std::size_t last, Sink sink, BlockRows& out) {
  for (std::size_t p = first; p < last; ++p) {
    const auto v = static_cast<std::size_t>(map.parent_of(p));
    const auto begin = static_cast<std::size_t>(parent.offsets[v]);
    const auto end = static_cast<std::size_t>(parent.offsets[v + 1]);
    out.num_edges += static_cast<EdgeOffset>(end - begin);
    if (sink == Sink::kCount) {
      for (std::size_t e = begin; e < end; ++e) map.add(parent.indices[e]);
      continue;
    }
    for (std::size_t e = begin; e < end; ++e) out.indices.push_back(map.add(parent.indices[e]));
    if (parent.weighted()) {
      out.weights.insert(out.weights.end(), parent.weights.begin() + static_cast<std::ptrdiff_t>(begin),
                         parent.weights.begin() + static_cast<std::ptrdiff_t>(end));
    }
    out.offsets.push_back(static_cast<EdgeOffset>(out.indices.size()));
  }
}

// The loss rows [begin, end) of `parent` as micro-batch i of a split: blocks (or only their
// sizes), node ids and loss. `map` is empty on entry and on return.
struct Micro {
  std::vector<BlockRows> blocks;  // input side first
  MiniBatch batch;                // filled only for Sink::kBuild
};

Micro make_micro(const MiniBatch& parent, std::size_t num_layers, Form form, std::size_t begin, std::size_t end,
                 LocalMap& map, Sink sink, bool* identity_inputs = nullptr) {
  Micro m;
  for (std::size_t i = begin; i < end; ++i) map.add(parent.loss_rows[i]);  // micro targets first
  const auto num_targets = map.size();
  if (form == Form::kLayerWise) {
    // From the output side: block l's destinations are everything block l + 1 reads (all nodes so
    // far); their rows in block l bring in block l's remaining sources.
    m.blocks.resize(parent.blocks.size());
    for (std::size_t l = parent.blocks.size(); l-- > 0;) {
      BlockRows& b = m.blocks[l];
      start_rows(sink, b);
      b.num_dst = static_cast<NodeId>(map.size());
      append_rows(parent.blocks[l], map, 0, map.size(), sink, b);
      b.num_src = static_cast<NodeId>(map.size());
    }
  } else {
    // The map holds S_L (the loss nodes). Hop h = 1..L expands the nodes the hop before added (the
    // frontier), after which the map holds S_{L-h} with S_{L-h+1} as its expanded prefix. So after
    // L hops it holds S_0, and exactly S_1 has its rows, which came out in micro order.
    BlockRows& b = m.blocks.emplace_back();
    start_rows(sink, b);
    std::size_t expanded = 0;
    for (std::size_t hop = 0; hop < num_layers; ++hop) {
      const std::size_t frontier_end = map.size();
      append_rows(parent.blocks.front(), map, expanded, frontier_end, sink, b);
      expanded = frontier_end;
    }
    // S_0 \ S_1 (reached in the last hop, never expanded): empty rows.
    b.num_dst = b.num_src = static_cast<NodeId>(map.size());
    if (sink == Sink::kBuild) b.offsets.resize(map.size() + 1, static_cast<EdgeOffset>(b.indices.size()));
  }

  if (sink == Sink::kBuild) {
    MiniBatch& mb = m.batch;
    mb.epoch = parent.epoch;
    mb.index = parent.index;
    const std::string what = "micro-batch of batch " + std::to_string(parent.index);
    for (BlockRows& b : m.blocks) {
      mb.blocks.push_back(Block::from_csr(b.num_dst, b.num_src, HostArray<EdgeOffset>(std::move(b.offsets)),
                                          HostArray<NodeId>(std::move(b.indices)), HostArray<float>(std::move(b.weights)),
                                          what, Block::RowOrder::kKeep));
    }
    std::vector<NodeId> input(map.size());
    for (std::size_t p = 0; p < input.size(); ++p) {
      input[p] = parent.input_nodes[static_cast<std::size_t>(map.parent_of(p))];
    }
    mb.input_nodes = HostArray<NodeId>(std::move(input));
    if (form == Form::kShared) {
      mb.targets = mb.input_nodes;  // one shared array, as the subgraph samplers do
    } else {
      std::vector<NodeId> targets(num_targets);
      for (std::size_t p = 0; p < num_targets; ++p) targets[p] = parent.targets[static_cast<std::size_t>(map.parent_of(p))];
      mb.targets = HostArray<NodeId>(std::move(targets));
    }
    std::vector<int32_t> rows(num_targets);
    for (std::size_t p = 0; p < num_targets; ++p) rows[p] = static_cast<int32_t>(p);
    mb.loss_rows = HostArray<int32_t>(std::move(rows));
    if (parent.loss_weights.empty()) {
      // The parent's loss is the mean over its n loss rows: weight 1/n, so the parts sum to it.
      const auto w = static_cast<float>(1.0 / static_cast<double>(parent.loss_rows.size()));
      mb.loss_weights = HostArray<float>(std::vector<float>(num_targets, w));
    } else {
      mb.loss_weights = HostArray<float>(std::vector<float>(parent.loss_weights.begin() + static_cast<std::ptrdiff_t>(begin),
                                                            parent.loss_weights.begin() + static_cast<std::ptrdiff_t>(end)));
    }
    mb.compute_shape(parent.shape.feature_dim, num_layers);
  }
  if (identity_inputs != nullptr) {
    // Whether the micro-batch's input_nodes (global ids, in micro order) are 0..n-1 in order.
    bool identity = true;
    for (std::size_t p = 0; p < map.size() && identity; ++p) {
      identity = parent.input_nodes[static_cast<std::size_t>(map.parent_of(p))] == static_cast<NodeId>(p);
    }
    *identity_inputs = identity;
  }
  map.reset();
  return m;
}

// Micro-batch i of k takes loss rows [n * i / k, n * (i + 1) / k): sizes differ by at most one.
std::size_t part_begin(std::size_t n, std::size_t k, std::size_t i) { return n * i / k; }

std::size_t clamp_parts(const MiniBatch& batch, int parts) {
  return std::min(static_cast<std::size_t>(parts), batch.loss_rows.size());
}

}  // namespace

std::vector<MiniBatch> split_batch(const MiniBatch& batch, std::size_t num_layers, int parts) {
  const Form form = check_batch(batch, num_layers, parts);
  const std::size_t n = batch.loss_rows.size();
  const std::size_t k = clamp_parts(batch, parts);
  LocalMap map(batch.input_nodes.size());
  std::vector<MiniBatch> out;
  out.reserve(k);
  for (std::size_t i = 0; i < k; ++i) {
    out.push_back(
        std::move(make_micro(batch, num_layers, form, part_begin(n, k, i), part_begin(n, k, i + 1), map, Sink::kBuild).batch));
  }
  return out;
}

std::vector<MicroBatchSize> split_sizes(const MiniBatch& batch, std::size_t num_layers, int parts,
                                        const std::function<bool(const MicroBatchSize&)>& keep_going) {
  const Form form = check_batch(batch, num_layers, parts);
  const std::size_t n = batch.loss_rows.size();
  const std::size_t k = clamp_parts(batch, parts);
  LocalMap map(batch.input_nodes.size());
  std::vector<MicroBatchSize> out;
  out.reserve(k);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t begin = part_begin(n, k, i), end = part_begin(n, k, i + 1);
    MicroBatchSize& size = out.emplace_back();
    const Micro m = make_micro(batch, num_layers, form, begin, end, map, Sink::kCount, &size.identity_inputs);
    memory::BatchShape& s = size.shape;
    s.feature_dim = batch.shape.feature_dim;
    // As MiniBatch::compute_shape: per layer, a shared block listed once for every layer.
    for (std::size_t l = 0; l < num_layers; ++l) {
      const BlockRows& b = m.blocks[m.blocks.size() == 1 ? 0 : l];
      s.src_nodes.push_back(b.num_src);
      s.dst_nodes.push_back(b.num_dst);
      s.edges.push_back(b.num_edges);
    }
    for (const BlockRows& b : m.blocks) size.block_edges.push_back(b.num_edges);
    size.loss_rows = end - begin;
    size.targets = form == Form::kShared ? static_cast<std::size_t>(m.blocks.front().num_dst) : end - begin;
    if (keep_going && !keep_going(size)) break;
  }
  return out;
}

std::vector<memory::BatchShape> split_shapes(const MiniBatch& batch, std::size_t num_layers, int parts) {
  std::vector<memory::BatchShape> out;
  for (MicroBatchSize& s : split_sizes(batch, num_layers, parts)) out.push_back(std::move(s.shape));
  return out;
}

}  // namespace gnnpipe::graph
