// Stage statistics by wall-time window (issue #16 item 1): an epoch's verdict counts what ran
// within its window, whatever epoch the work belonged to, so no share exceeds 100 %, and it names
// evaluation when evaluation is what the trainer waited for.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gnnpipe/pipeline/stage_stats.hpp"

using gnnpipe::pipeline::epoch_verdict;
using gnnpipe::pipeline::Stage;
using gnnpipe::pipeline::StageRecorder;
using gnnpipe::pipeline::WaitFor;

namespace {

// Runs `record` on a thread of its own that names its lane `name` (lanes are per thread).
void on_lane(StageRecorder& recorder, const char* name, const std::function<void()>& record) {
  std::thread t([&] {
    recorder.lane(name);
    record();
  });
  t.join();
}

// Epoch 2's window is [10, 20). The trainer trains two batches and waits for data around them;
// the evaluation of epoch 1 overlaps the window's first part and epoch 2's starts at its end; two
// sampler threads are already sampling epoch 3; epoch 2's first batch was sampled before 10.
void record_pipelined_epoch(StageRecorder& r) {
  on_lane(r, "train", [&] {
    r.record_wait(Stage::kTrain, 2, 8.0, 10.5);  // 0.5 s of it in the window
    r.record(Stage::kTrain, 2, 0, 10.5, 14.0);
    r.record_wait(Stage::kTrain, 2, 14.0, 15.0);
    r.record(Stage::kTrain, 2, 1, 15.0, 19.5);
  });
  on_lane(r, "eval", [&] {
    r.record(Stage::kEval, 1, -1, 9.0, 16.0);   // 6 s in the window
    r.record(Stage::kEval, 2, -1, 19.5, 25.0);  // 0.5 s in the window
  });
  on_lane(r, "sampler", [&] {
    r.record(Stage::kSample, 3, 0, 12.0, 18.0);
    r.record(Stage::kGather, 3, 0, 18.0, 19.0);
  });
  on_lane(r, "sampler", [&] { r.record(Stage::kSample, 2, 1, 5.0, 11.0); });  // 1 s in the window
  on_lane(r, "transfer", [&] { r.record(Stage::kTransfer, 2, 0, 9.9, 10.1); });
}

}  // namespace

TEST_CASE("stage statistics of a window count the overlap of every event with it", "[pipeline][stats]") {
  StageRecorder r;
  record_pipelined_epoch(r);
  const auto w = r.window(10.0, 20.0);
  CHECK(w.length_s == 10.0);
  CHECK(w.busy_s.at(Stage::kTrain) == Approx(8.0));
  CHECK(w.busy_s.at(Stage::kEval) == Approx(6.5));
  CHECK(w.busy_s.at(Stage::kSample) == Approx(7.0));
  CHECK(w.busy_s.at(Stage::kGather) == Approx(1.0));
  CHECK(w.busy_s.at(Stage::kTransfer) == Approx(0.1));
  CHECK(w.busy_s.at(Stage::kGovern) == 0.0);
  CHECK(w.lanes.at(Stage::kSample) == 2);
  CHECK(w.lanes.at(Stage::kGather) == 1);
  CHECK(w.train_wait_input_s == Approx(1.5));
  CHECK(w.train_wait_eval_s == 0.0);
  CHECK(w.eval_s_by_epoch.size() == 2);
  CHECK(w.eval_s_by_epoch.at(1) == Approx(6.0));
  CHECK(w.eval_s_by_epoch.at(2) == Approx(0.5));
  CHECK(w.share(Stage::kTrain) == Approx(80.0));
  CHECK(w.sampling_share() == Approx(40.0));  // 8 s of two threads' 20 s
  CHECK(w.share(Stage::kEval) == Approx(65.0));
  // By the epoch the items belong to, epoch 2's trainer waited 3.5 s, of which 2 s before the window.
  CHECK(r.totals(2).at(Stage::kTrain).wait_s == Approx(3.5));
  CHECK(r.totals(1).at(Stage::kEval).busy_s == Approx(7.0));
  // A window outside every event is all zeros.
  const auto empty = r.window(100.0, 110.0);
  CHECK(empty.share(Stage::kTrain) == 0.0);
  CHECK(empty.sampling_share() == 0.0);
}

