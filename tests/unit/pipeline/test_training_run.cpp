// The pipelined runtime against its sequential baseline, through the runner (docs/DESIGN.md §3).
#include <catch2/catch.hpp>

#include <tbb/global_control.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/simulated_fault.hpp"
#include "gnnpipe/experiments/commands/bench_command.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "datasets.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
using namespace gnnpipe::experiments;

namespace {

const char* kSampled = R"(
name: pipe
dataset: {synthetic: {nodes: 800, avg_degree: 6, features: 8, classes: 3, seed: 2, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 50}
optimizer: {type: adam, lr: 0.01}
run: {epochs: 6, seed: 7}
)";

using Run = test::ExperimentRun;

Run train(const std::vector<std::string>& sets, const test::TempDir& dir, const std::string& sub, TrainOptions options = {}) {
  return test::run_experiment(kSampled, sets, dir / sub, options);
}

// (status, error) of the summary.json that a run that did not finish left in `run_dir`.
std::pair<std::string, std::string> stopped_summary(const std::filesystem::path& run_dir) {
  const nlohmann::json s = nlohmann::json::parse(test::read_file(run_dir / "summary.json"));
  return {s.at("status").get<std::string>(), s.at("error").get<std::string>()};
}

}  // namespace

// Back in the TSan run (issue #19): the divergence seen there about one run in fifteen was batches
// reaching the train stage out of order (two join outputs forwarded by two tasks in either order),
// which the GPU showed about one run in two; DedicatedStage now works items in run order.
TEST_CASE("pipelined and sequential runs give identical parameters and per-epoch metrics", "[pipeline][tsan]") {
  test::TempDir dir;
  const Run base = train({"pipeline.mode=sequential"}, dir, "seq");
  CHECK(base.summary["mode"] == "sequential");
  CHECK(base.summary["test_accuracy"].get<double>() >= 0.84375 - 0.04);  // reached on the dev VM (160 test nodes)
  for (int threads : {1, 2, 8}) {
    for (int slots : {1, 3}) {
      INFO("sampler_threads " << threads << ", staging_slots " << slots);
      const Run p = train({"pipeline.sampler_threads=" + std::to_string(threads), "pipeline.staging_slots=" + std::to_string(slots)},
                          dir, "p" + std::to_string(threads) + std::to_string(slots));
      CHECK(p.summary["mode"] == "pipelined");
      CHECK(p.summary["params_checksum"] == base.summary["params_checksum"]);
      // Each epoch's evaluation saw exactly the parameters at the end of that epoch.
      CHECK(test::metrics_without_times(p.metrics) == test::metrics_without_times(base.metrics));
      CHECK(p.summary["max_batches_in_flight"].get<int>() <= slots);
      CHECK(p.summary["max_batches_in_flight"].get<int>() >= 1);
    }
  }
  // Other samplers through the same stages.
  const Run full_seq = train({"pipeline.mode=sequential", "sampler={type: full}"}, dir, "fs");
  CHECK(train({"sampler={type: full}"}, dir, "fp").summary["params_checksum"] == full_seq.summary["params_checksum"]);
}

TEST_CASE("batches reach the trainer in plan order and in-flight batches never exceed the slots", "[pipeline][tsan]") {
  test::TempDir dir;
  std::mutex mutex;
  std::vector<std::pair<int, int64_t>> trained;
  TrainOptions options;
  options.fault = [&](pipeline::Stage stage, int epoch, int64_t batch) {
    if (stage != pipeline::Stage::kTrain) return;
    std::lock_guard lock(mutex);
    trained.emplace_back(epoch, batch);
  };
  const Run r = train({"pipeline.sampler_threads=4", "pipeline.staging_slots=2", "run.epochs=3"}, dir, "o", options);
  REQUIRE(trained.size() == 3 * 10);  // 480 train nodes (60%) / 50 per batch = 10 batches per epoch
  for (std::size_t i = 0; i < trained.size(); ++i) {
    CHECK(trained[i] == std::make_pair(static_cast<int>(i / 10) + 1, static_cast<int64_t>(i % 10)));
  }
  CHECK(r.summary["max_batches_in_flight"].get<int>() <= 2);
  const auto& detail = r.summary["stage_detail"];
  CHECK(detail["sample"]["items"] == 30);
  CHECK(detail["transfer"]["items"] == 30);
  CHECK(detail["train"]["items"] == 30);
  CHECK(detail["eval"]["items"] == 3);
  CHECK(r.summary["trainer_wait_s"].get<double>() >= 0);
}

