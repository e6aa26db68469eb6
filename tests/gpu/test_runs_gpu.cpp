// Whole training runs on the GPU through the runner (test::run_experiment), for the paths the "GPU
// runs" test of test_training_gpu.cpp does not take: a device slot that grows mid-run, early
// stopping that restores the evaluation snapshot, evaluation every 3 epochs, cuSPARSE SpMM, TF32
// GEMMs and GAT. Pipelined runs must equal sequential ones bitwise (params_checksum, and the
// per-epoch losses and accuracies of metrics.csv); accuracy must stay within 0.03 of the CPU's, as
// in test_training_gpu.cpp.
#include <catch2/catch.hpp>

#if defined(GNNPIPE_TEST_WITH_CUDA)

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "experiment_helpers.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

// The "GPU runs" experiment of test_training_gpu.cpp: 2,000 nodes, SAGE, neighbor sampling.
const char* kBase = R"(
name: gpu
dataset: {synthetic: {nodes: 2000, avg_degree: 8, features: 16, classes: 4, seed: 1, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [10, 5], batch_size: 128}
optimizer: {type: adam, lr: 0.01}
pipeline: {sampler_threads: 4, staging_slots: 3}
run: {epochs: 8, seed: 2}
)";

constexpr double kAccuracySlack = 0.03;  // GPU vs CPU test accuracy (float rounding changes the trajectory)
constexpr double kChance = 0.6;          // 4 balanced classes: chance is 0.25

std::vector<std::string> with(std::vector<std::string> sets, const std::vector<std::string>& more) {
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

const std::vector<std::string> kGpu{"run.device=cuda:0"};
const std::vector<std::string> kSequential{"pipeline.mode=sequential"};

double accuracy(const test::ExperimentRun& r) { return r.summary["test_accuracy"].get<double>(); }

// Pipelined and sequential runs of one configuration: the same parameters, epochs and per-epoch
// losses and accuracies.
void check_modes_agree(const test::ExperimentRun& pipelined, const test::ExperimentRun& sequential) {
  CHECK(pipelined.summary["mode"] == "pipelined");
  CHECK(sequential.summary["mode"] == "sequential");
  CHECK(pipelined.summary["params_checksum"] == sequential.summary["params_checksum"]);
  CHECK(pipelined.summary["epochs"] == sequential.summary["epochs"]);
  CHECK(pipelined.summary["best_epoch"] == sequential.summary["best_epoch"]);
  CHECK(test::metrics_without_times(pipelined.metrics) == test::metrics_without_times(sequential.metrics));
}

// How often the one device slot of a run with pipeline.staging_slots 1 grows: the batches in run
// order, each needing BatchLayout::total_bytes, against StagingSlot::ensure (it grows to 9/8 of a
// request that does not fit; memory/staging_pool.hpp). Sampled on the host exactly as the run
// samples (same sampler, seed and plans).
int device_slot_growths(const std::string& yaml) {
  const auto config = experiments::config::parse_experiment(YAML::Load(yaml), {});
  const graph::Dataset d = experiments::load_training_dataset(config, ".");
  const models::GnnModel<float> model(config.model, d.features.cols(), d.labels.num_classes, config.run.seed);
  const auto sampler = experiments::make_training_sampler(config, d, model.block_norm(), model.num_layers());
  const auto workspace = sampler->make_workspace();
  std::size_t capacity = 0;
  int growths = 0;
  for (int epoch = 1; epoch <= config.run.epochs; ++epoch) {
    for (const samplers::BatchSpec& spec : sampler->plan_epoch(epoch)) {
      const graph::MiniBatch batch = sampler->sample(spec, *workspace);
      if (batch.loss_rows.size() == 0) continue;  // never copied
      const std::size_t bytes = pipeline::BatchLayout::of(batch, d.features.cols()).total_bytes;
      if (bytes > capacity) {
        ++growths;
        capacity = bytes + bytes / 8;
      }
    }
  }
  return growths;
}

}  // namespace

