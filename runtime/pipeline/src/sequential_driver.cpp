// The sequential driver (pipeline.mode sequential): every stage of a batch in turn on the calling
// thread, synchronised, then the epoch's evaluation; the baseline the pipelined run must match
// bitwise.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "run_driver.hpp"

namespace gnnpipe::pipeline::detail {

using samplers::BatchSpec;

RunResult run_sequential(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  Stages stages(s);
  samplers::ParallelSampler sampler(s.sampler);
  EvalTracker tracker = make_tracker(s);
  std::vector<double> times;
  int epochs_run = 0;
  s.recorder.lane("sequential");
  const double begin = s.recorder.now();
  for (int epoch = s.first_epoch; epoch <= s.epochs; ++epoch) {
    const double start = s.recorder.now();
    const std::vector<BatchSpec> plan = s.sampler.plan_epoch(epoch);
    run_guarded(stages, fmt::format("stage augment, epoch {}: ", epoch), [&] { stages.prepare_augment(epoch); });
    for (std::size_t i = first_batch(s, epoch, plan.size()); i < plan.size(); ++i) {
      const BatchSpec& spec = plan[i];
      Item item;
      item.spec = spec;
      item.epoch = epoch;
      item.batches = static_cast<int64_t>(plan.size());
      item.slot = 0;
      item.device_slot = 0;
      // Each stage in turn, synchronised; a failure names its stage and batch like the pipeline's.
      const auto guarded = [&](Stage stage, auto&& fn) { return run_guarded(stages, context(stage, item), fn); };
      if (!stages.adopt_resident(item)) {
        graph::MiniBatch batch = guarded(Stage::kSample, [&] { return stages.sample(item, sampler); });
        guarded(Stage::kGather, [&] { stages.gather(item, std::move(batch)); });
      }
      if (item.loss_rows == 0) continue;
      guarded(Stage::kGovern, [&] { stages.govern(item, sampler); });
      guarded(Stage::kTransfer, [&] { stages.transfer(item); });
      if (const int signal = stop_signal(s)) {
        guarded(Stage::kTrain, [&] { stop_before(s, stages, tracker.state, item, signal); });
      }
      guarded(Stage::kTrain, [&] { stages.train(item); });
    }
    EpochResult r;
    r.epoch = epoch;
    r.loss = run_guarded(stages, fmt::format("stage train, end of epoch {}: ", epoch), [&] {
      stages.end_epoch_losses();
      stages.end_epoch_augment(epoch);
      const double t0 = s.recorder.begin(Stage::kMetrics, epoch, -1);
      const double loss = stages.epoch_loss();
      s.recorder.record(Stage::kMetrics, epoch, -1, t0, s.recorder.now());
      return loss;
    });
    r.memory = stages.take_epoch_counters(epoch);
    r.data = stages.take_epoch_movement(epoch);
    r.augment = stages.augment_counters(epoch);
    bool stop = false;
    std::shared_ptr<CheckpointEvent> due;
    if (evaluates(s, epoch)) {
      run_guarded(stages, fmt::format("stage eval, epoch {}: ", epoch), [&] {
        due = capture_checkpoint(s, stages, epoch);
        stages.snapshot();
        stages.evaluate(r);
      });
      stop = tracker.add(r);
    }
    r.window_begin_s = start;
    r.window_end_s = s.recorder.now();
    r.epoch_time_s = r.window_end_s - start;
    r.eval_time_s = s.recorder.totals(epoch).at(Stage::kEval).busy_s;
    r.window = s.recorder.window(start, r.window_end_s);
    r.verdict = epoch_verdict(r.window, false);
    s.recorder.forget(start, epoch);  // later epochs' windows begin after this one's
    times.push_back(r.epoch_time_s);
    epochs_run = epoch;
    const double report_begin = s.recorder.begin(Stage::kReport, epoch, -1);
    on_epoch(r);
    report_checkpoint(s, stages, tracker, r, std::move(due));
    s.recorder.record(Stage::kReport, epoch, -1, report_begin, s.recorder.now());
    if (stop) break;
  }
  stages.drain();
  RunResult result = finish(s, tracker, stages, epochs_run, std::move(times));
  result.span_s = s.recorder.now() - begin;
  add_predictor(result, stages);
  result.max_in_flight = 1;
  return result;
}

}  // namespace gnnpipe::pipeline::detail