TEST_CASE("with a slow train stage, sampling runs ahead: batches overlap, up to the slots", "[pipeline][tsan]") {
  test::TempDir dir;
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::map<std::pair<int, int64_t>, Clock::time_point> sample_start;
  std::vector<std::tuple<int, int64_t, Clock::time_point, Clock::time_point>> train_spans;
  TrainOptions options;
  options.fault = [&](pipeline::Stage stage, int epoch, int64_t batch) {
    if (stage == pipeline::Stage::kSample) {
      std::lock_guard lock(mutex);
      sample_start[{epoch, batch}] = Clock::now();
    } else if (stage == pipeline::Stage::kTrain) {
      const auto t0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // training is the bottleneck
      std::lock_guard lock(mutex);
      train_spans.emplace_back(epoch, batch, t0, Clock::now());
    }
  };
  const Run r = train({"pipeline.sampler_threads=2", "pipeline.staging_slots=3", "run.epochs=2"}, dir, "slow", options);
  // Every staging slot fills while the trainer sleeps: more than one batch in flight, never more than 3.
  CHECK(r.summary["max_batches_in_flight"].get<int>() > 1);
  CHECK(r.summary["max_batches_in_flight"].get<int>() <= 3);
  // Overlap, seen directly: later batches were sampled while an earlier one trained.
  REQUIRE(train_spans.size() == 20);
  int sampled_during_training = 0;
  for (const auto& [epoch, batch, t0, t1] : train_spans) {
    for (const auto& [key, start] : sample_start) {
      if (key > std::make_pair(epoch, batch) && start >= t0 && start < t1) ++sampled_during_training;
    }
  }
  CHECK(sampled_during_training > 0);
}

TEST_CASE("a failure in any stage stops the run once, naming the stage and the batch", "[pipeline][tsan]") {
  test::TempDir dir;
  for (const auto mode : {"pipelined", "sequential"}) {
    for (const auto stage : {pipeline::Stage::kSample, pipeline::Stage::kGather, pipeline::Stage::kTransfer,
                             pipeline::Stage::kTrain, pipeline::Stage::kEval}) {
      const std::string name(pipeline::to_string(stage));
      INFO(mode << " " << name);
      TrainOptions options;
      options.fault = [stage](pipeline::Stage s, int epoch, int64_t batch) {
        if (s == stage && epoch == 2 && (batch == 3 || batch == -1)) GNNPIPE_THROW(DataError, "injected");
      };
      const std::string sub = std::string(mode) + name;
      const std::string where = stage == pipeline::Stage::kEval ? "stage eval, epoch 2: injected"
                                                                : "stage " + name + ", batch 3 of epoch 2: injected";
      try {
        train({std::string("pipeline.mode=") + mode}, dir, sub, options);
        FAIL("no error");
      } catch (const core::DataError& e) {  // the original type survives (exit code 3)
        CHECK(e.message() == where);
      }
      CHECK(stopped_summary(dir / sub) == std::pair<std::string, std::string>("failed", where));
    }
  }
}

namespace {

// Failure injection that throws a transient error (std::runtime_error: retried, unlike gnnpipe's
// typed errors) on the first `times` calls of each chosen (stage, epoch, batch); counts every call.
struct TransientFaults {
  std::set<std::tuple<pipeline::Stage, int, int64_t>> at;
  int times = 1;
  std::mutex mutex;
  std::map<std::tuple<pipeline::Stage, int, int64_t>, int> calls;

  std::function<void(pipeline::Stage, int, int64_t)> hook() {
    return [this](pipeline::Stage stage, int epoch, int64_t batch) {
      const auto key = std::make_tuple(stage, epoch, batch);
      int n = 0;
      {
        const std::lock_guard lock(mutex);
        n = ++calls[key];
      }
      if (at.count(key) > 0 && n <= times) throw std::runtime_error("injected");
    };
  }
  int calls_of(pipeline::Stage stage, int epoch, int64_t batch) {
    const std::lock_guard lock(mutex);
    return calls[{stage, epoch, batch}];
  }
};

}  // namespace