TEST_CASE("GPU run whose batches outgrow the device slot: pipelined equals sequential, accuracy near the CPU's",
          "[gpu][runs]") {
  // One staging slot, so every batch goes through device slot 0 in run order, and batches of 8
  // targets on a heavy-tailed graph (power-law exponent 2.1), whose sampled size varies a lot: the
  // slot grows again after the first batch (the transfer stage waits for the last step that read
  // it, then reallocates; batch_path.cpp, BatchPath::transfer).
  const char* yaml = R"(
name: grow
dataset: {synthetic: {nodes: 3000, avg_degree: 10, features: 16, classes: 4, seed: 4, feature_noise: 2.0,
                      power_law_exponent: 2.1}}
model: {type: sage, layers: 2, hidden: 32, dropout: 0.5}
sampler: {type: neighbor, fanouts: [15, 10], batch_size: 8}
optimizer: {type: adam, lr: 0.005}
pipeline: {sampler_threads: 4, staging_slots: 1}
run: {epochs: 2, seed: 2}
)";
  const int growths = device_slot_growths(yaml);
  INFO(growths << " growths of the device slot");
  REQUIRE(growths >= 3);  // the first allocation and at least two more mid-run
  test::TempDir dir;
  const auto pipelined = test::run_experiment(yaml, kGpu, dir / "p");
  const auto sequential = test::run_experiment(yaml, with(kGpu, kSequential), dir / "s");
  const auto cpu = test::run_experiment(yaml, {}, dir / "c");
  check_modes_agree(pipelined, sequential);
  CHECK(accuracy(pipelined) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(pipelined) > kChance);
}

TEST_CASE("GPU early stop restores the snapshot: pipelined equals sequential in parameters and epochs", "[gpu][runs]") {
  // run.patience stops the run at the first epoch e that ends `patience` epochs without a better
  // validation accuracy. The pipelined run decides that on its evaluation thread while epoch e + 1
  // trains, so it must put the snapshot of epoch e back into the model (Evaluation::restore_snapshot, a
  // device-to-device copy on the train stream). To make sure epoch e + 1 has stepped by then, the
  // evaluation of each epoch waits (through the failure-injection hook, which throws nothing) until
  // the train thread has started the second batch of the next epoch.
  const std::vector<std::string> sets{"run.epochs=60", "run.patience=2"};
  struct Progress {
    std::mutex mutex;
    std::condition_variable changed;
    int epoch = 0;
    int64_t batch = -1;
  } progress;
  const int epochs = 60;
  experiments::TrainOptions hold_eval;
  hold_eval.fault = [&](pipeline::Stage stage, int epoch, int64_t batch) {
    if (stage == pipeline::Stage::kTrain) {  // the train thread, batches in order
      const std::lock_guard lock(progress.mutex);
      progress.epoch = epoch;
      progress.batch = batch;
      progress.changed.notify_all();
    } else if (stage == pipeline::Stage::kEval && epoch < epochs) {  // the evaluation thread
      std::unique_lock lock(progress.mutex);
      // A bound, not a sleep: the train thread needs no evaluation to get there (it waits for the
      // evaluation of epoch e only at the end of epoch e + 1).
      progress.changed.wait_for(lock, std::chrono::seconds(60), [&] {
        return progress.epoch > epoch + 1 || (progress.epoch == epoch + 1 && progress.batch >= 1);
      });
    }
  };
  test::TempDir dir;
  const auto pipelined = test::run_experiment(kBase, with(kGpu, sets), dir / "p", hold_eval);
  const auto sequential = test::run_experiment(kBase, with(with(kGpu, sets), kSequential), dir / "s");
  INFO("stopped after epoch " << sequential.summary["epochs"]);
  REQUIRE(sequential.summary["epochs"].get<int>() < epochs);  // it did stop early
  check_modes_agree(pipelined, sequential);
  CHECK(accuracy(pipelined) > kChance);
}

