// pipeline.eval_graph (issue #14): a sampled run's evaluation over the whole graph's full-neighbor
// block, packed and placed on the device once, gives layer-wise inference's results and leaves
// training untouched; the choice is in the plan; an explicit `resident` that cannot fit fails
// before training with an OutOfBudget naming the key.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

const char* kBase = R"(
name: eval_graph
dataset: {synthetic: {nodes: 700, avg_degree: 6, features: 24, classes: 3, seed: 5, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: neighbor, fanouts: [5, 5], batch_size: 60}
optimizer: {type: adam, lr: 0.01}
pipeline: {eval_every: 1}
run: {epochs: 4, seed: 9}
)";

using Run = test::ExperimentRun;

Run train(std::vector<std::string> sets, const test::TempDir& dir, const std::string& sub) {
  return test::run_experiment(kBase, sets, dir / sub);
}

// `sets` and one more assignment.
std::vector<std::string> with(std::vector<std::string> sets, const std::string& one_more) {
  sets.push_back(one_more);
  return sets;
}

// metrics.csv's accuracy columns (train, val, test) of every epoch.
std::vector<std::string> accuracies(const std::string& metrics) {
  std::vector<std::string> rows;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string f, kept;
    for (int i = 0; std::getline(fields, f, ','); ++i) {
      if (i >= 2 && i <= 4) kept += f + ",";
    }
    rows.push_back(kept);
  }
  return rows;
}

}  // namespace

TEST_CASE("evaluation over the whole graph's resident block: layer-wise inference's results, training unchanged",
          "[pipeline][eval_graph][tsan]") {
  test::TempDir dir;
  for (const std::string model : {"sage", "gcn", "gat"}) {
    for (const char* mode : {"sequential", "pipelined"}) {
      INFO(model << ", " << mode);
      const std::vector<std::string> sets{"model.type=" + model, std::string("pipeline.mode=") + mode};
      const std::string tag = model + mode;
      const Run layerwise = train(with(sets, "pipeline.eval_graph=layerwise"), dir, tag + "-lw");
      const Run resident = train(with(sets, "pipeline.eval_graph=resident"), dir, tag + "-res");
      const Run chunked = train({"model.type=" + model, std::string("pipeline.mode=") + mode, "pipeline.eval_graph=layerwise",
                                 "sampler.eval_chunk_nodes=97"},
                                dir, tag + "-chunks");
      CHECK(resident.summary["params_checksum"] == layerwise.summary["params_checksum"]);
      // With 700 nodes layer-wise inference runs one chunk: the same block, the same numbers.
      CHECK(accuracies(resident.metrics) == accuracies(layerwise.metrics));
      // In chunks of 97 the products differ in the last bits at most, which no prediction follows.
      CHECK(accuracies(resident.metrics) == accuracies(chunked.metrics));
      CHECK(resident.summary["memory"]["plan"]["eval_graph_bytes"].get<std::size_t>() > 0);
      CHECK(layerwise.summary["memory"]["plan"]["eval_graph_bytes"] == 0);
      CHECK(resident.summary["memory"]["peak_device_bytes"].get<std::size_t>() <=
            resident.summary["memory"]["budget_bytes"].get<std::size_t>());
    }
  }
}

TEST_CASE("pipeline.eval_graph: auto keeps the whole graph's block where a quarter of the budget holds it, on the "
          "CPU backend too, and the plan says where evaluation runs",
          "[pipeline][eval_graph]") {
  const pipeline::MemoryPlan automatic = test::plan_experiment(kBase, {});
  const pipeline::MemoryPlan resident = test::plan_experiment(kBase, {"pipeline.eval_graph=resident"});
  const pipeline::MemoryPlan layerwise = test::plan_experiment(kBase, {"pipeline.eval_graph=layerwise"});
  CHECK(resident.eval_graph > 0);
  CHECK(automatic.eval_graph == resident.eval_graph);
  CHECK(layerwise.eval_graph == 0);
  // Its evaluation bound is the whole graph's arrays, larger than one chunk's would be.
  CHECK(resident.evaluation >= layerwise.evaluation);
  // A budget whose quarter cannot hold the block: auto evaluates layer-wise.
  const pipeline::MemoryPlan tight =
      test::plan_experiment(kBase, {"memory.limit=" + std::to_string(3 * resident.eval_graph)});
  CHECK(tight.eval_graph == 0);
  bool said = false;
  for (const std::string& line : resident.lines()) said = said || line.find("evaluation: over the whole graph") != std::string::npos;
  CHECK(said);
  // A full batch evaluates over its own resident batch: nothing more is placed.
  CHECK(test::plan_experiment(kBase, {"pipeline.eval_graph=resident", "sampler={type: full}"}).eval_graph == 0);
}