TEST_CASE("the verdict of a pipelined epoch: shares of its window, the evaluations that overlapped it", "[pipeline][stats]") {
  StageRecorder r;
  record_pipelined_epoch(r);
  CHECK(epoch_verdict(r.window(10.0, 20.0), true) ==
        "bound by training: trainer 80% busy, trainer waited 15% of the epoch for data (sampler threads 40% busy); "
        "evaluation of epoch 1 60%, evaluation of epoch 2 5% of this epoch");
}

TEST_CASE("a trainer that waits for the evaluation is bound by evaluation, with no share above 100%", "[pipeline][stats]") {
  // A wide full-batch run: one short step per epoch, and the evaluation of the epoch before runs
  // much longer; the trainer waits for it before the next snapshot. Counted by epoch tags, the
  // wait (tagged epoch 2, 7 s) and the transfer of several epochs' batches would exceed the 3 s
  // epoch that the old verdict divided by.
  StageRecorder r;
  on_lane(r, "train", [&] {
    r.record_wait(Stage::kTrain, 2, 10.0, 17.0, WaitFor::kEvaluation);
    r.record(Stage::kTrain, 2, 0, 17.0, 20.0);
  });
  on_lane(r, "eval", [&] { r.record(Stage::kEval, 1, -1, 9.0, 17.0); });
  on_lane(r, "transfer", [&] {
    for (int e = 0; e < 5; ++e) r.record(Stage::kTransfer, 2, e, 10.0 + e, 11.0 + e);
  });
  const auto w = r.window(10.0, 20.0);
  for (Stage s : gnnpipe::pipeline::kStages) CHECK(w.share(s) <= 100.0);
  CHECK(w.share_of(w.train_wait_eval_s) == Approx(70.0));
  CHECK(epoch_verdict(w, true) ==
        "bound by evaluation: evaluation thread 70% busy, trainer 30% busy, trainer waited 0% of the epoch for data, "
        "70% for evaluation; evaluation of epoch 1 70% of this epoch");
  // The same events over a window too short for them are capped at 100 %.
  const auto inner = r.window(12.0, 13.0);
  CHECK(inner.share(Stage::kTransfer) == 100.0);
  CHECK(inner.share_of(inner.train_wait_eval_s) == 100.0);
}

TEST_CASE("a trainer waiting for data that no stage is busy producing is bound by data latency", "[pipeline][stats]") {
  // The trainer works 3 s of a 10 s epoch and waits 6 s for its batches, while the samplers, the
  // governor and the copy thread are each busy well under half of it.
  const auto epoch = [](double copy_s) {
    StageRecorder r;
    on_lane(r, "train", [&] {
      r.record_wait(Stage::kTrain, 1, 0.0, 6.0, WaitFor::kInput);
      r.record(Stage::kTrain, 1, 0, 6.0, 9.0);
    });
    on_lane(r, "sampler", [&] { r.record(Stage::kSample, 1, 0, 0.0, 1.0); });
    on_lane(r, "govern", [&] { r.record(Stage::kGovern, 1, 0, 1.0, 3.0); });
    on_lane(r, "transfer", [&] { r.record(Stage::kTransfer, 1, 0, 3.0, 3.0 + copy_s); });
    return epoch_verdict(r.window(0.0, 10.0), true);
  };
  CHECK(epoch(2.0) ==
        "bound by data latency: trainer waited 60% of the epoch for data, though no stage feeding it was half busy "
        "(sampler threads 10%, governor 20%, copy thread 20%, trainer 30%)");
  // A copy thread busy most of the epoch is the bound, as before.
  CHECK(epoch(6.0) == "bound by transfer: copy thread 60% busy, trainer waited 60% of the epoch for data");
}

TEST_CASE("the sequential verdict splits the epoch among its stages", "[pipeline][stats]") {
  StageRecorder r;
  on_lane(r, "sequential", [&] {
    r.record(Stage::kSample, 1, 0, 0.0, 1.0);
    r.record(Stage::kGather, 1, 0, 1.0, 2.0);
    r.record(Stage::kTransfer, 1, 0, 2.0, 2.5);
    r.record(Stage::kTrain, 1, 0, 2.5, 8.0);
    r.record(Stage::kEval, 1, -1, 8.0, 10.0);
  });
  CHECK(epoch_verdict(r.window(0.0, 10.0), false) ==
        "sequential: sampling 20%, transfer 5%, training 55%, evaluation 20% of the epoch");
}

