#include "stages.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <tuple>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

memory::CachingAllocator& allocator_of(const models::OpContext& ctx) {
  GNNPIPE_CHECK(ctx.allocator() != nullptr, "a training run needs an op context with an allocator (the memory budget)");
  return *ctx.allocator();
}

// One batch an epoch with the same nodes every epoch (a full batch, every Cluster-GCN part at once).
bool single_fixed_batch(const TrainingSetup& s) { return s.sampler.fixed_batch() && s.sampler.plan_epoch(1).size() == 1; }

bool may_be_resident(const TrainingSetup& s) {
  // An augmented batch's views change every epoch; a rank's share of a data-parallel batch is not
  // the whole graph that evaluation reads from a resident batch.
  return s.pipeline.resident && !s.augment.enabled() && !s.data_parallel() && single_fixed_batch(s);
}

}  // namespace

Stages::Stages(const TrainingSetup& s)
    : s_(s),
      device_(s.model.context().device()),
      resident_candidate_(may_be_resident(s)),
      train_ctx_(s.model.context()),
      train_stream_(train_ctx_.stream()),
      allocator_(allocator_of(train_ctx_)),
      copy_stream_(device_),
      counters_(allocator_),
      placement_(s, allocator_, copy_stream_, resident_candidate_, single_fixed_batch(s)),
      augmentation_(s.augment.enabled() ? std::make_unique<Augmentation>(s) : nullptr),
      evaluation_(s, allocator_, copy_stream_, counters_, placement_, resident_candidate_),
      batch_(s, allocator_, copy_stream_, counters_, placement_, resident_candidate_, augmentation_.get(),
             single_fixed_batch(s) && !s.data_parallel()) {
  // Epoch 1's first batches, sampled here once to plan the device slots and the feature placement
  // (a batch that may stay resident is the run's only one and has one slot: it is sampled only for
  // memory.features auto, which moves its features only where the batch fits beside them).
  const bool probe_resident = s.memory.features == memory::FeaturePlacement::kAuto && s.data.features.cols() > 0;
  const Probe probe = resident_candidate_ && !probe_resident ? Probe{} : sample_probe();
  std::size_t largest = 0;  // packed with every feature row: the most any placement packs
  for (const graph::MiniBatch& b : probe.batches) largest = std::max(largest, packed_bytes(b));
  batch_.plan_device_slots(largest);
  // Evaluation's reservation adapts to the budget before any batch is split or run layer-wise:
  // where the probed batches (packed with their features: the most any placement packs) do not
  // fit unsplit beside it, its chunks shrink until it takes at most a quarter of the budget.
  if (probe.batches.empty() ||
      !predict_probe(probe, s.data.features.cols(), false, evaluation_.bound()).has_value()) {
    evaluation_.fit_chunk(allocator_.budget() / 4);
  }
  // What stays resident for the run, in this order: each step measures what the ones before it
  // placed (the governor's predictions below ask the governor, they do not change it).
  placement_.place_features(probe, evaluation_.bound(), [&](int64_t packed_cols, bool gathers_on_device) {
    return predict_probe(probe, packed_cols, gathers_on_device, evaluation_.bound());
  });
  placement_.place_labels();
  evaluation_.place_eval_graph();
  evaluation_.choose_eval_outputs(probe, [&](std::size_t eval_bound) {
    return predict_probe(probe, placement_.packed_cols(), placement_.gathers_on_device(), eval_bound);
  });
  // What is resident now stays for the run; the governor predicts everything else. A kept
  // full-graph batch may be evaluated in one piece (the governor decides when it admits it).
  std::optional<std::size_t> whole_eval_bound;
  if (resident_candidate_ && s.sampler.full_graph_batch()) whole_eval_bound = evaluation_.whole_graph_bound();
  batch_.start_governing(governor_setup(placement_.packed_cols(), placement_.gathers_on_device(), evaluation_.bound()),
                         whole_eval_bound);
  // A run resumed mid-epoch: that epoch's losses and counts so far (after the governor measured
  // what is resident, as the uninterrupted run's loss slots came after it too).
  if (const PartialEpoch& p = s.resumed_partial; p.epoch > 0) {
    batch_.losses().resume(p.batches, p.losses, p.loss_rows);
    counters_.resume(p.epoch, p.counters);
  }
}