TEST_CASE("a transient error in any stage is retried: no batch lost, bitwise the unfaulted run, retries counted",
          "[pipeline][tsan]") {
  using pipeline::Stage;
  test::TempDir dir;
  for (const auto mode : {"pipelined", "sequential"}) {
    const std::string set = std::string("pipeline.mode=") + mode;
    const Run clean = train({set}, dir, std::string("clean-") + mode);
    for (const Stage stage : {Stage::kSample, Stage::kGather, Stage::kGovern, Stage::kTransfer, Stage::kTrain, Stage::kEval}) {
      const std::string name(pipeline::to_string(stage));
      INFO(mode << " " << name);
      const int64_t batch = stage == Stage::kEval ? -1 : 3;
      TransientFaults faults;
      faults.at = {{stage, 2, batch}, {stage, 4, stage == Stage::kEval ? -1 : 0}};
      faults.times = 2;  // twice in a row: within the default pipeline.stage_retries (2)
      TrainOptions options;
      options.fault = faults.hook();
      const Run r = train({set}, dir, std::string(mode) + "-" + name, options);
      CHECK(faults.calls_of(stage, 2, batch) == 3);
      CHECK(r.summary["params_checksum"] == clean.summary["params_checksum"]);
      CHECK(test::metrics_without_times(r.metrics) == test::metrics_without_times(clean.metrics));
      CHECK(r.summary["stage_retries"] == 4);
      const auto rows = test::metrics_rows(r.metrics);
      for (const auto& row : rows) {
        const int epoch = static_cast<int>(row.at("epoch"));
        CHECK(row.at("stage_retries") == (epoch == 2 || epoch == 4 ? 2 : 0));
      }
    }
  }
}

TEST_CASE("transient errors in random batches of every stage: the run recovers bitwise in both modes", "[pipeline][tsan]") {
  using pipeline::Stage;
  test::TempDir dir;
  std::mt19937_64 rng(20261125);
  const std::vector<Stage> stages{Stage::kSample, Stage::kGather, Stage::kGovern, Stage::kTransfer, Stage::kTrain,
                                  Stage::kEval};
  std::set<std::tuple<Stage, int, int64_t>> at;
  while (at.size() < 16) {
    const Stage stage = stages[rng() % stages.size()];
    at.insert({stage, 1 + static_cast<int>(rng() % 6), stage == Stage::kEval ? -1 : static_cast<int64_t>(rng() % 8)});
  }
  const Run clean = train({"pipeline.mode=sequential"}, dir, "clean");
  for (const auto mode : {"pipelined", "sequential"}) {
    INFO(mode);
    TransientFaults faults;
    faults.at = at;
    TrainOptions options;
    options.fault = faults.hook();
    const Run r = train({std::string("pipeline.mode=") + mode, "pipeline.sampler_threads=3"}, dir, mode, options);
    CHECK(r.summary["params_checksum"] == clean.summary["params_checksum"]);
    CHECK(test::metrics_without_times(r.metrics) == test::metrics_without_times(clean.metrics));
    CHECK(r.summary["stage_retries"] == 16);
    for (const auto& [stage, epoch, batch] : at) CHECK(faults.calls_of(stage, epoch, batch) == 2);
  }
}

TEST_CASE("an error that persists past pipeline.stage_retries stops the run, and a typed error is not retried", "[pipeline]") {
  using pipeline::Stage;
  test::TempDir dir;
  for (const int retries : {0, 1, 2}) {
    INFO("stage_retries " << retries);
    TransientFaults faults;
    faults.at = {{Stage::kGather, 2, 3}};
    faults.times = 1000;
    TrainOptions options;
    options.fault = faults.hook();
    const std::string sub = "persist-" + std::to_string(retries);
    try {
      train({"pipeline.stage_retries=" + std::to_string(retries)}, dir, sub, options);
      FAIL("no error");
    } catch (const core::Error& e) {
      CHECK(e.message() == "stage gather, batch 3 of epoch 2: injected");
    }
    CHECK(faults.calls_of(Stage::kGather, 2, 3) == retries + 1);
    CHECK(stopped_summary(dir / sub).first == "failed");
  }
  // A DataError (the same input repeats it) stops the run at its first occurrence.
  int calls = 0;
  TrainOptions options;
  options.fault = [&calls](Stage stage, int epoch, int64_t batch) {
    if (stage == Stage::kTrain && epoch == 1 && batch == 2 && ++calls > 0) GNNPIPE_THROW(DataError, "bad row");
  };
  CHECK_THROWS_AS(train({"pipeline.mode=sequential"}, dir, "typed", options), core::DataError);
  CHECK(calls == 1);
}

