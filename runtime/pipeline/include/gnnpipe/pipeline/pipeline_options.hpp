#pragma once
// The `pipeline:` section of an experiment (DESIGN §3, §5) as plain options with in-class defaults.
#include <string_view>

namespace gnnpipe::pipeline {

// kSequential is the baseline: the same stage functions called one after another on one thread.
enum class PipelineMode { kPipelined, kSequential };

struct PipelineOptions {
  PipelineMode mode = PipelineMode::kPipelined;
  int sampler_threads = 8;  // sample+gather threads, >= 1
  int staging_slots = 4;    // pinned staging slots = batches in flight, >= 1
  int eval_every = 1;       // evaluate every N epochs, >= 1
  // pipeline.resident (auto | off). auto: a sampler's fixed batch (Sampler::fixed_batch) that fits
  // unsplit is built, packed and copied in epoch 1 and stays on the device for the run; later
  // epochs skip its sample, gather, govern and transfer, and a full-graph batch is evaluated by an
  // eval-mode forward of it. off: every epoch moves its batch again (the baseline it is measured
  // against; same parameters bit for bit).
  bool resident = true;
};

constexpr std::string_view to_string(PipelineMode mode) {
  switch (mode) {
    case PipelineMode::kPipelined: return "pipelined";
    case PipelineMode::kSequential: return "sequential";
  }
  return "?";
}

}  // namespace gnnpipe::pipeline