// Issue #18 (soak): a 3,000-epoch run's recorder kept every event and grew about 10 KB an epoch.
TEST_CASE("forget() drops what no later window reads and folds old epochs into the run's totals",
          "[pipeline][stats]") {
  const auto totals_of = [](const StageRecorder& r) {
    std::vector<std::tuple<double, double, int64_t>> out;
    for (const auto& [stage, t] : r.totals()) out.emplace_back(t.busy_s, t.wait_s, t.items);
    return out;
  };
  for (const bool keep : {false, true}) {
    INFO("keep_events " << keep);
    StageRecorder r(keep), reference;
    for (StageRecorder* each : {&r, &reference}) {
      // Epoch 1's training, over by 3 s, then epoch 2 as above.
      on_lane(*each, "train", [&] {
        each->record_wait(Stage::kTrain, 1, 0.5, 1.0);
        each->record(Stage::kTrain, 1, 0, 1.0, 3.0);
      });
      on_lane(*each, "sampler", [&] { each->record(Stage::kSample, 1, 0, 0.0, 1.0); });
      record_pipelined_epoch(*each);
    }
    r.forget(10.0, 2);  // epoch 2's window begins at 10; epoch 1 is over
    // Epoch 2's window and every later one read as before; the run's totals are unchanged.
    for (const auto& [begin, end] : {std::pair{10.0, 20.0}, std::pair{12.0, 30.0}, std::pair{19.0, 26.0}}) {
      const auto a = r.window(begin, end), b = reference.window(begin, end);
      CHECK(a.busy_s == b.busy_s);
      CHECK(a.lanes == b.lanes);
      CHECK(a.train_wait_input_s == b.train_wait_input_s);
      CHECK(a.eval_s_by_epoch == b.eval_s_by_epoch);
    }
    CHECK(totals_of(r) == totals_of(reference));
    CHECK(r.totals(2).at(Stage::kTrain).wait_s == Approx(3.5));  // epoch 2 is kept
    CHECK(r.totals(1).at(Stage::kEval).busy_s == 0.0);           // epoch 1 was folded into the run's
    // What ended by 10 s (epoch 1's training and sampling) is gone from the windows before it,
    // unless the events are kept (a trace); what ended later stays.
    const auto before = r.window(0.0, 10.0);
    CHECK(before.busy_s.at(Stage::kTrain) == (keep ? 2.0 : 0.0));
    CHECK(before.busy_s.at(Stage::kSample) == (keep ? 6.0 : 5.0));  // epoch 2's batch 1 ends at 11: kept
    CHECK(before.train_wait_input_s == (keep ? 2.5 : 2.0));
    CHECK(before.busy_s.at(Stage::kEval) == 1.0);
  }
}

TEST_CASE("the checkpoint writer's busy time is said beside the verdict, never as the bound", "[pipeline][stats]") {
  // Training works 8 s of a 10 s epoch; the writer's thread writes for 9 s beside it.
  StageRecorder r;
  on_lane(r, "train", [&] { r.record(Stage::kTrain, 1, 0, 0.0, 8.0); });
  on_lane(r, "checkpoint", [&] { r.record(Stage::kCheckpoint, 1, -1, 1.0, 10.0); });
  const auto w = r.window(0.0, 10.0);
  CHECK(w.share(Stage::kCheckpoint) == Approx(90.0));
  CHECK(epoch_verdict(w, true) ==
        "bound by training: trainer 80% busy, trainer waited 0% of the epoch for data (sampler threads 0% busy); "
        "checkpoint writer 90% busy (its own thread)");
  CHECK(epoch_verdict(w, false) ==
        "sequential: sampling 0%, transfer 0%, training 80%, evaluation 0% of the epoch; checkpoint writer 90% busy "
        "(its own thread)");
  // A window the writer did not write in says nothing of it.
  StageRecorder quiet;
  on_lane(quiet, "train", [&] { quiet.record(Stage::kTrain, 1, 0, 0.0, 8.0); });
  CHECK(epoch_verdict(quiet.window(0.0, 10.0), true).find("checkpoint") == std::string::npos);
}

