// Watching a run (issue #16 item 2): the progress line's text and the stall watchdog, which names
// what each thread holds when no stage advanced for run.stall_timeout seconds.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "experiment_helpers.hpp"
#include "progress_line.hpp"
#include "stall_watchdog.hpp"
#include "temp_dir.hpp"

namespace ex = gnnpipe::experiments;
using gnnpipe::pipeline::Stage;

TEST_CASE("the progress line: epoch, batches, seeds/s, ETA and the bound", "[watch]") {
  CHECK(ex::progress_text(3, 200, 45, 90, 12345.4, 192, "bound by training") ==
        "epoch 3/200 [#####-----] 45/90 batches | 12345 seeds/s | ETA 3m12s | bound by training");
  CHECK(ex::progress_text(1, 2, 1, 1, 0, 5000, "") == "epoch 1/2 [##########] 1/1 batches | 0 seeds/s | ETA 1h23m");
  // Off (not a terminal): every call is a no-op.
  ex::ProgressLine off(10, false);
  off.step(1, 0, 4, 100);
  off.clear();
}

TEST_CASE("the stall message names each held item, oldest first", "[watch]") {
  gnnpipe::pipeline::StageRecorder recorder;
  CHECK_THAT(ex::describe_stall(recorder, 30), Catch::Contains("no thread holds an item"));
  std::thread train([&] {
    recorder.lane("train");
    recorder.begin(Stage::kTrain, 2, 3);
  });
  train.join();
  std::thread eval([&] {
    recorder.lane("eval");
    recorder.begin(Stage::kEval, 1, -1);
  });
  eval.join();
  const std::string message = ex::describe_stall(recorder, 612);
  CHECK_THAT(message, Catch::StartsWith("stalled: no stage advanced for 612 s (run.stall_timeout); train: batch 3 of epoch 2 "
                                        "(thread train) for "));
  CHECK_THAT(message, Catch::Contains("; eval: epoch 1 (thread eval) for "));
  // What the run's hand-offs hold follows, while the run has it set.
  recorder.set_hand_offs([] { return std::string("hand-offs: held"); });
  CHECK_THAT(ex::describe_stall(recorder, 612), Catch::EndsWith(" for 0 s; hand-offs: held"));
  recorder.set_hand_offs({});
  CHECK_THAT(ex::describe_stall(recorder, 612), !Catch::Contains("hand-offs"));
}

TEST_CASE("a run whose train step hangs is reported stalled, naming the step", "[watch][runner]") {
  gnnpipe::test::TempDir dir;
  std::mutex mutex;
  std::string stalled;
  ex::TrainOptions options;
  // Epoch 2's second step hangs for 1.5 s, three times run.stall_timeout.
  options.fault = [](Stage stage, int epoch, int64_t batch) {
    if (stage == Stage::kTrain && epoch == 2 && batch == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  };
  options.on_stall = [&](const std::string& message) {
    const std::lock_guard lock(mutex);
    stalled = message;
  };
  const char* yaml = R"(
name: hang
dataset: {synthetic: {nodes: 400, avg_degree: 6, features: 8, classes: 3, seed: 1}}
model: {type: sage, layers: 2, hidden: 8}
sampler: {type: neighbor, fanouts: [3, 3], batch_size: 100}
pipeline: {sampler_threads: 1, staging_slots: 2}
run: {epochs: 2, stall_timeout: 0.5}
)";
  gnnpipe::test::run_experiment(yaml, {}, dir / "hang", options);  // the test's action does not end it
  const std::lock_guard lock(mutex);
  CHECK_THAT(stalled, Catch::Contains("train: batch 1 of epoch 2"));
  // The pipelined run's hand-offs: the train thread holds the run's fifth batch (#4) and waits
  // for #5 next.
  CHECK_THAT(stalled, Catch::Contains("; hand-offs: ") && Catch::Contains("; train due #5, holds") &&
                          Catch::Contains(" of 2 free, device slots ") && Catch::Contains("; evaluation thread "));
  // A run that advances is never reported.
  stalled.clear();
  options.fault = {};
  gnnpipe::test::run_experiment(yaml, {}, dir / "fine", options);
  CHECK(stalled.empty());
}
