// CheckpointWriter (issue #39, item 1): checkpoints written on a thread of their own, coalesced
// under run.checkpoint_interval, flushed whole; and a run whose disk is slow trains on without it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "records/checkpoint_writer.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using experiments::CheckpointWriter;

namespace {

// 8 full-batch epochs, each due for a checkpoint (the tests set run.checkpoint_interval).
const char* kRun = R"(
name: cadence
dataset: {synthetic: {nodes: 600, avg_degree: 6, features: 12, classes: 3, seed: 4}}
model: {type: gcn, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: full}
optimizer: {type: adam, lr: 0.01}
run: {epochs: 8, seed: 3, checkpoint_every: 1}
)";

pipeline::CheckpointEvent event(int epoch, bool best, bool last) {
  pipeline::CheckpointEvent e;
  e.epoch = epoch;
  e.best = best;
  e.last = last;
  return e;
}

// A write that blocks until released, recording what it wrote ("b3" best of epoch 3, "l3" last).
struct Disk {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int entered = 0;
  std::vector<std::string> written;
  CheckpointWriter::Write write() {
    return [this](const pipeline::CheckpointEvent& e) {
      std::unique_lock lock(mutex);
      ++entered;
      changed.notify_all();
      changed.wait(lock, [this] { return open; });
      written.push_back((e.best ? "b" : "") + std::string(e.last ? "l" : "") + std::to_string(e.epoch));
    };
  }
  void wait_entered(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return entered >= n; });
  }
  void release() {
    const std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("checkpoint writer: a slow write makes newer states replace the waiting ones", "[checkpoint][tsan]") {
  Disk disk;
  CheckpointWriter writer(disk.write(), 3600);
  writer.submit(event(1, true, true));  // written at once: the first `last`
  disk.wait_entered(1);
  writer.submit(event(2, true, true));
  writer.submit(event(3, false, true));  // replaces nothing: epoch 2's best must still be written
  writer.submit(event(4, true, false));  // replaces nothing either (epoch 2 has a `last` too)
  writer.submit(event(5, true, true));   // replaces epochs 2, 3 and 4
  disk.release();
  writer.flush();  // does not wait out the interval
  CHECK(disk.written == std::vector<std::string>{"bl1", "bl5"});
  CHECK(writer.coalesced() == 3);
  CHECK(writer.written() == 2);
}

TEST_CASE("checkpoint writer: a `last` waits out the interval, a stop request's does not", "[checkpoint][tsan]") {
  Disk disk;
  disk.release();
  CheckpointWriter writer(disk.write(), 3600);
  writer.submit(event(1, false, true));
  writer.flush();
  writer.submit(event(2, false, true));
  writer.submit(event(3, true, false));  // a best is not held back by the interval, but by order
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    const std::lock_guard lock(disk.mutex);
    CHECK(disk.written == std::vector<std::string>{"l1"});  // epoch 2's `last` waits (an hour)
  }
  pipeline::CheckpointEvent stop = event(2, false, true);
  stop.partial = pipeline::PartialEpoch{};
  writer.submit(stop);  // replaces epoch 2's waiting `last`, and is written at once
  disk.wait_entered(3);
  writer.flush();
  CHECK(disk.written == std::vector<std::string>{"l1", "b3", "l2"});
}

TEST_CASE("checkpoint writer: it wants a `last` first, then once the interval passed and none waits", "[checkpoint][tsan]") {
  Disk disk;
  disk.release();
  CheckpointWriter writer(disk.write(), 3600);
  CHECK(writer.wants_last());  // none written yet
  writer.submit(event(1, false, true));
  writer.flush();
  CHECK_FALSE(writer.wants_last());  // an hour to go
  writer.submit(event(2, true, false));
  writer.flush();
  CHECK_FALSE(writer.wants_last());  // a best changes nothing
  CheckpointWriter every(disk.write(), 0);
  every.submit(event(1, false, true));
  every.flush();
  CHECK(every.wants_last());
  CHECK(writer.last_states() == 1);
}