TEST_CASE("after a device fault, the first failure is the one reported, and teardown does not throw", "[pipeline][tsan]") {
  // A kernel fault in a train step, as CUDA shows it: the step's check throws, and from then on
  // every stream and event call of the context fails with the same sticky error (simulated on the
  // CPU backend). The run must still report "stage train, batch 3 of epoch 2: ...", not the
  // generic error of a later wait, and no destructor may throw on the way out (std::terminate).
  test::TempDir dir;
  struct ClearFault {
    ~ClearFault() { core::clear_simulated_device_fault(); }
  };
  for (const auto mode : {"pipelined", "sequential"}) {
    INFO(mode);
    const ClearFault clear;
    TrainOptions options;
    options.fault = [](pipeline::Stage stage, int epoch, int64_t batch) {
      if (stage == pipeline::Stage::kTrain && epoch == 2 && batch == 3) {
        core::simulate_device_fault("an illegal memory access was encountered");
        GNNPIPE_THROW(CudaError, "an illegal memory access was encountered");
      }
    };
    const std::string sub = std::string("fault-") + mode;
    try {
      train({std::string("pipeline.mode=") + mode, "pipeline.staging_slots=3"}, dir, sub, options);
      FAIL("no error");
    } catch (const core::CudaError& e) {
      CHECK(e.message() == "stage train, batch 3 of epoch 2: an illegal memory access was encountered");
    }
    CHECK(stopped_summary(dir / sub).first == "failed");
  }
  // The process goes on: a run after the fault was cleared trains normally.
  CHECK(train({"run.epochs=1"}, dir, "after").summary["epochs"] == 1);
}

TEST_CASE("early stopping stops both modes at the same epoch with the same parameters", "[pipeline][tsan]") {
  test::TempDir dir;
  const std::vector<std::string> sets{"run.epochs=60", "run.patience=3", "optimizer.lr=0.3"};
  auto seq_sets = sets;
  seq_sets.push_back("pipeline.mode=sequential");
  const Run s = train(seq_sets, dir, "s");
  REQUIRE(s.summary["epochs"].get<int>() < 60);
  const Run p = train(sets, dir, "p");
  CHECK(p.summary["epochs"] == s.summary["epochs"]);
  CHECK(p.summary["best_epoch"] == s.summary["best_epoch"]);
  CHECK(p.summary["params_checksum"] == s.summary["params_checksum"]);
  CHECK(test::metrics_without_times(p.metrics) == test::metrics_without_times(s.metrics));
}

TEST_CASE("the trace has one event per stage per batch on named lanes", "[pipeline][tsan]") {
  test::TempDir dir;
  TrainOptions options;
  options.trace = true;
  train({"run.epochs=2"}, dir, "t", options);
  std::ifstream in(dir / "t" / "trace.json");
  const auto trace = nlohmann::json::parse(in);
  std::map<std::string, int> events;
  std::set<std::string> lanes;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") ++events[e["name"].get<std::string>()];
    if (e["ph"] == "M") lanes.insert(e["args"]["name"].get<std::string>());
  }
  CHECK(events["sample"] == 20);
  CHECK(events["gather"] == 20);
  CHECK(events["transfer"] == 20);
  CHECK(events["train"] == 20);
  CHECK(events["eval"] == 2);
  CHECK(lanes.count("train") == 1);
  CHECK(lanes.count("transfer") == 1);
  CHECK(lanes.count("eval") == 1);
}