TEST_CASE("a trainer waiting on the evaluation thread's reporting is bound by it, and the verdict says so",
          "[pipeline][stats]") {
  // The evaluation thread evaluates 1 s and reports the epoch (its line, metrics row, checkpoint
  // hand-off) 5 s of a 10 s epoch; the trainer works 3 s and waits 6 s for that thread.
  StageRecorder r;
  on_lane(r, "train", [&] {
    r.record_wait(Stage::kTrain, 2, 0.0, 6.0, WaitFor::kEvaluation);
    r.record(Stage::kTrain, 2, 0, 6.0, 9.0);
  });
  on_lane(r, "eval", [&] {
    r.record(Stage::kEval, 1, -1, 0.0, 1.0);
    r.record(Stage::kReport, 1, -1, 1.0, 6.0);
  });
  CHECK(epoch_verdict(r.window(0.0, 10.0), true) ==
        "bound by evaluation: evaluation thread 60% busy (reporting epochs 50%), trainer 30% busy, trainer waited 0% of "
        "the epoch for data, 60% for evaluation; evaluation of epoch 1 10% of this epoch");
}

TEST_CASE("the evaluation thread's metrics (loss and scores) are a stage of their own, named in the verdict",
          "[pipeline][stats]") {
  // The evaluation thread evaluates 1 s, reduces the epoch's loss and scores 3 s and reports it 1 s
  // of a 10 s epoch; the trainer works 4 s and waits 5 s for that thread.
  StageRecorder r;
  on_lane(r, "train", [&] {
    r.record_wait(Stage::kTrain, 2, 0.0, 5.0, WaitFor::kEvaluation);
    r.record(Stage::kTrain, 2, 0, 5.0, 9.0);
  });
  on_lane(r, "eval", [&] {
    r.record(Stage::kEval, 1, -1, 0.0, 1.0);
    r.record(Stage::kMetrics, 1, -1, 1.0, 4.0);
    r.record(Stage::kReport, 1, -1, 4.0, 5.0);
  });
  const auto w = r.window(0.0, 10.0);
  CHECK(w.busy_s.at(Stage::kMetrics) == 3.0);
  CHECK(epoch_verdict(w, true) ==
        "bound by evaluation: evaluation thread 50% busy (metrics 30%, reporting epochs 10%), trainer 40% busy, trainer "
        "waited 0% of the epoch for data, 50% for evaluation; evaluation of epoch 1 10% of this epoch");
  CHECK(to_string(Stage::kMetrics) == "metrics");
}

TEST_CASE("a stage's CPU time is its thread's between begin() and record(), apart from its wall time", "[pipeline][stats]") {
  StageRecorder r;
  volatile double sink = 0;
  on_lane(r, "eval", [&] {
    // Spins until the thread has had 20 ms of CPU, then sleeps: the sleep is wall time only.
    const auto thread_cpu = [] {
      timespec t{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
    };
    const double t0 = r.begin(Stage::kEval, 1, -1);
    const double cpu0 = thread_cpu();
    while (thread_cpu() < cpu0 + 0.02) sink = sink + 1.0;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    r.record(Stage::kEval, 1, -1, t0, r.now());
    // An item recorded without a begin() has no CPU time; nor one whose begin() was another item's.
    r.record(Stage::kEval, 2, -1, r.now(), r.now());
    r.begin(Stage::kEval, 3, -1);
    r.record(Stage::kEval, 4, -1, r.now(), r.now());
  });
  const auto eval = r.totals(1).at(Stage::kEval);
  CHECK(eval.busy_s >= 0.08);
  CHECK(eval.cpu_s >= 0.02);               // the spin
  CHECK(eval.cpu_s < eval.busy_s - 0.05);  // not the sleep
  CHECK(r.totals(2).at(Stage::kEval).cpu_s == 0.0);
  CHECK(r.totals(4).at(Stage::kEval).cpu_s == 0.0);
  CHECK(r.totals().at(Stage::kEval).cpu_s == eval.cpu_s);
}
