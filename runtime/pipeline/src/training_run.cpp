// The public entry of a training run: the setup's checks, then the driver pipeline.mode names
// (pipelined_driver.cpp, sequential_driver.cpp); and plan_memory, the governor's plan without a run.
#include "gnnpipe/pipeline/training_run.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "memory_governor.hpp"
#include "run_driver.hpp"
#include "stages.hpp"

namespace gnnpipe::pipeline {
namespace {

using detail::Stages;
using samplers::BatchSpec;

void check_setup(const TrainingSetup& s) {
  GNNPIPE_CHECK_CONFIG(s.epochs >= 1, "run.epochs: must be >= 1, got {}", s.epochs);
  GNNPIPE_CHECK_CONFIG(s.first_epoch >= 1 && s.first_epoch <= s.epochs,
                       "run.epochs: {} epochs, and the run resumes after epoch {}: nothing left to train", s.epochs,
                       s.first_epoch - 1);
  GNNPIPE_CHECK_CONFIG(s.checkpoint_every >= 0, "run.checkpoint_every: must be >= 0, got {}", s.checkpoint_every);
  GNNPIPE_CHECK_CONFIG(s.pipeline.sampler_threads >= 1, "pipeline.sampler_threads: must be >= 1, got {}",
                       s.pipeline.sampler_threads);
  GNNPIPE_CHECK_CONFIG(s.pipeline.eval_every >= 1, "pipeline.eval_every: must be >= 1, got {}", s.pipeline.eval_every);
  GNNPIPE_CHECK_CONFIG(s.sampler.num_layers() == s.model.num_layers(), "the sampler builds batches for {} layers, the model has {}",
                       s.sampler.num_layers(), s.model.num_layers());
  if (s.data_parallel()) {
    // What data-parallel training does not do yet (issue #42): say so instead of training wrongly.
    GNNPIPE_CHECK_CONFIG(!s.model.context().device().is_cuda() || s.collective->sums_on_device(),
                         "run.device {}: {} ranks on GPUs sum through NCCL, and this job's collective sums host "
                         "memory only; use run.device: cpu",
                         s.model.context().device().str(), s.collective->size());
    GNNPIPE_CHECK_CONFIG(s.model.context().device().is_cuda() || !s.collective->sums_on_device(),
                         "an NCCL collective sums GPU memory, and run.device is {}", s.model.context().device().str());
    GNNPIPE_CHECK_CONFIG(!s.augment.enabled(), "augment.type mh: MH-Aug's chain is not shared between {} ranks yet; "
                                               "train it in one process",
                         s.collective->size());
    // A pipelined run decides an early stop on its evaluation thread while training goes on, so
    // the ranks could disagree on which steps run.
    GNNPIPE_CHECK_CONFIG(s.patience == 0 || s.pipeline.mode == PipelineMode::kSequential,
                         "run.patience {}: an early stop is not agreed between {} ranks in pipelined mode yet; use "
                         "pipeline.mode: sequential or run.patience: 0",
                         s.patience, s.collective->size());
  }
}

}  // namespace

RunResult run_training(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  check_setup(s);
  if (s.pipeline.mode == PipelineMode::kSequential) return detail::run_sequential(s, on_epoch);
  return detail::run_pipelined(s, on_epoch);
}

MemoryPlan plan_memory(const TrainingSetup& s) {
  check_setup(s);
  Stages stages(s);
  samplers::ParallelSampler sampler(s.sampler);
  MemoryPlan plan = stages.resident_plan();
  const std::vector<BatchSpec> specs = s.sampler.plan_epoch(1);
  plan.batches = static_cast<int64_t>(specs.size());
  const std::size_t window = static_cast<std::size_t>(std::max(1, s.pipeline.sampler_threads)) * 4;
  std::size_t largest_packed = 0;
  for (std::size_t begin = 0; begin < specs.size(); begin += window) {
    const std::size_t end = std::min(specs.size(), begin + window);
    std::vector<graph::MiniBatch> batches = sampler.sample(std::span<const BatchSpec>(specs).subspan(begin, end - begin));
    for (std::size_t i = 0; i < batches.size(); ++i) {
      if (batches[i].loss_rows.empty()) continue;
      largest_packed = std::max(largest_packed, stages.packed_bytes(batches[i]));
      const BatchSpec& spec = specs[begin + i];
      const auto redraw = [&](int attempt) {
        BatchSpec other = spec;
        other.attempt = attempt;
        return sampler.sample_one(other);
      };
      const detail::Admission a =
          stages.governor().admit(std::move(batches[i]), plan.batches, s.sampler.redraws(), redraw, stages.residency());
      plan.counters.add(detail::counters_of(a));
      plan.largest_batch_peak = std::max(plan.largest_batch_peak, a.predicted_total);
      plan.largest_split = std::max(plan.largest_split, static_cast<int>(a.parts.size()));
      plan.eval_whole = plan.eval_whole || a.whole_eval;
      if (a.layerwise) {
        plan.layerwise_chunks = std::max(plan.layerwise_chunks, a.layerwise->total_chunks());
        plan.layerwise_chunk_rows = std::max(plan.layerwise_chunk_rows, a.layerwise->chunk_rows);
        plan.layerwise_moved = std::max(plan.layerwise_moved, a.layerwise->moved_bytes);
        plan.layerwise_outputs = detail::to_string(a.layerwise->placement.outputs);
        plan.layerwise_inputs = detail::to_string(a.layerwise->placement.inputs);
      }
    }
  }
  plan.device_slots = stages.governor().slot_capacity_bound();
  // A kept full-graph batch evaluated in one piece raised evaluation's bound.
  plan.evaluation = stages.governor().setup().eval_bound;
  const graph::Dataset& d = s.data;
  plan.host_dataset = d.graph.offsets().size_bytes() + d.graph.indices().size_bytes() +
                      static_cast<std::size_t>(d.features.rows()) * d.features.bytes_per_row() +
                      d.labels.single.span().size_bytes();
  plan.staging_slots = stages.slots();
  plan.device_slot_count = stages.device_slot_count();
  plan.host_staging = static_cast<std::size_t>(stages.slots()) * (largest_packed + largest_packed / 8);
  plan.resident_batch = stages.may_keep_resident() && plan.batches == 1 && plan.counters.fit == 1 &&
                        plan.counters.split + plan.counters.cut + plan.counters.resampled == 0;
  return plan;
}

}  // namespace gnnpipe::pipeline