TEST_CASE("the ideal pipeline bound follows 1/N + (N-1)/N * max stage fraction", "[pipeline][bench]") {
  // Epoch 10 s, 5 batches: sampling 6 s over 2 threads = 0.3, transfer 0.1, training 0.4, eval 0.2.
  const auto b = pipeline_bound({{"sample", 4}, {"gather", 2}, {"transfer", 1}, {"train", 4}, {"eval", 2}}, 10, 5, 2);
  CHECK(b.bottleneck == "training");
  CHECK(b.fraction == Approx(0.2 + 0.8 * 0.4));
  CHECK(b.speedup == Approx(1 / 0.52));
  CHECK(pipeline_bound({{"train", 10}}, 10, 1, 1).speedup == Approx(1.0));  // one batch: nothing to overlap
  CHECK_THROWS_AS(pipeline_bound({}, 0, 1, 1), core::Error);
}

TEST_CASE("the ideal pipeline bound leaves the last evaluation unoverlapped", "[pipeline][bench]") {
  // The same stages, evaluated once in 2 epochs (4 s: 2 s per epoch), after the last step: the
  // training epochs pipelined take 8/5 + 0.8 * 4 = 4.8 s of the 10, and the evaluation 2 more.
  const std::map<std::string, double> stages{{"sample", 4}, {"gather", 2}, {"transfer", 1}, {"train", 4}, {"eval", 2}};
  const auto b = pipeline_bound(stages, 10, 5, 2, 2);
  CHECK(b.bottleneck == "training, then the last evaluation");
  CHECK(b.fraction == Approx(0.48 + 0.2));
  CHECK(b.speedup == Approx(1 / 0.68));
  // A short last evaluation (evaluating every epoch: 0.2 s of each 10) hides behind the stages.
  const auto small = pipeline_bound(stages, 10, 5, 2, 0.2);
  CHECK(small.bottleneck == "training");
  CHECK(small.fraction == Approx(0.52));
  // Evaluation the largest stage and the last one long: products' layer-wise evaluation on the
  // H200 (18.1 s once after 3 epochs; sampling 9.84 + 1.94 s over 14 threads, span 18.76 s an epoch).
  const auto products = pipeline_bound({{"sample", 9.843}, {"gather", 1.9446}, {"transfer", 0.7191}, {"train", 0.1928},
                                        {"eval", 6.0284}},
                                       18.7612, 192, 14, 6.0284);
  CHECK(products.bottleneck == "sampling, then the last evaluation");
  CHECK(products.speedup == Approx(2.71).margin(0.01));
  CHECK_THROWS_AS(pipeline_bound(stages, 10, 5, 2, -1), core::Error);
}

TEST_CASE("bench: the pipelined run's floor is the busier of its serial threads", "[pipeline][bench]") {
  CHECK(pipelined_floor(0.8, 0.3) == 0.8);
  CHECK(pipelined_floor(0.1, 0.5) == 0.5);
  CHECK_THROWS_AS(pipelined_floor(-1, 0), core::Error);
}

namespace {

// gnnpipe bench on a shipped config (its epochs cut to `epochs`): the efficiency it reports is
// measured against what the pipelined run's own threads allow, so it never exceeds 1, and it is
// not empty.
void check_bench_efficiency(const std::filesystem::path& config_file, const graph::DataDir& data, int epochs) {
  test::TempDir dir;
  const auto config = config::load_experiment(config_file, {"run.epochs=" + std::to_string(epochs)});
  const auto dataset = load_training_dataset(config, data);
  std::ostringstream out;
  const auto bench = run_bench(config, dataset, dir / "b", out);
  INFO(out.str());
  const double floor_s = bench["floor_epoch_s"].get<double>(), pipelined_s = bench["pipelined_epoch_s"].get<double>();
  CHECK(floor_s > 0);
  CHECK(floor_s <= pipelined_s);
  CHECK(bench["efficiency"].get<double>() <= 1.0);
  CHECK(bench["efficiency"].get<double>() == Approx(floor_s / pipelined_s));
  CHECK(bench["floor_speedup"].get<double>() == Approx(bench["baseline_epoch_s"].get<double>() / floor_s));
  CHECK(bench["params_identical"] == true);
  // The evaluation thread's CPU seconds of both modes are reported (their equality is checked
  // by tests/integration/bench_eval_cost.sh, alone: here other tests share the CPUs).
  CHECK(bench["eval_cpu_s_per_epoch"]["sequential"].get<double>() > 0);
  CHECK(bench["eval_cpu_s_per_epoch"]["pipelined"].get<double>() > 0);
}

}  // namespace