PartialEpoch Stages::partial_epoch(const Item& next) {
  PartialEpoch p;
  p.epoch = next.epoch;
  p.batches_done = next.spec.index;
  p.batches = next.batches;
  std::tie(p.losses, p.loss_rows) = batch_.losses().prefix(next.spec.index, next.batches);
  p.counters = counters_.epoch_so_far(next.epoch);
  return p;
}

Probe Stages::sample_probe() const {
  constexpr std::size_t kProbeBatches = 4;
  const std::vector<samplers::BatchSpec> specs = s_.sampler.plan_epoch(1);
  Probe p;
  p.per_epoch = static_cast<int64_t>(specs.size());
  const std::size_t n = std::min(specs.size(), kProbeBatches);
  if (n == 0) return p;
  samplers::ParallelSampler sampler(s_.sampler);
  p.batches = sampler.sample(std::span<const samplers::BatchSpec>(specs).first(n));
  std::erase_if(p.batches, [](const graph::MiniBatch& b) { return b.loss_rows.empty(); });
  return p;
}

GovernorSetup Stages::governor_setup(int64_t packed_feature_cols, bool gathers_on_device,
                                     std::size_t eval_bound) const {
  const std::size_t train_fixed = allocator_.in_use_bytes_on(train_stream_);
  const std::size_t resident = allocator_.stats().in_use_bytes;
  return GovernorSetup{s_.model, s_.data.features.cols(), s_.data.labels.num_classes, packed_feature_cols,
                       gathers_on_device, s_.data.features.dtype(), s_.memory, allocator_.budget(),
                       batch_.device_slot_count(), resident - train_fixed, train_fixed, eval_bound,
                       s_.cut_scores, s_.cut_weights, s_.seed,
                       s_.augment.enabled() ? std::optional(s_.augment) : std::nullopt};
}

std::optional<std::size_t> Stages::predict_probe(const Probe& probe, int64_t packed_feature_cols,
                                                 bool gathers_on_device, std::size_t eval_bound) const {
  const MemoryGovernor planner(governor_setup(packed_feature_cols, gathers_on_device, eval_bound));
  return planner.predict_unsplit(probe.batches, probe.per_epoch);
}

MemoryPlan Stages::resident_plan() const {
  MemoryPlan p;
  p.device = device_.str();
  p.budget = allocator_.budget();
  p.reserve = s_.reserve_bytes;
  p.limit = s_.memory.limit_bytes;
  p.free_at_start = s_.free_at_start;
  p.clamped = s_.budget_clamped;
  p.policy = std::string(memory::to_string(s_.memory.policy));
  p.parameters = s_.parameter_bytes;
  p.optimizer = s_.optimizer_bytes;
  p.library = train_ctx_.library_workspace_bytes() + evaluation_.library_workspace_bytes();
  evaluation_.describe(p);  // the twin, the eval graph, where layer outputs live
  const std::size_t counted = p.parameters + p.optimizer + p.library + p.eval_twin + p.eval_graph;
  const std::size_t in_use = allocator_.stats().in_use_bytes;
  p.other = in_use > counted ? in_use - counted : 0;
  p.evaluation = batch_.governor().setup().eval_bound;
  placement_.describe(p);
  return p;
}

void Stages::drain() {
  copy_stream_.synchronize();
  train_stream_.synchronize();
  evaluation_.stream().synchronize();
}

void Stages::drain_after_failure() noexcept {
  if (augmentation_) augmentation_->stop();
  for (const core::Stream* stream :
       std::initializer_list<const core::Stream*>{&copy_stream_, &train_stream_, &evaluation_.stream()}) {
    try {
      stream->synchronize();
    } catch (const std::exception& e) {
      core::logger().debug("after the run failed, waiting for a stream failed too: {}", e.what());
    }
  }
}

}  // namespace gnnpipe::pipeline::detail