TEST_CASE("checkpoints: a due epoch's state is taken only where it would be written", "[checkpoint][pipeline]") {
  const char* yaml = kRun;
  test::TempDir dir;
  for (const std::string mode : {"pipelined", "sequential"}) {
    INFO(mode);
    // An hour between writes: the first due epoch's state and the last epoch's are all it takes.
    const test::ExperimentRun run = test::run_experiment(yaml, {"pipeline.mode=" + mode, "run.checkpoint_interval=3600"}, dir.path() / mode);
    CHECK(run.summary.at("checkpoints").at("last_states") == 2);
    CHECK(experiments::read_checkpoint(dir.path() / mode / "checkpoints" / "last").epoch == 8);
    // With run.patience the run may stop at any evaluated epoch: every due epoch's state is taken.
    const test::ExperimentRun patient =
        test::run_experiment(yaml, {"pipeline.mode=" + mode, "run.checkpoint_interval=3600", "run.patience=100"},
                             dir.path() / (mode + "-patience"));
    CHECK(patient.summary.at("checkpoints").at("last_states") == 8);
  }
}

TEST_CASE("checkpoint writer: interval 0 writes every state in order, none dropped", "[checkpoint][tsan]") {
  Disk disk;
  CheckpointWriter writer(disk.write(), 0);
  for (int epoch = 1; epoch <= 4; ++epoch) writer.submit(event(epoch, epoch % 2 == 1, true));
  disk.release();
  writer.flush();
  CHECK(disk.written == std::vector<std::string>{"bl1", "l2", "bl3", "l4"});
  CHECK(writer.coalesced() == 0);
}

TEST_CASE("checkpoint writer: a failed write is the next submit's or flush's error", "[checkpoint][tsan]") {
  CheckpointWriter writer([](const pipeline::CheckpointEvent& e) {
    GNNPIPE_CHECK(e.epoch != 2, "checkpoints/last: fsync failed: No space left on device");
  }, 0);
  writer.submit(event(1, false, true));
  writer.submit(event(2, false, true));
  CHECK_THROWS_WITH(writer.flush(), Catch::Contains("No space left on device"));
  writer.submit(event(3, false, true));  // the error was reported once
  CHECK_NOTHROW(writer.flush());
}

TEST_CASE("checkpoints: training does not wait for a checkpoint file", "[checkpoint][pipeline][tsan]") {
  const char* yaml = kRun;
  for (const std::string mode : {"pipelined", "sequential"}) {
    INFO(mode);
    // The first checkpoint's write holds until the last epoch has trained: a run whose training
    // waited for it would never get there (the wait gives up after a minute and the check fails).
    std::mutex mutex;
    std::condition_variable changed;
    int trained = 0;
    std::atomic<bool> reached{false};
    bool first = true;
    experiments::TrainOptions options;
    options.fault = [&](pipeline::Stage stage, int epoch, int64_t) {
      if (stage != pipeline::Stage::kTrain) return;
      const std::lock_guard lock(mutex);
      trained = std::max(trained, epoch);
      changed.notify_all();
    };
    options.before_checkpoint_write = [&] {
      std::unique_lock lock(mutex);
      if (!std::exchange(first, false)) return;
      reached = changed.wait_for(lock, std::chrono::seconds(60), [&] { return trained == 8; });
    };
    test::TempDir dir;
    const test::ExperimentRun run = test::run_experiment(yaml, {"pipeline.mode=" + mode, "run.checkpoint_interval=0"}, dir.path() / mode, options);
    CHECK(reached);
    // Every checkpoint was written by the end: `last` holds the last epoch.
    const experiments::Checkpoint last = experiments::read_checkpoint(dir.path() / mode / "checkpoints" / "last");
    CHECK(last.epoch == 8);
    CHECK(run.summary.at("checkpoints").at("written").get<int64_t>() >= 2);
    // The writer's time is a stage of its own in the summary (and a lane of the trace).
    CHECK(run.summary.at("stage_busy_s").at("checkpoint").get<double>() > 0);
  }
}