TEST_CASE("bench: efficiency is at most 1 on the shipped quickstart config", "[pipeline][bench]") {
  check_bench_efficiency(std::filesystem::path(GNNPIPE_SOURCE_DIR) / "configs/quickstart.yaml", ".", 4);
}

TEST_CASE("bench: efficiency is at most 1 on the shipped arxiv bench config", "[pipeline][bench][dataset]") {
  GNNPIPE_REQUIRE_DATASET(arxiv, "ogbn-arxiv");
  check_bench_efficiency(std::filesystem::path(GNNPIPE_SOURCE_DIR) / "configs/bench_arxiv_sage.yaml",
                         graph::DataDir(arxiv.parent_path()), 1);
}

TEST_CASE("gnnpipe bench runs both modes, prints the table and writes bench.json", "[pipeline][bench]") {
  test::TempDir dir;
  const auto config = config::parse_experiment(YAML::Load(kSampled), {"run.epochs=2"});
  const auto dataset = load_training_dataset(config, ".");
  std::ostringstream out;
  const auto bench = run_bench(config, dataset, dir / "b", out);
  for (const char* key : {"baseline_epoch_s", "pipelined_epoch_s", "speedup", "bound_speedup", "efficiency", "stage_busy_s_per_epoch"}) {
    CHECK(bench.contains(key));
  }
  CHECK(bench["params_identical"] == true);
  CHECK(bench["batches_per_epoch"].get<double>() == 10);
  CHECK(bench["speedup"].get<double>() > 0);
  // The modes are compared by their spans (training and every evaluation) per epoch.
  const auto span_per_epoch = [&](const char* mode) {
    const auto summary = nlohmann::json::parse(std::ifstream(dir / "b" / mode / "summary.json"));
    return summary["train_span_s"].get<double>() / summary["epochs"].get<double>();
  };
  CHECK(bench["baseline_epoch_s"].get<double>() == Approx(span_per_epoch("sequential")));
  CHECK(bench["pipelined_epoch_s"].get<double>() == Approx(span_per_epoch("pipelined")));
  CHECK(bench["speedup"].get<double>() ==
        Approx(bench["baseline_epoch_s"].get<double>() / bench["pipelined_epoch_s"].get<double>()));
  CHECK(std::filesystem::exists(dir / "b" / "bench.json"));
  CHECK(std::filesystem::exists(dir / "b" / "sequential" / "summary.json"));
  CHECK(std::filesystem::exists(dir / "b" / "pipelined" / "trace.json"));
  CHECK(out.str().find("speedup") != std::string::npos);
  CHECK(out.str().find("bitwise identical") != std::string::npos);
}

TEST_CASE("a run's span covers its epochs and the evaluation after the last one, in both modes", "[pipeline][bench]") {
  // Evaluated only after the last epoch (eval_every past it): in the pipeline that evaluation runs
  // after the last epoch's time ends, and the span must still hold it (gnnpipe bench compares spans).
  test::TempDir dir;
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO(mode);
    const Run r = train({std::string("pipeline.mode=") + mode, "pipeline.eval_every=50"}, dir, mode);
    const auto& s = r.summary;
    double epochs_s = 0;
    for (const double t : s["epoch_times_s"].get<std::vector<double>>()) epochs_s += t;
    const double eval_s = s["stage_busy_s"]["eval"].get<double>();
    REQUIRE(eval_s > 0);  // the one evaluation, after epoch 6
    CHECK(s["train_span_s"].get<double>() >= epochs_s - 1e-6);
    if (std::string(mode) == "pipelined") CHECK(s["train_span_s"].get<double>() >= epochs_s + eval_s - 1e-3);
    CHECK(s["train_span_s"].get<double>() <= s["run_time_s"].get<double>());
  }
}

