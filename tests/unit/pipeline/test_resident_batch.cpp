// pipeline.resident (issue #14): a sampler's fixed batch is built, packed and copied once and
// trains from its device copy every epoch, with the parameters of moving it every epoch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;

namespace {

// Evaluation after every epoch, overlapping the next epoch's training in pipelined runs (issue #39,
// item 6): these bitwise comparisons ran with evaluation after the last epoch only, clear of a
// divergence seen under TSan about one run in 14 (issue #13's note). Not reproduced on 2026-11-28
// in 27 (resident) and 23 (placement) TSan runs, 2 at a time, with evaluation every epoch; they
// are the sentinel for it now.
const char* kBase = R"(
name: resident
dataset: {synthetic: {nodes: 600, avg_degree: 6, features: 12, classes: 3, seed: 4, feature_noise: 2.0}}
model: {type: gcn, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: full}
optimizer: {type: adam, lr: 0.01}
pipeline: {eval_every: 1}
run: {epochs: 5, seed: 3}
)";

using Run = test::ExperimentRun;

Run train(std::vector<std::string> sets, const test::TempDir& dir, const std::string& sub) {
  return test::run_experiment(kBase, sets, dir / sub);
}

int64_t items(const Run& r, const char* stage) {
  const auto& detail = r.summary["stage_detail"];
  return detail.contains(stage) ? detail[stage]["items"].get<int64_t>() : 0;
}

// One column of metrics.csv (header row skipped); NaN (accuracies of epochs not evaluated) skipped.
std::vector<double> column(const Run& r, std::size_t index) {
  std::stringstream in(r.metrics);
  std::vector<double> values;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string field;
    for (std::size_t i = 0; i <= index; ++i) std::getline(fields, field, ',');
    const double value = std::stod(field);
    if (!std::isnan(value)) values.push_back(value);
  }
  return values;
}

}  // namespace

TEST_CASE("resident: a full batch is moved once, trains as if moved every epoch, in both modes", "[pipeline][tsan]") {
  test::TempDir dir;
  const Run moved = train({"pipeline.resident=off", "pipeline.mode=sequential"}, dir, "off-seq");
  CHECK(items(moved, "gather") == 5);
  CHECK(items(moved, "transfer") == 5);
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO("mode " << mode);
    const Run kept = train({std::string("pipeline.mode=") + mode}, dir, std::string("auto-") + mode);
    CHECK(items(kept, "sample") == 1);
    CHECK(items(kept, "gather") == 1);
    CHECK(items(kept, "govern") == 1);
    CHECK(items(kept, "transfer") == 1);
    CHECK(items(kept, "train") == 5);
    CHECK(kept.summary["params_checksum"] == moved.summary["params_checksum"]);
    CHECK(column(kept, 1) == column(moved, 1));  // the losses, bit for bit
    // Evaluation is an eval-mode forward of the batch instead of layer-wise inference: the same
    // logits up to the order of sums, so the same accuracies up to a node whose top two tie.
    for (std::size_t acc : {2, 3, 4}) {
      const std::vector<double> a = column(kept, acc), b = column(moved, acc);
      REQUIRE(a.size() == b.size());
      for (std::size_t e = 0; e < a.size(); ++e) CHECK(std::abs(a[e] - b[e]) <= 1.0 / 100);
    }
    // The governor counts the kept batch as each epoch's fitted batch.
    CHECK(kept.summary["memory"]["batches_fit"] == 5);
    CHECK(kept.summary["max_batches_in_flight"].get<int>() == 1);
  }
}

TEST_CASE("resident: a GCN without input dropout aggregates its features once, with the parameters of every epoch",
          "[pipeline]") {
  // 12 feature columns into 16 hidden: the first layer aggregates first; a resident batch keeps
  // A x from epoch 1, a moved one aggregates it again every epoch.
  test::TempDir dir;
  const std::vector<std::string> sets{"model.input_dropout=0", "model.dropout=0.5"};
  for (const char* mode : {"sequential", "pipelined"}) {
    INFO("mode " << mode);
    bool kept_reused = false, moved_reused = true;
    experiments::TrainOptions kept_options, moved_options;
    kept_options.on_trained = [&](const models::GnnModel<float>& m) { kept_reused = m.first_input_reused(); };
    moved_options.on_trained = [&](const models::GnnModel<float>& m) { moved_reused = m.first_input_reused(); };
    std::vector<std::string> kept_sets = sets, moved_sets = sets;
    kept_sets.push_back(std::string("pipeline.mode=") + mode);
    moved_sets.insert(moved_sets.end(), {std::string("pipeline.mode=") + mode, "pipeline.resident=off"});
    const Run kept = test::run_experiment(kBase, kept_sets, dir / (std::string("agg-kept-") + mode), kept_options);
    const Run moved = test::run_experiment(kBase, moved_sets, dir / (std::string("agg-moved-") + mode), moved_options);
    CHECK(items(kept, "transfer") == 1);
    CHECK(kept_reused);
    CHECK_FALSE(moved_reused);
    CHECK(kept.summary["params_checksum"] == moved.summary["params_checksum"]);
    CHECK(column(kept, 1) == column(moved, 1));
  }
}

