// MemoryGovernor's layer-wise admission (memory.policy layerwise, and split's fallback): the
// largest chunks of destination rows whose step fits (layerwise_step.hpp).
#include <algorithm>
#include <cmath>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/units.hpp"
#include "memory_governor.hpp"

namespace gnnpipe::pipeline::detail {

MemoryGovernor::Estimate MemoryGovernor::estimate_layerwise(const LayerwisePlan& plan, int64_t batches, bool trim) const {
  Estimate e;
  e.trim = trim;
  const std::size_t layers = s_.model.num_layers();
  const int64_t loss_chunks = plan.chunks.back();
  for (std::size_t l = 0; l < layers; ++l) {
    std::vector<std::size_t> needs = s_.model.layer_training_arrays(l, plan.largest[l]);
    const bool top = l + 1 == layers;
    // The train stage's arrays in estimate()'s positions: no input rows of its own (the step's), no
    // loss gradient (the step's output gradient holds it), the loss's per-row scratch, the epoch's
    // loss slots, the per-chunk losses and their sum's ones.
    needs.insert(needs.end(), 3, 0);
    needs.push_back(top ? plan.loss_rows * sizeof(double) : 0);
    needs.push_back(static_cast<std::size_t>(batches) * sizeof(double));
    const std::size_t split_bytes = loss_chunks > 1 ? static_cast<std::size_t>(loss_chunks) * sizeof(double) : 0;
    needs.push_back(split_bytes);
    needs.push_back(split_bytes);
    const std::vector<std::size_t> own = layerwise_arrays(s_.model, plan, l);
    needs.insert(needs.end(), own.begin(), own.end());
    needs.insert(needs.end(), augment_arrays(), 0);  // MH-Aug's (its batches never run layer-wise)
    e.needs.push_back(std::move(needs));
    e.nodes += plan.largest[l].num_src;
    e.edges += plan.largest[l].edges;
  }
  memory::GrowOnlyFootprint arrays = train_arrays_;
  if (trim) arrays.release_all_but(epoch_losses_position(e.needs.front()));
  e.analytical_train = static_cast<double>(s_.train_fixed + arrays.bytes_after_all(e.needs));
  // No fitted correction: the fit describes whole-batch steps (a layer-wise step is not observed).
  e.predicted_train = e.analytical_train;
  e.total = s_.resident_other + s_.eval_bound + slot_bound(0) + static_cast<std::size_t>(std::ceil(e.predicted_train));
  return e;
}

std::optional<MemoryGovernor::Estimate> MemoryGovernor::admissible_layerwise(const LayerwisePlan& plan, int64_t batches,
                                                                             Estimate* last) const {
  return admissible_by([&](bool trim) { return estimate_layerwise(plan, batches, trim); }, last);
}

std::optional<std::pair<LayerwisePlan, MemoryGovernor::Estimate>> MemoryGovernor::largest_chunks(
    const graph::MiniBatch& sampled, int64_t batches, LayerwisePlacement placement, std::size_t* least) const {
  int64_t widest = 0;
  for (const graph::Block* b : sampled.layer_blocks(s_.model.num_layers())) widest = std::max<int64_t>(widest, b->num_dst);
  // One row a chunk is the least a layer-wise step can need.
  Estimate smallest;
  LayerwisePlan plan = plan_chunks(s_.model, sampled, 1, true, placement);
  std::optional<Estimate> e = admissible_layerwise(plan, batches, &smallest);
  if (!e) {
    *least = smallest.total;
    return std::nullopt;
  }
  // The most rows a chunk by the bound (a chunk's sources counted as its destinations plus its
  // edges: O(chunks) a candidate), then doubled while the exact count (O(edges)) still fits.
  int64_t lo = 1, hi = widest;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (admissible_layerwise(plan_chunks(s_.model, sampled, mid, false, placement), batches)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  if (lo > 1) {
    LayerwisePlan bounded = plan_chunks(s_.model, sampled, lo, true, placement);
    if (std::optional<Estimate> be = admissible_layerwise(bounded, batches)) {  // exact <= the bound: it fits
      plan = std::move(bounded);
      e = std::move(be);
    }
  }
  int64_t too_wide = 0;  // the fewest rows found not to fit (0: none)
  while (plan.chunk_rows < widest) {
    const int64_t rows = std::min(widest, plan.chunk_rows * 2);
    LayerwisePlan wider = plan_chunks(s_.model, sampled, rows, true, placement);
    std::optional<Estimate> we = admissible_layerwise(wider, batches);
    if (!we) {
      too_wide = rows;
      break;
    }
    plan = std::move(wider);
    e = std::move(we);
  }
  // Between the widest that fits and the narrowest that does not, to within an eighth (a few more
  // exact counts: each O(edges), on every thread).
  while (too_wide > 0 && too_wide - plan.chunk_rows > std::max<int64_t>(1, plan.chunk_rows / 8)) {
    const int64_t rows = plan.chunk_rows + (too_wide - plan.chunk_rows) / 2;
    LayerwisePlan mid = plan_chunks(s_.model, sampled, rows, true, placement);
    if (std::optional<Estimate> me = admissible_layerwise(mid, batches)) {
      plan = std::move(mid);
      e = std::move(me);
    } else {
      too_wide = rows;
    }
  }
  return std::pair{std::move(plan), std::move(*e)};
}

std::vector<LayerwisePlacement> MemoryGovernor::layerwise_placements() const {
  // Layer 0's rows from the placed matrix where memory.features put it on the device (no array of
  // the step's), else the batch's rows gathered once a step.
  const bool placed = s_.feature_cols > 0 && s_.packed_feature_cols == 0;
  const bool is16 = s_.feature_dtype != graph::FeatureDType::kFloat32;
  const LayerInputs inputs = placed ? LayerInputs::kFeatures : LayerInputs::kDevice;
  const LayerwisePlacement first{LayerOutputs::kDevice, inputs, placed && is16};
  // By the bytes a step moves, least first: with the outputs on the device only chunks and ids
  // cross; one layer at a time moves each hidden output about four times a step; layer 0's rows
  // gathered on the host per chunk move most of the graph a chunk on a dense graph; host outputs
  // move every chunk's rows both ways.
  std::vector<LayerwisePlacement> order = {
      first,
      {LayerOutputs::kLayer, first.inputs, first.features16},
      {LayerOutputs::kDevice, LayerInputs::kHost, false},
      {LayerOutputs::kLayer, LayerInputs::kHost, false},
      {LayerOutputs::kHost, first.inputs, first.features16},
      {LayerOutputs::kHost, LayerInputs::kHost, false},
  };
  return order;
}

bool MemoryGovernor::try_layerwise(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t* least) {
  *least = 0;
  if (s_.model.has_embedding()) return false;
  const BatchKey key = key_of(sampled);
  int64_t widest = 0;
  for (const graph::Block* b : sampled.layer_blocks(s_.model.num_layers())) widest = std::max<int64_t>(widest, b->num_dst);
  if (widest == 0) return false;
  const auto admit_plan = [&](LayerwisePlan plan, Estimate e) {
    // The step runs on the sampled batch, which admit() keeps as the admission's one part.
    GNNPIPE_CHECK(a.parts.size() == 1 && &a.parts.front() == &sampled,
                  "layer-wise: batch {} is not the admission's one part", sampled.index);
    a.action = MemoryAction::kLayerwise;
    a.edges_removed = 0;
    admit_estimate(a, std::move(e));
    if (layerwise_memo_.size() >= kSplitMemoEntries) layerwise_memo_.clear();
    layerwise_memo_[key] = {plan.chunk_rows, plan.placement};
    core::logger().debug("memory: batch {} of epoch {} runs layer-wise: {} chunks of {} rows, outputs: {}, layer 0's "
                         "rows: {}, {} moved, predicted {}",
                         sampled.index, sampled.epoch, plan.total_chunks(), plan.chunk_rows,
                         to_string(plan.placement.outputs), to_string(plan.placement.inputs),
                         core::format_bytes(plan.moved_bytes), core::format_bytes(a.predicted_total));
    a.layerwise = std::move(plan);
    return true;
  };
  // Where this batch ran layer-wise before, its chunks come first.
  if (auto it = layerwise_memo_.find(key); it != layerwise_memo_.end()) {
    LayerwisePlan plan = plan_chunks(s_.model, sampled, it->second.first, true, it->second.second);
    if (std::optional<Estimate> e = admissible_layerwise(plan, batches)) return admit_plan(std::move(plan), std::move(*e));
  }
  // The first placement (least bytes moved) that leaves chunks of a useful size; else the one
  // that leaves the largest chunks.
  std::optional<std::pair<LayerwisePlan, Estimate>> widest_fit;
  for (const LayerwisePlacement& placement : layerwise_placements()) {
    std::size_t placement_least = 0;
    auto fit = largest_chunks(sampled, batches, placement, &placement_least);
    if (!fit) {
      if (*least == 0 || placement_least < *least) *least = placement_least;
      continue;
    }
    if (fit->first.chunk_rows >= std::min(widest, kMinDeviceChunkRows)) {
      return admit_plan(std::move(fit->first), std::move(fit->second));
    }
    if (!widest_fit || fit->first.chunk_rows > widest_fit->first.chunk_rows) widest_fit = std::move(fit);
  }
  if (widest_fit) return admit_plan(std::move(widest_fit->first), std::move(widest_fit->second));
  return false;
}

}  // namespace gnnpipe::pipeline::detail