TEST_CASE("GPU run evaluating every 3 epochs: pipelined equals sequential, best epoch an evaluated one",
          "[gpu][runs]") {
  const std::vector<std::string> sets{"pipeline.eval_every=3"};  // epochs 3, 6 and 8 (the last)
  test::TempDir dir;
  const auto pipelined = test::run_experiment(kBase, with(kGpu, sets), dir / "p");
  const auto sequential = test::run_experiment(kBase, with(with(kGpu, sets), kSequential), dir / "s");
  const auto cpu = test::run_experiment(kBase, sets, dir / "c");
  check_modes_agree(pipelined, sequential);
  const int best = pipelined.summary["best_epoch"].get<int>();
  CHECK((best == 3 || best == 6 || best == 8));
  // metrics.csv: a header and 8 rows, accuracies only in the evaluated ones.
  std::vector<std::string> rows;
  std::istringstream lines(test::metrics_without_times(pipelined.metrics));
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  REQUIRE(rows.size() == 9);
  for (std::size_t epoch = 1; epoch <= 8; ++epoch) {
    INFO("epoch " << epoch << ": " << rows[epoch]);
    const bool evaluated = epoch % 3 == 0 || epoch == 8;
    CHECK((rows[epoch].find("nan") == std::string::npos) == evaluated);
  }
  CHECK(accuracy(pipelined) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(pipelined) > kChance);
}

TEST_CASE("GPU runs with run.spmm cusparse: reruns and modes agree bitwise, accuracy near the CPU's",
          "[gpu][runs][cusparse]") {
  // CUSPARSE_SPMM_CSR_ALG3 is documented as deterministic, so cuSPARSE runs are reproducible too.
  const std::vector<std::string> sets{"run.device=cuda:0", "run.spmm=cusparse"};
  test::TempDir dir;
  const auto pipelined = test::run_experiment(kBase, sets, dir / "p");
  const auto again = test::run_experiment(kBase, sets, dir / "a");
  const auto sequential = test::run_experiment(kBase, with(sets, kSequential), dir / "s");
  const auto cpu = test::run_experiment(kBase, {}, dir / "c");
  CHECK(pipelined.summary["params_checksum"] == again.summary["params_checksum"]);
  check_modes_agree(pipelined, sequential);
  CHECK(accuracy(pipelined) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(pipelined) > kChance);
  // Full-batch GCN: every SpMM over the whole graph's block (one cached descriptor per shape).
  // (Replacing the whole sampler section: the neighbor keys are refused for type full.)
  const std::vector<std::string> full{"model.type=gcn", "sampler={type: full}", "run.epochs=30"};
  const auto gcn = test::run_experiment(kBase, with(sets, full), dir / "gcn");
  const auto gcn_cpu = test::run_experiment(kBase, full, dir / "gcn_cpu");
  CHECK(accuracy(gcn) >= accuracy(gcn_cpu) - kAccuracySlack);
  CHECK(accuracy(gcn) > kChance);
}

TEST_CASE("GPU runs with memory.allocator async: the caching allocator's parameters, within the budget",
          "[gpu][runs][allocator]") {
  test::TempDir dir;
  const auto caching = test::run_experiment(kBase, kGpu, dir / "caching");
  const auto pipelined = test::run_experiment(kBase, with(kGpu, {"memory.allocator=async"}), dir / "p");
  const auto sequential = test::run_experiment(kBase, with(kGpu, {"memory.allocator=async", "pipeline.mode=sequential"}),
                                               dir / "s");
  check_modes_agree(pipelined, sequential);
  // The same requests in the same order on the same streams: the same arithmetic.
  CHECK(pipelined.summary["params_checksum"] == caching.summary["params_checksum"]);
  const auto& m = pipelined.summary["memory"];
  CHECK(m["allocator"] == "async");
  CHECK(m["peak_held_bytes"].get<std::size_t>() <= m["budget_bytes"].get<std::size_t>());
  CHECK(m["peak_device_bytes"] == caching.summary["memory"]["peak_device_bytes"]);
}