TEST_CASE("resident: Cluster-GCN with every part in one batch is kept, with smaller groups it is not", "[pipeline]") {
  test::TempDir dir;
  const std::string cache = "cache_dir: " + (dir / "cache").string();
  const std::string one_batch = "sampler={type: cluster, num_parts: 6, batch_size: 6, " + cache + "}";
  const Run kept = train({one_batch}, dir, "one");
  const Run moved = train({one_batch, "pipeline.resident=off"}, dir, "one-off");
  CHECK(items(kept, "gather") == 1);
  CHECK(items(moved, "gather") == 5);
  CHECK(kept.summary["params_checksum"] == moved.summary["params_checksum"]);
  CHECK(column(kept, 2) == column(moved, 2));  // layer-wise evaluation in both: its accuracies exactly

  const Run groups = train({"sampler={type: cluster, num_parts: 6, batch_size: 2, " + cache + "}"}, dir, "groups");
  CHECK(items(groups, "gather") == items(groups, "train"));
  CHECK(items(groups, "train") > 5);
  const Run neighbor = train({"sampler={type: neighbor, fanouts: [4, 4], batch_size: 100}", "model.type=sage"}, dir, "nb");
  CHECK(items(neighbor, "gather") == items(neighbor, "train"));
}

TEST_CASE("resident: the memory plan says whether the batch stays", "[pipeline]") {
  const auto plan = [](const std::vector<std::string>& sets) { return test::plan_experiment(kBase, sets); };
  const pipeline::MemoryPlan kept = plan({});
  CHECK(kept.resident_batch);
  const std::vector<std::string> lines = kept.lines();
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
          return line.find("placement: the batch is built, packed and copied once and stays on the device") != std::string::npos;
        }) == 1);
  CHECK_FALSE(plan({"pipeline.resident=off"}).resident_batch);
  CHECK_FALSE(plan({"sampler={type: neighbor, fanouts: [4, 4], batch_size: 100}", "model.type=sage"}).resident_batch);
  // A budget the full batch does not fit unsplit: it is split every epoch, so it moves every epoch.
  const std::size_t need = kept.largest_batch_peak;
  CHECK_FALSE(plan({"memory.limit=" + std::to_string(need * 85 / 100)}).resident_batch);
}

TEST_CASE("resident: the plan of a kept full batch evaluated in one piece predicts the run's peak", "[pipeline]") {
  // Evaluation after every epoch, over the kept batch one layer at a time (each layer's arrays given
  // back before the next layer's): the plan counts those arrays, not layer-wise inference's chunks.
  const std::vector<std::string> sets{"pipeline.eval_every=1", "model.layers=3", "model.hidden=64"};
  const pipeline::MemoryPlan plan = test::plan_experiment(kBase, sets);
  REQUIRE(plan.resident_batch);
  CHECK(plan.eval_whole);
  const std::vector<std::string> lines = plan.lines();
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
          return line.find("evaluation arrays at most") != std::string::npos &&
                 line.find("(over the kept full batch, one layer at a time)") != std::string::npos;
        }) == 1);
  test::TempDir dir;
  for (const std::string mode : {"sequential", "pipelined"}) {
    INFO(mode);
    std::vector<std::string> with_mode = sets;
    with_mode.push_back("pipeline.mode=" + mode);
    const Run r = train(with_mode, dir, mode);
    const auto& memory = r.summary["memory"];
    CHECK(memory["plan"]["eval_whole"] == true);
    const auto peak = memory["peak_device_bytes"].get<std::size_t>();
    CHECK(peak <= plan.largest_batch_peak);
    // Exact up to the size classes' rounding and the predictor's tolerance: not a loose bound.
    CHECK(static_cast<double>(peak) >= 0.9 * static_cast<double>(plan.largest_batch_peak));
  }
}

TEST_CASE("resident: pipeline.resident takes auto or off", "[pipeline]") {
  test::TempDir dir;
  CHECK_THROWS_WITH(train({"pipeline.resident=always"}, dir, "bad"),
                    Catch::Contains("pipeline.resident") && Catch::Contains("auto, off"));
}
