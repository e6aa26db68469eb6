#include "memory_governor.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "augmented_step.hpp"

namespace gnnpipe::pipeline::detail {
namespace {


// Micro-batch counts the split tries, smallest first: 2, 3, 4, 6, 8, 12, 16, ... and finally one
// micro-batch per loss row.
std::vector<int> split_candidates(std::size_t loss_rows) {
  std::vector<int> out;
  for (int64_t k = 2; k < static_cast<int64_t>(loss_rows); k = k % 3 == 0 ? k / 3 * 4 : k / 2 * 3) {
    out.push_back(static_cast<int>(k));
  }
  if (loss_rows >= 1) out.push_back(static_cast<int>(std::min<std::size_t>(loss_rows, 1u << 30)));
  return out;
}

}  // namespace

MemoryGovernor::BatchKey MemoryGovernor::key_of(const graph::MiniBatch& batch) {
  BatchKey k;
  k.inputs = batch.input_nodes.size();
  k.loss_rows = batch.loss_rows.size();
  for (const graph::Block& b : batch.blocks) k.edges += b.num_edges();
  if (k.inputs > 0) {
    k.first = batch.input_nodes[0];
    k.last = batch.input_nodes[k.inputs - 1];
  }
  return k;
}

MemoryCounters counters_of(const Admission& a) {
  MemoryCounters c;
  switch (a.action) {
    case MemoryAction::kFit: c.fit = 1; break;
    case MemoryAction::kSplit: c.split = 1; c.micro_batches = static_cast<int64_t>(a.parts.size()); break;
    case MemoryAction::kResample: c.resampled = 1; break;
    case MemoryAction::kCut: c.cut = 1; c.edges_cut = a.edges_removed; break;
    case MemoryAction::kLayerwise: c.layerwise = 1; c.chunks = a.layerwise ? a.layerwise->total_chunks() : 0; break;
  }
  c.augment_reforwarded = a.augment_keeps_aside ? 0 : 1;
  return c;
}

std::size_t MemoryGovernor::slot_bound(std::size_t slot) const {
  const std::size_t m = std::max(largest_slot_, slot);
  if (m == 0) return 0;
  return static_cast<std::size_t>(s_.device_slots) * memory::CachingAllocator::size_class(m + m / 8);
}

std::size_t MemoryGovernor::augment_arrays() const { return AugmentedStep::array_count(s_.model); }

std::size_t MemoryGovernor::epoch_losses_position(const std::vector<std::size_t>& needs) const {
  return needs.size() - 3 - kLayerwiseArrays - augment_arrays();
}

MemoryGovernor::PartSize MemoryGovernor::size_of(const graph::MiniBatch& part) const {
  std::vector<int64_t> edges;
  for (const graph::Block& b : part.blocks) edges.push_back(b.num_edges());
  return size_of(part, edges);
}

MemoryGovernor::PartSize MemoryGovernor::size_of(const graph::MiniBatch& part, std::span<const int64_t> block_edges) const {
  PartSize p;
  const graph::Block* first = part.blocks.data();
  for (const graph::Block* b : part.layer_blocks(s_.model.num_layers())) {
    p.shapes.push_back({b->num_dst, b->num_src, block_edges[static_cast<std::size_t>(b - first)]});
  }
  const BatchLayout layout = BatchLayout::of(part, s_.packed_feature_cols, block_edges, s_.feature_dtype);
  p.packed = layout.total_bytes;
  p.identity_rows = layout.identity_rows;
  p.loss_rows = part.loss_rows.size();
  p.nodes = static_cast<int64_t>(part.input_nodes.size());
  for (int64_t e : block_edges) p.edges += e;
  return p;
}

std::vector<MemoryGovernor::PartSize> MemoryGovernor::sizes_of(std::span<const graph::MiniBatch> parts) const {
  std::vector<PartSize> sizes;
  for (const graph::MiniBatch& part : parts) sizes.push_back(size_of(part));
  return sizes;
}

MemoryGovernor::Estimate MemoryGovernor::estimate(std::span<const PartSize> parts, int64_t batches, bool trim) const {
  Estimate e;
  e.trim = trim;
  for (const PartSize& part : parts) {
    std::vector<std::size_t> needs = s_.model.training_arrays(part.shapes, true);
    // The part's input rows assembled or widened on the device (input_placement.cpp, input_rows): float32
    // rows unless they are the device matrix itself, and 16-bit rows before widening.
    const bool wide = s_.feature_dtype == graph::FeatureDType::kFloat32;
    const auto values = static_cast<std::size_t>(part.nodes * s_.feature_cols);
    needs.push_back((s_.gathers_on_device && !(wide && part.identity_rows)) || !wide ? values * sizeof(float) : 0);
    needs.push_back(!wide && s_.gathers_on_device && !part.identity_rows ? values * sizeof(uint16_t) : 0);
    // The train stage's own arrays (batch_path.cpp): the loss gradient [targets x classes], the
    // loss's per-row scratch, the epoch's loss slots.
    needs.push_back(static_cast<std::size_t>(part.shapes.back().num_dst * s_.classes) * sizeof(float));
    needs.push_back(part.loss_rows * sizeof(double));
    needs.push_back(static_cast<std::size_t>(batches) * sizeof(double));
    // A split step's per-part losses and the ones that add them up (end_step).
    const std::size_t split_bytes = parts.size() > 1 ? parts.size() * sizeof(double) : 0;
    needs.push_back(split_bytes);
    needs.push_back(split_bytes);
    needs.insert(needs.end(), kLayerwiseArrays, 0);  // the layer-wise step's arrays (not used here)
    // MH-Aug's step (augmented_step.cpp).
    if (s_.augment) {
      const auto augment = AugmentedStep::arrays(s_.model, *s_.augment, part.nodes, s_.feature_cols, part.shapes,
                                                 s_.classes, part.keep_aside);
      GNNPIPE_CHECK(augment.size() == augment_arrays(), "MH-Aug: {} arrays, not {}", augment.size(), augment_arrays());
      needs.insert(needs.end(), augment.begin(), augment.end());
    } else {
      needs.insert(needs.end(), augment_arrays(), 0);
    }
    e.needs.push_back(std::move(needs));
    e.slot = std::max(e.slot, part.packed);
    e.nodes += part.nodes;
    e.edges += part.edges;
  }
  memory::GrowOnlyFootprint arrays = train_arrays_;
  if (trim) arrays.release_all_but(epoch_losses_position(e.needs.front()));
  e.analytical_train = static_cast<double>(s_.train_fixed + arrays.bytes_after_all(e.needs));
  {
    const std::lock_guard lock(predictor_mutex_);
    e.predicted_train = predictor_.predict(e.analytical_train, e.nodes, e.edges);
  }
  e.total = s_.resident_other + s_.eval_bound + slot_bound(e.slot) + static_cast<std::size_t>(std::ceil(e.predicted_train));
  return e;
}

std::optional<MemoryGovernor::Estimate> MemoryGovernor::admissible(std::span<const PartSize> parts, int64_t batches,
                                                                   Estimate* last) const {
  return admissible_by([&](bool trim) { return estimate(parts, batches, trim); }, last);
}

std::optional<MemoryGovernor::Estimate> MemoryGovernor::admissible_by(const std::function<Estimate(bool trim)>& estimate_of,
                                                                      Estimate* last) const {
  Estimate as_is = estimate_of(false);
  if (fits(as_is)) return as_is;
  Estimate trimmed = estimate_of(true);
  const bool smaller = trimmed.total < as_is.total;
  if (smaller && fits(trimmed)) return trimmed;
  if (last != nullptr) *last = smaller ? std::move(trimmed) : std::move(as_is);
  return std::nullopt;
}

std::optional<std::size_t> MemoryGovernor::predict_unsplit(std::span<const graph::MiniBatch> batches,
                                                           int64_t per_epoch) const {
  std::size_t most = 0;
  for (const graph::MiniBatch& batch : batches) {
    const std::vector<PartSize> parts{size_of(batch)};
    const std::optional<Estimate> e = admissible(parts, per_epoch);
    if (!e) return std::nullopt;
    most = std::max(most, e->total);
  }
  return most;
}

bool MemoryGovernor::try_raise_eval_bound(Admission& admitted, std::size_t bytes) {
  if (bytes <= s_.eval_bound) return true;
  Estimate e;
  e.total = admitted.predicted_total - std::min(admitted.predicted_total, s_.eval_bound) + bytes;
  if (!fits(e)) return false;
  s_.eval_bound = bytes;
  admitted.predicted_total = e.total;
  return true;
}

bool MemoryGovernor::fits(const Estimate& e) const {
  return static_cast<double>(e.total) / (1.0 - s_.options.tolerance) <= static_cast<double>(s_.budget);
}

void MemoryGovernor::admit_estimate(Admission& a, Estimate e) {
  a.predicted_total = e.total;
  a.analytical_train = e.analytical_train;
  a.predicted_train = e.predicted_train;
  a.nodes = e.nodes;
  a.edges = e.edges;
  a.trim = e.trim;
  if (e.trim) train_arrays_.release_all_but(epoch_losses_position(e.needs.front()));
  for (const auto& needs : e.needs) train_arrays_.grow(needs);
  largest_slot_ = std::max(largest_slot_, e.slot);
}

Admission MemoryGovernor::admit(graph::MiniBatch batch, int64_t batches, bool redraws,
                                const std::function<graph::MiniBatch(int attempt)>& redraw,
                                const Residency& residency) {
  Admission a;
  a.parts.push_back(std::move(batch));
  Estimate whole;
  std::vector<PartSize> sizes = sizes_of(a.parts);
  if (std::optional<Estimate> e = admissible(sizes, batches, &whole)) {
    admit_estimate(a, std::move(*e));
    // Only a batch admitted as it is stays resident; a kept full-graph batch is evaluated in one
    // piece when that fits next to it (its bound then replaces layer-wise inference's); else
    // evaluation stays layer-wise.
    a.keep_resident = residency.candidate;
    a.whole_eval = a.keep_resident && residency.whole_eval_bound.has_value() &&
                   try_raise_eval_bound(a, *residency.whole_eval_bound);
    return a;
  }
  if (s_.augment && s_.augment->kl > 0 && s_.model.can_keep_aside()) {
    // MH-Aug's step without its second set of activations (it forwards the new view again).
    for (PartSize& p : sizes) p.keep_aside = false;
    if (std::optional<Estimate> e = admissible(sizes, batches)) {
      admit_estimate(a, std::move(*e));
      a.augment_keeps_aside = false;
      return a;
    }
  }
  const graph::MiniBatch& sampled = a.parts.front();
  if (s_.options.policy == memory::MemoryPolicy::kResample && redraws && redraw) {
    for (int attempt = 1; attempt <= s_.options.max_tries; ++attempt) {
      std::vector<graph::MiniBatch> other;
      other.push_back(redraw(attempt));
      if (std::optional<Estimate> e = admissible(sizes_of(other), batches)) {
        a.action = MemoryAction::kResample;
        a.parts = std::move(other);
        admit_estimate(a, std::move(*e));
        return a;
      }
    }
    // No draw fit: the sampled batch is split rather than lost.
  }
  if (s_.options.policy == memory::MemoryPolicy::kLayerwise) {
    std::size_t least = 0;
    if (try_layerwise(a, sampled, batches, &least)) return a;
    GNNPIPE_CHECK_AS(OutOfBudget, least > 0,
                     "memory.policy: layerwise cannot run this model (model.embedding: the table is the input); use split");
    GNNPIPE_THROW(OutOfBudget,
                  "memory.limit: batch {} of epoch {} does not fit the budget of {} even one layer at a time in chunks of "
                  "one row (predicted {}); it fits from memory.limit {} under memory.policy layerwise",
                  sampled.index, sampled.epoch, core::format_bytes(s_.budget), core::format_bytes(least),
                  core::format_bytes(limit_for(least)));
  }
  std::size_t cut_least = 0;
  if (s_.options.policy == memory::MemoryPolicy::kCut && try_cut(a, sampled, batches, &cut_least)) return a;
  GNNPIPE_CHECK_AS(OutOfBudget, !sampled.loss_rows.empty(),
                   "memory.limit: batch {} of epoch {} needs {} (predicted) of a budget of {} and has no loss rows to "
                   "split by",
                   sampled.index, sampled.epoch, core::format_bytes(whole.total), core::format_bytes(s_.budget));
  split(a, sampled, batches, cut_least);
  return a;
}

std::size_t MemoryGovernor::limit_for(std::size_t total) const {
  const auto budget = static_cast<std::size_t>(std::ceil(static_cast<double>(total) / (1.0 - s_.options.tolerance)));
  const std::size_t reserve = s_.options.limit_bytes > s_.budget ? s_.options.limit_bytes - s_.budget : 0;
  return budget + reserve;
}

MemoryGovernor::PartSize MemoryGovernor::size_of(const graph::MiniBatch& parent, const graph::MicroBatchSize& m) const {
  const std::size_t layers = s_.model.num_layers();
  const bool shared = parent.blocks.size() == 1;
  PartSize p;
  PackedCounts counts;
  for (std::size_t l = 0; l < layers; ++l) p.shapes.push_back({m.shape.dst_nodes[l], m.shape.src_nodes[l], m.shape.edges[l]});
  for (std::size_t b = 0; b < m.block_edges.size(); ++b) {
    const std::size_t l = shared ? 0 : b;
    counts.blocks.push_back({m.shape.dst_nodes[l], m.shape.src_nodes[l], m.block_edges[b], parent.blocks[b].weighted()});
    p.edges += m.block_edges[b];
  }
  p.nodes = m.shape.src_nodes.front();
  counts.inputs = p.nodes;
  counts.targets = static_cast<int64_t>(m.targets);
  counts.loss_rows = counts.loss_weights = static_cast<int64_t>(m.loss_rows);
  p.packed = packed_bytes(counts, s_.packed_feature_cols, s_.feature_dtype);
  p.identity_rows = s_.packed_feature_cols == 0 && m.identity_inputs;
  p.loss_rows = m.loss_rows;
  return p;
}

std::vector<MemoryGovernor::PartSize> MemoryGovernor::split_estimate(const graph::MiniBatch& batch, int parts,
                                                                     int64_t batches, bool prune) const {
  std::vector<PartSize> out;
  // A split holds at least what any one of its parts holds alone (its prediction grows with every
  // part: grow-only arrays, the largest slot, summed nodes and edges while the fit is monotone),
  // so a part that does not fit alone rules the split out: stop counting there.
  const bool can_prune = prune && [&] {
    const std::lock_guard lock(predictor_mutex_);
    return predictor_.monotone();
  }();
  const auto keep_going = [&](const graph::MicroBatchSize& m) {
    out.push_back(size_of(batch, m));
    return !can_prune || admissible(std::span<const PartSize>(&out.back(), 1), batches).has_value();
  };
  graph::split_sizes(batch, s_.model.num_layers(), parts, keep_going);
  return out;
}

void MemoryGovernor::split(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t cut_least) {
  std::vector<int> candidates = split_candidates(sampled.loss_rows.size());
  const BatchKey key = key_of(sampled);
  if (auto it = split_memo_.find(key); it != split_memo_.end()) {
    // This batch was split before: try that count first (then the usual order).
    candidates.insert(candidates.begin(), it->second);
  }
  // Each candidate is sized before it is built (graph::split_sizes: one pass over its parts' edges,
  // no copies, stopping at the first part that cannot fit), so a split that does not fit costs no
  // micro-batches and, where one loss row's tree is most of the batch, about one part's edges. The
  // sizes are exact, so the chosen count is the one building every candidate would choose.
  Estimate last;
  int last_parts = 1;
  // Splitting stops helping when the trees of a few loss rows already cover most of the batch (a
  // dense graph, a full batch): a candidate with at least 4x the parts of an earlier one whose
  // largest part is still 9/10 as large, and half the batch's edges or more. The batch then runs
  // layer-wise where that fits; the search goes on only where it does not.
  int64_t batch_edges = 0;
  for (const graph::Block& b : sampled.blocks) batch_edges += b.num_edges();
  int reference_parts = 0;
  int64_t reference_edges = 0;
  bool tried_layerwise = false;
  std::size_t layerwise_least = 0;
  if (layerwise_memo_.contains(key)) {  // went layer-wise before: no split search again
    tried_layerwise = true;
    if (try_layerwise(a, sampled, batches, &layerwise_least)) return;
  }
  for (int parts : candidates) {
    const std::vector<PartSize> sized = split_estimate(sampled, parts, batches, true);
    if (std::optional<Estimate> e = admissible(sized, batches, &last)) {
      std::vector<graph::MiniBatch> micro = graph::split_batch(sampled, s_.model.num_layers(), parts);
      std::optional<Estimate> built = admissible(sizes_of(micro), batches);
      GNNPIPE_CHECK(built.has_value() && built->total == e->total,
                    "split: batch {} in {} micro-batches was sized at {} bytes before building, {} after", sampled.index,
                    parts, e->total, built ? built->total : 0);
      a.action = MemoryAction::kSplit;
      a.parts = std::move(micro);
      admit_estimate(a, std::move(*built));
      // Bounded: batches that never come back (neighbor samples) must not grow it for ever.
      if (split_memo_.size() >= kSplitMemoEntries) split_memo_.clear();
      split_memo_[key] = parts;
      return;
    }
    last_parts = parts;
    int64_t largest = 0;
    for (const PartSize& p : sized) largest = std::max(largest, p.edges);
    if (reference_parts == 0) {
      reference_parts = parts;
      reference_edges = largest;
    } else if (parts >= 4 * reference_parts) {
      if (!tried_layerwise && largest * 10 >= reference_edges * 9 && largest * 2 >= batch_edges) {
        tried_layerwise = true;
        if (try_layerwise(a, sampled, batches, &layerwise_least)) return;
      }
      reference_parts = parts;
      reference_edges = largest;
    }
  }
  if (!tried_layerwise && try_layerwise(a, sampled, batches, &layerwise_least)) return;
  // No split fits. The smallest workable budget: one micro-batch per loss row, every part of which
  // lies inside a part of any other split (a row's tree is inside the tree of every set holding
  // it), so no split needs less (up to the split's 16 bytes a part). Sized in full, once.
  const std::vector<PartSize> singles = split_estimate(sampled, static_cast<int>(sampled.loss_rows.size()), batches, false);
  Estimate least;
  admissible(singles, batches, &least);
  const auto largest = std::max_element(singles.begin(), singles.end(), [](const PartSize& x, const PartSize& y) {
    return std::pair(x.nodes, x.edges) < std::pair(y.nodes, y.edges);
  });
  std::size_t need = cut_least > 0 ? std::min(cut_least, least.total) : least.total;
  const bool layerwise_least_of_all = layerwise_least > 0 && layerwise_least < need;
  if (layerwise_least_of_all) need = layerwise_least;
  GNNPIPE_THROW(OutOfBudget,
                "memory.limit: batch {} of epoch {} does not fit the budget of {} even split into {} micro-batches "
                "(predicted {}: {} resident, {} for evaluation, {} of device slots); it fits from memory.limit {} under "
                "memory.policy {} (one micro-batch per loss row; its largest, one row's tree of {} nodes and {} edges, "
                "is what splitting cannot shrink)",
                sampled.index, sampled.epoch, core::format_bytes(s_.budget), last_parts, core::format_bytes(last.total),
                core::format_bytes(s_.resident_other + s_.train_fixed), core::format_bytes(s_.eval_bound),
                core::format_bytes(slot_bound(last.slot)), core::format_bytes(limit_for(need)),
                layerwise_least_of_all ? "split (run layer-wise)"
                : s_.options.policy == memory::MemoryPolicy::kCut ? "cut, then split" : "split",
                largest == singles.end() ? 0 : largest->nodes, largest == singles.end() ? 0 : largest->edges);
}

bool MemoryGovernor::try_cut(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t* least) {
  const graph::EdgeCutPlan plan(sampled, s_.cut_scores,
                                {graph::cut_rng_key(s_.seed, sampled.epoch, sampled.index), s_.cut_weights});
  // The search sizes each candidate from the plan's per-block edge counts (O(blocks log E)); only
  // the chosen cut is built.
  Estimate last;
  const auto admissible_cut = [&](int64_t count) {
    const PartSize size = size_of(sampled, plan.block_edges_after(count));
    return admissible(std::span<const PartSize>(&size, 1), batches, &last);
  };
  // Fewer removed edges never need less memory: binary search the fewest that fit.
  int64_t lo = 1, hi = plan.removable_edges();
  if (hi < 1 || !admissible_cut(hi)) {  // even all of them: split instead
    if (least != nullptr && hi >= 1) *least = last.total;
    return false;
  }
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (admissible_cut(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  graph::EdgeCut cut = plan.cut(lo);
  std::optional<Estimate> e = admissible(sizes_of(std::span<const graph::MiniBatch>(&cut.batch, 1)), batches);
  GNNPIPE_CHECK(e.has_value(), "cut: the batch without {} edges was sized to fit and does not", lo);
  std::vector<graph::MiniBatch> parts;
  parts.push_back(std::move(cut.batch));
  a.action = MemoryAction::kCut;
  a.edges_removed = cut.removed;
  a.parts = std::move(parts);
  admit_estimate(a, std::move(*e));
  return true;
}

void MemoryGovernor::observe(const Admission& admitted, std::size_t measured_train) {
  const std::lock_guard lock(predictor_mutex_);
  predictor_.observe(admitted.analytical_train, admitted.nodes, admitted.edges, admitted.predicted_train,
                     static_cast<double>(measured_train));
}

double MemoryGovernor::mape() const {
  const std::lock_guard lock(predictor_mutex_);
  return predictor_.mape();
}
double MemoryGovernor::max_error() const {
  const std::lock_guard lock(predictor_mutex_);
  return predictor_.max_error();
}
int64_t MemoryGovernor::observations() const {
  const std::lock_guard lock(predictor_mutex_);
  return predictor_.observations();
}

}  // namespace gnnpipe::pipeline::detail