TEST_CASE("every sampler type trains through the pipeline exactly as through the baseline", "[pipeline]") {
  test::TempDir dir;
  // With the test accuracy each reaches on the dev VM (160 test nodes; chance is 1/3). GraphSAINT
  // node sampling learns slowest in 20 epochs. The bounds sit 4 points below (BLAS rounding on
  // another CPU may move a few nodes). Each dropout stream change of issue #17 moves these: with
  // the lazily read draw (one bit a decision at p = 0.5) the four reach 0.713, 0.844, 0.819 and
  // 0.825; the bounds come from the 16-bit draw before it (Cluster-GCN at seed 7 then reached
  // 0.781; seeds 0-6 and 8-9 gave 0.81 to 0.86: the stream, not the learning, moved).
  const std::vector<std::tuple<std::string, std::string, double>> samplers{
      {"saint_node", "sampler={type: saint_node, batch_size: 200}", 0.650},
      {"saint_edge", "sampler={type: saint_edge, batch_size: 150}", 0.831},
      {"saint_rw", "sampler={type: saint_rw, batch_size: 60, walk_length: 2}", 0.831},
      {"cluster", "sampler={type: cluster, num_parts: 16, batch_size: 4, cache_dir: " + (dir / "cache").string() + "}", 0.781},
  };
  for (const auto& [name, set, reached] : samplers) {
    INFO(name);
    const Run seq = train({set, "pipeline.mode=sequential", "run.epochs=20"}, dir, name + "-s");
    const Run pipe = train({set, "pipeline.sampler_threads=3", "pipeline.staging_slots=2", "run.epochs=20"}, dir, name + "-p");
    CHECK(seq.summary["sampler"] == name);
    CHECK(seq.summary["test_accuracy"].get<double>() >= reached - 0.04);
    CHECK(pipe.summary["params_checksum"] == seq.summary["params_checksum"]);
    CHECK(test::metrics_without_times(pipe.metrics) == test::metrics_without_times(seq.metrics));
  }
  CHECK(std::filesystem::exists(dir / "cache"));  // the METIS partition was cached
  CHECK_THROWS_WITH(train({"sampler={type: cluster, num_parts: 5000}"}, dir, "big"), Catch::Contains("sampler.num_parts"));
  CHECK_THROWS_WITH(train({"sampler={type: cluster, num_parts: 8, diag_lambda: 0.5}"}, dir, "dl"),
                    Catch::Contains("sampler.diag_lambda"));
}

// Issue #17: GGNN and GaAN through every sampler type, pipelined == sequential, and learning.
TEST_CASE("GGNN and GaAN train through every sampler, the pipeline exactly as the baseline", "[pipeline][gated]") {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> samplers{
      {"full", "sampler={type: full}"},
      {"neighbor", "sampler={type: neighbor, fanouts: [5, 5], batch_size: 50}"},
      {"saint_node", "sampler={type: saint_node, batch_size: 200}"},
      {"saint_edge", "sampler={type: saint_edge, batch_size: 150}"},
      {"saint_rw", "sampler={type: saint_rw, batch_size: 60, walk_length: 2}"},
      {"cluster", "sampler={type: cluster, num_parts: 16, batch_size: 4, cache_dir: " + (dir / "cache").string() + "}"},
  };
  for (const std::string model : {"model={type: ggnn, layers: 2, hidden: 16, dropout: 0.2}",
                                  "model={type: gaan, layers: 2, hidden: 16, heads: 2, key_dim: 4, value_dim: 4, "
                                  "gate_dim: 8, dropout: 0.2}"}) {
    for (const auto& [name, set] : samplers) {
      INFO(model << " " << name);
      const std::string sub = std::to_string(model.size()) + name;
      const Run seq = train({model, set, "pipeline.mode=sequential", "run.epochs=12"}, dir, sub + "-s");
      const Run pipe = train({model, set, "pipeline.sampler_threads=3", "pipeline.staging_slots=2", "run.epochs=12"}, dir,
                             sub + "-p");
      // Reached on the dev VM (chance 1/3): GGNN 0.83-0.89 with every sampler; GaAN 0.68 (full batch),
      // 0.71-0.81 sampled. 0.6 leaves room for another CPU's rounding.
      CHECK(seq.summary["test_accuracy"].get<double>() >= 0.6);
      CHECK(pipe.summary["params_checksum"] == seq.summary["params_checksum"]);
      CHECK(test::metrics_without_times(pipe.metrics) == test::metrics_without_times(seq.metrics));
    }
  }
}
