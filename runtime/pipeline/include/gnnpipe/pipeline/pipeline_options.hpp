#pragma once
// The `pipeline:` section of an experiment (docs/DESIGN.md §3, §5) as plain options with in-class defaults.
#include <string_view>

namespace gnnpipe::pipeline {

// kSequential is the baseline: the same stage functions called one after another on one thread.
enum class PipelineMode { kPipelined, kSequential };

// pipeline.eval_graph: how a sampled run evaluates (a full-batch run whose batch stays resident
// evaluates over that batch). kResident: the whole graph's full-neighbor block is packed and
// copied once and every evaluation runs one layer at a time over it on the device, with no host
// gather (an OutOfBudget naming the key when it does not fit); kLayerwise: chunks of
// eval_chunk_nodes destinations, their input rows gathered on the host, each evaluation;
// kLayerwiseDevice: the same chunks, but every layer's outputs stay on the device (two [nodes x
// widest output] arrays) and a hidden layer's chunk carries only its block and ids, its rows
// gathered there (LayerwiseInferenceOptions::device_outputs; an OutOfBudget naming the key when
// the arrays do not fit beside what is resident, training's batches split beside them as they
// must); kAuto: kResident when the block and the whole-graph arrays take at most a quarter of
// what the budget leaves (on the CPU backend too, except for data-parallel ranks, whose layer-wise
// evaluation is sharded), else kLayerwiseDevice on a GPU when its arrays leave the probed training
// batches unsplit, else kLayerwise.
enum class EvalGraph { kAuto, kResident, kLayerwise, kLayerwiseDevice };

// The score an evaluation reports as the run's (run.metric): best epoch and early stopping follow
// it. auto: accuracy for single-label data, micro-F1 at threshold 0.5 for multi-label data; the
// F1 variants (multi-label only): macro-F1, and both with each node's true number of labels as its
// top-k prediction (the DeepWalk protocol).
enum class Score { kAuto, kAccuracy, kMicroF1, kMacroF1, kMicroF1TopK, kMacroF1TopK };

struct PipelineOptions {
  PipelineMode mode = PipelineMode::kPipelined;
  // sample+gather threads, >= 1 for a run; 0 in a config means auto (pipeline.sampler_threads:
  // auto, the default), which the experiment layer resolves from the usable CPUs before a run.
  int sampler_threads = 0;
  int staging_slots = 4;    // pinned staging slots = batches in flight, >= 1
  // Threads evaluation's CPU work runs on, in an arena of its own, in both modes (issue #39 item
  // 3: the sequential baseline's evaluation gets the resources the pipelined run's has, so the
  // modes' stages compare). 0: the shared arena (auto on a GPU, whose evaluation is the device's
  // work); -1 in a config means auto (pipeline.eval_threads), resolved by the experiment layer.
  int eval_threads = -1;
  int eval_every = 1;       // evaluate every N epochs, >= 1
  // pipeline.resident (auto | off). auto: a sampler's fixed batch (Sampler::fixed_batch) that fits
  // unsplit is built, packed and copied in epoch 1 and stays on the device for the run; later
  // epochs skip its sample, gather, govern and transfer, and a full-graph batch is evaluated by an
  // eval-mode forward of it. off: every epoch moves its batch again (the baseline it is measured
  // against; same parameters bit for bit).
  bool resident = true;
  EvalGraph eval_graph = EvalGraph::kAuto;
  // pipeline.eval_cache: host bytes of layer-wise evaluation's sampled chunks (their blocks and
  // ids) the run may keep, so that later layers and later evaluations reuse them instead of
  // sampling and transposing them again (LayerwiseInferenceOptions::cache_bytes); 0: off. -1
  // (auto): a quarter of the machine's physical memory on a GPU, whose host memory is not the
  // budget's; off on the CPU backend, where host memory is the device's and layer-wise evaluation
  // was chosen because the budget is tight.
  int64_t eval_cache = -1;
  // pipeline.stage_retries: how many more times a stage (sample, gather, govern, transfer, train,
  // eval) runs for an item after an error that running it again may not repeat (detail::
  // may_succeed_again: not a config, data, device, budget or stop error). Every stage is a
  // function of (seed, epoch, batch) and a train step is retried only before the optimizer
  // updates the parameters, so a recovered run's parameters are bitwise those of an unfaulted one.
  // Each retry is logged and counted (metrics.csv and summary.json `stage_retries`); 0: the first
  // error stops the run.
  int stage_retries = 2;
  // The run's score (from run.metric; the experiment layer resolves auto from the labels).
  Score score = Score::kAuto;

  bool operator==(const PipelineOptions&) const = default;
};

constexpr std::string_view to_string(PipelineMode mode) {
  switch (mode) {
    case PipelineMode::kPipelined: return "pipelined";
    case PipelineMode::kSequential: return "sequential";
  }
  return "?";
}

constexpr std::string_view to_string(Score s) {
  switch (s) {
    case Score::kAuto: return "auto";
    case Score::kAccuracy: return "accuracy";
    case Score::kMicroF1: return "micro_f1";
    case Score::kMacroF1: return "macro_f1";
    case Score::kMicroF1TopK: return "micro_f1_topk";
    case Score::kMacroF1TopK: return "macro_f1_topk";
  }
  return "?";
}

constexpr std::string_view to_string(EvalGraph g) {
  switch (g) {
    case EvalGraph::kAuto: return "auto";
    case EvalGraph::kResident: return "resident";
    case EvalGraph::kLayerwise: return "layerwise";
    case EvalGraph::kLayerwiseDevice: return "layerwise_device";
  }
  return "?";
}

}  // namespace gnnpipe::pipeline