TEST_CASE("memory.allocator async on a GPU: the budget is whole 32 MiB pool units, below one is refused",
          "[gpu][runs][allocator]") {
  // The driver grows a pool by 32 MiB past a smaller cap (the H200, 2026-11-27): a budget under
  // one unit is a ConfigError naming the key; another is rounded down to whole units, and the pool
  // holds no more than that.
  test::TempDir dir;
  const std::vector<std::string> async{"run.device=cuda:0", "memory.allocator=async", "memory.reserve=0"};
  CHECK_THROWS_WITH(test::run_experiment(kBase, with(async, {"memory.limit=16MiB"}), dir / "small"),
                    Catch::Contains("memory.allocator: async on cuda:0 needs a budget of at least 32.00 MiB") &&
                        Catch::Contains("not 16.00 MiB"));
  const auto run = test::run_experiment(kBase, with(async, {"memory.limit=100MiB"}), dir / "units");
  const auto& m = run.summary["memory"];
  CHECK(m["budget_bytes"].get<std::size_t>() == std::size_t{96} << 20);
  CHECK(m["peak_held_bytes"].get<std::size_t>() <= std::size_t{96} << 20);
  // The caching allocator keeps the whole limit.
  const auto caching = test::run_experiment(kBase, {"run.device=cuda:0", "memory.reserve=0", "memory.limit=100MiB"},
                                            dir / "caching");
  CHECK(caching.summary["memory"]["budget_bytes"].get<std::size_t>() == std::size_t{100} << 20);
}

TEST_CASE("GPU run with run.tf32: accuracy near the CPU's", "[gpu][runs]") {
  // TF32 GEMMs keep 10 mantissa bits: the trajectory differs more from the CPU's than in full
  // FP32, but the model learns as well.
  test::TempDir dir;
  const auto tf32 = test::run_experiment(kBase, {"run.device=cuda:0", "run.tf32=true"}, dir / "t");
  const auto cpu = test::run_experiment(kBase, {}, dir / "c");
  CHECK(accuracy(tf32) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(tf32) > kChance);
}

TEST_CASE("GPU runs with float16 features: layer-wise (host or device outputs) and resident evaluation agree",
          "[gpu][runs]") {
  // dataset.feature_dtype float16 reaches both evaluations: layer-wise chunks pack the 16-bit rows
  // widened to float32 (a products run on the H200 once failed there: "pack: the features are
  // float16, the layout's float32"), the resident whole-graph block widens them on the device.
  const std::vector<std::string> fp16{"run.device=cuda:0", "dataset.feature_dtype=float16", "run.epochs=4"};
  test::TempDir dir;
  const auto layerwise = test::run_experiment(kBase, with(fp16, {"pipeline.eval_graph=layerwise"}), dir / "l");
  const auto layerwise_seq =
      test::run_experiment(kBase, with(fp16, {"pipeline.eval_graph=layerwise", "pipeline.mode=sequential"}), dir / "ls");
  const auto resident = test::run_experiment(kBase, with(fp16, {"pipeline.eval_graph=resident"}), dir / "r");
  // Layer-wise with every layer's outputs on the device: layer-wise's chunks and arithmetic.
  const auto on_device = test::run_experiment(kBase, with(fp16, {"pipeline.eval_graph=layerwise_device"}), dir / "d");
  CHECK(on_device.summary["memory"]["plan"]["eval_outputs_on_device"] == true);
  CHECK(test::metrics_without_times(on_device.metrics) == test::metrics_without_times(layerwise.metrics));
  const auto cpu = test::run_experiment(kBase, {"dataset.feature_dtype=float16", "run.epochs=4"}, dir / "c");
  check_modes_agree(layerwise, layerwise_seq);
  // The same model evaluated two ways (sums in another order): the same accuracy within a few nodes.
  CHECK(accuracy(resident) == Approx(accuracy(layerwise)).margin(0.01));
  CHECK(accuracy(layerwise) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(layerwise) > kChance);
}

TEST_CASE("GAT trained pipelined on the GPU equals sequential bitwise", "[gpu][runs][gat]") {
  const std::vector<std::string> gat{"model.type=gat", "model.hidden=16", "model.heads=4"};
  test::TempDir dir;
  const auto pipelined = test::run_experiment(kBase, with(kGpu, gat), dir / "p");
  const auto sequential = test::run_experiment(kBase, with(with(kGpu, gat), kSequential), dir / "s");
  const auto cpu = test::run_experiment(kBase, gat, dir / "c");
  check_modes_agree(pipelined, sequential);
  CHECK(accuracy(pipelined) >= accuracy(cpu) - kAccuracySlack);
  CHECK(accuracy(pipelined) > kChance);
}

#endif  // GNNPIPE_TEST_WITH_CUDA
