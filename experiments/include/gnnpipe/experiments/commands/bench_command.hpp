#pragma once
// `gnnpipe bench CONFIG`: the sequential baseline and the pipeline on the same config and seed
// (docs/DESIGN.md §3, §5). Each run gets its own run directory (DIR/sequential, DIR/pipelined); DIR also
// holds the resolved config.yaml, log.txt and bench.json: baseline_epoch_s, pipelined_epoch_s,
// speedup, bound_speedup, efficiency, the per-stage seconds per epoch of both runs, and whether
// both ended with bitwise-identical parameters. A table goes to `out`.
//
// The ideal bound is the pipeline formula of the seed experiments: with N batches per epoch and
// stage fractions f_s of the baseline epoch, the pipelined epoch takes at least
// 1/N + (N-1)/N * max_s f_s of it, so bound_speedup = 1 / that. Sampling is a stage of
// `sampler_threads` parallel workers (at most the machine's hardware threads), so its fraction is
// divided by that width; evaluation is a stage (the pipeline overlaps it with the next epoch).
// efficiency = speedup / bound_speedup.
#include <filesystem>
#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::experiments {

struct BenchBound {
  double fraction = 0;  // of the baseline epoch (pipeline_bound)
  double speedup = 0;   // 1 / fraction
  std::string bottleneck;
};

// The bound from the baseline's per-epoch stage seconds (sample, gather, transfer, train, eval),
// its epoch seconds (span per epoch), N batches per epoch, the sampling width and the baseline's
// last evaluation in seconds per epoch. The larger of two fractions of the baseline epoch:
//   every stage overlapped: 1/N + (N-1)/N * (the largest stage's seconds / epoch);
//   the last evaluation after the training: the training epochs pipelined (their share of the
//   epoch over N, plus (N-1)/N of the largest training stage) plus that evaluation, which starts
//   after the last step and so overlaps nothing (a run evaluating only at its end cannot hide it).
BenchBound pipeline_bound(const std::map<std::string, double>& stage_s, double epoch_s, double batches, int sampling_width,
                          double last_eval_s = 0);

// The least span per epoch a pipelined run's own serial threads allow (issue #39, item 3): the
// busier of its train thread and its evaluation thread, in busy seconds per epoch. Each thread's
// busy time lies within the run's span, so the span per epoch is never below it, and the bench's
// efficiency (speedup / (baseline epoch / floor) = floor / pipelined epoch) is at most 1.
double pipelined_floor(double train_s, double eval_s);

nlohmann::json run_bench(const config::ExperimentConfig& config, const graph::Dataset& dataset,
                         const std::filesystem::path& out_dir, std::ostream& out);

}  // namespace gnnpipe::experiments