TEST_CASE("pipeline.eval_graph: resident that does not fit, and bad values", "[pipeline][eval_graph][errors]") {
  using Catch::Contains;
  const pipeline::MemoryPlan resident = test::plan_experiment(kBase, {"pipeline.eval_graph=resident"});
  // What is resident before the evaluation graph is placed, and a little more: not enough for it.
  const std::size_t before = resident.parameters + resident.optimizer + resident.eval_twin + resident.library + resident.other;
  const std::string limit = "memory.limit=" + std::to_string(before + resident.eval_graph / 2);
  test::TempDir dir;
  CHECK_THROWS_WITH(train({"pipeline.eval_graph=resident", limit}, dir, "small"),
                    Contains("pipeline.eval_graph: resident") && Contains("memory.limit"));
  CHECK_THROWS_AS(train({"pipeline.eval_graph=resident", limit}, dir, "small2"), core::OutOfBudget);
  CHECK_THROWS_WITH(test::plan_experiment(kBase, {"pipeline.eval_graph=always"}),
                    Contains("pipeline.eval_graph: 'always' is not one of auto, resident, layerwise, layerwise_device"));
}

TEST_CASE("pipeline.eval_graph layerwise_device: layer-wise results with every layer's outputs kept in device memory",
          "[pipeline][eval_graph][tsan]") {
  // The CPU backend runs the GPU's path (the chunk runner, rows gathered from the previous layer's
  // outputs in the allocator's memory): the same chunks and arithmetic as host layer-wise
  // evaluation, so the same accuracies, and training untouched.
  test::TempDir dir;
  for (const std::string model : {"sage", "gcn", "gat"}) {
    for (const char* mode : {"sequential", "pipelined"}) {
      INFO(model << ", " << mode);
      const std::vector<std::string> sets{"model.type=" + model, std::string("pipeline.mode=") + mode,
                                          "sampler.eval_chunk_nodes=97"};
      const std::string tag = model + mode;
      const Run host = train(with(sets, "pipeline.eval_graph=layerwise"), dir, tag + "-host");
      const Run device = train(with(sets, "pipeline.eval_graph=layerwise_device"), dir, tag + "-device");
      CHECK(device.summary["params_checksum"] == host.summary["params_checksum"]);
      CHECK(accuracies(device.metrics) == accuracies(host.metrics));
      CHECK(device.summary["memory"]["plan"]["eval_outputs_on_device"] == true);
      CHECK(host.summary["memory"]["plan"]["eval_outputs_on_device"] == false);
      CHECK(device.summary["memory"]["peak_device_bytes"].get<std::size_t>() <=
            device.summary["memory"]["budget_bytes"].get<std::size_t>());
    }
  }
}

TEST_CASE("pipeline.eval_graph layerwise_device: its bound and plan line, auto on the CPU, and a budget it does not fit",
          "[pipeline][eval_graph][errors]") {
  using Catch::Contains;
  const pipeline::MemoryPlan host = test::plan_experiment(kBase, {"pipeline.eval_graph=layerwise"});
  const pipeline::MemoryPlan device = test::plan_experiment(kBase, {"pipeline.eval_graph=layerwise_device"});
  CHECK(device.eval_outputs_on_device);
  CHECK_FALSE(host.eval_outputs_on_device);
  CHECK_FALSE(test::plan_experiment(kBase, {}).eval_outputs_on_device);  // auto: host layer-wise on the CPU backend
  // The bound holds the two [700 x 16] activation arrays beside a chunk's.
  CHECK(device.evaluation > host.evaluation);
  bool said = false;
  for (const std::string& line : device.lines()) said = said || line.find("every layer's outputs on the device") != std::string::npos;
  CHECK(said);
  // A budget that holds what is resident and half of evaluation's arrays: refused before training.
  const std::size_t before = device.parameters + device.optimizer + device.eval_twin + device.library + device.other;
  const std::string limit = "memory.limit=" + std::to_string(before + device.evaluation / 2);
  test::TempDir dir;
  CHECK_THROWS_WITH(train({"pipeline.eval_graph=layerwise_device", limit}, dir, "small"),
                    Contains("pipeline.eval_graph: layerwise_device") && Contains("memory.limit"));
  CHECK_THROWS_AS(train({"pipeline.eval_graph=layerwise_device", limit}, dir, "small2"), core::OutOfBudget);
}

TEST_CASE("pipeline.eval_graph layerwise_device under a tight budget: batches split beside its arrays, nothing over",
          "[pipeline][eval_graph]") {
  // The governor reserves the evaluation's arrays for every batch, so that a pipelined evaluation
  // (its activation arrays, a chunk's packed block and gathered rows) runs beside the next epoch's
  // steps within the budget: a limit that leaves the batches about half of what they need splits
  // them, and the CPU backend's allocator (which refuses anything over its budget) sees no more.
  // The limit: the largest, in 5 % steps below the unlimited plan's peak, under which the plan
  // splits a batch (a smaller budget also has fewer device slots, which leaves the batches more).
  const pipeline::MemoryPlan device = test::plan_experiment(kBase, {"pipeline.eval_graph=layerwise_device"});
  REQUIRE(device.eval_outputs_on_device);
  std::string limit;
  for (double factor = 0.95; factor > 0.2 && limit.empty(); factor -= 0.05) {
    const std::string candidate =
        "memory.limit=" + std::to_string(static_cast<std::size_t>(static_cast<double>(device.largest_batch_peak) * factor));
    try {
      const pipeline::MemoryPlan plan =
          test::plan_experiment(kBase, {"pipeline.eval_graph=layerwise_device", "memory.reserve=0", candidate});
      if (plan.eval_outputs_on_device && plan.counters.split > 0) limit = candidate;
    } catch (const core::OutOfBudget&) {
      break;
    }
  }
  REQUIRE_FALSE(limit.empty());
  test::TempDir dir;
  for (const char* mode : {"pipelined", "sequential"}) {
    INFO(mode);
    const Run run = train({"pipeline.eval_graph=layerwise_device", std::string("pipeline.mode=") + mode,
                           "memory.reserve=0", limit},
                          dir, mode);
    const nlohmann::json& m = run.summary["memory"];
    CHECK(m["plan"]["eval_outputs_on_device"] == true);
    CHECK(m["batches_split"].get<int64_t>() > 0);
    CHECK(m["peak_device_bytes"].get<std::size_t>() <= m["budget_bytes"].get<std::size_t>());
    CHECK(run.summary["test_accuracy"].get<double>() > 0.6);  // 3 classes: chance is a third
  }
}

TEST_CASE("pipeline.eval_cache: layer-wise evaluation reusing its kept chunks gives the same results", "[pipeline][eval_graph]") {
  test::TempDir dir;
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO(mode);
    const std::vector<std::string> sets{std::string("pipeline.mode=") + mode, "pipeline.eval_graph=layerwise",
                                        "sampler.eval_chunk_nodes=97"};
    const Run off = train(with(sets, "pipeline.eval_cache=off"), dir, std::string(mode) + "-off");
    const Run kept = train(with(sets, "pipeline.eval_cache=64MiB"), dir, std::string(mode) + "-kept");
    const Run some = train(with(sets, "pipeline.eval_cache=20KiB"), dir, std::string(mode) + "-some");
    CHECK(kept.summary["params_checksum"] == off.summary["params_checksum"]);
    CHECK(accuracies(kept.metrics) == accuracies(off.metrics));
    CHECK(accuracies(some.metrics) == accuracies(off.metrics));
  }
}

TEST_CASE("pipeline.eval_cache: bad values name the key", "[pipeline][eval_graph][errors]") {
  using Catch::Contains;
  CHECK_NOTHROW(test::plan_experiment(kBase, {"pipeline.eval_cache=4GiB"}));
  CHECK_NOTHROW(test::plan_experiment(kBase, {"pipeline.eval_cache=auto"}));
  CHECK_THROWS_WITH(test::plan_experiment(kBase, {"pipeline.eval_cache=lots"}), Contains("pipeline.eval_cache"));
  CHECK_THROWS_WITH(test::plan_experiment(kBase, {"pipeline.eval_cache=-1"}), Contains("pipeline.eval_cache"));
}
