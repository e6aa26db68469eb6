// Checkpoints written by runs and `gnnpipe run --resume` (issue #15): a run stopped after epoch k
// and resumed trains bitwise the parameters and metrics of the uninterrupted run on the CPU, for
// every sampler type and both modes; a resume with another config is refused naming the keys.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <atomic>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "records/training_checkpoints.hpp"
#include "experiment_helpers.hpp"
#include "temp_dir.hpp"

using namespace gnnpipe;
namespace fs = std::filesystem;

namespace {

const char* kBase = R"(
name: resumed
dataset: {synthetic: {nodes: 600, avg_degree: 6, features: 12, classes: 3, seed: 4, feature_noise: 2.0}}
model: {type: sage, layers: 2, hidden: 16, dropout: 0.5}
sampler: {type: neighbor, fanouts: [4, 4], batch_size: 80}
optimizer: {type: adam, lr: 0.01}
pipeline: {eval_every: 1}
run: {epochs: 6, seed: 3}
)";

// metrics.csv without the columns that may differ between runs (peak bytes, epoch time).
std::string stable_metrics(const fs::path& file) {
  std::ifstream in(file);
  std::string line, out;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string field;
    for (int i = 0; i < 12 && std::getline(fields, field, ','); ++i) out += field + ",";
    out += "\n";
  }
  return out;
}

// `gnnpipe run --resume DIR` with `sets`, the way the command line does it.
nlohmann::json resume(const std::vector<std::string>& sets, const fs::path& dir) {
  const auto config = experiments::config::parse_experiment(YAML::Load(kBase), sets);
  experiments::TrainOptions options;
  options.resume = experiments::load_resume_checkpoint(config, dir);
  experiments::RunDirectoryOptions dir_options;
  dir_options.out = dir;
  dir_options.mirror_log = false;
  dir_options.resume = true;
  dir_options.resume_after = options.resume->epoch;
  experiments::RunDirectory run_dir(config, dir_options);
  return experiments::train_experiment(config, experiments::load_training_dataset(config, "."), run_dir, options);
}

// Every sampler type, as --set overrides of kBase (neighbor: kBase's own).
const std::vector<std::pair<std::string, std::vector<std::string>>>& sampler_cases() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"neighbor", {}},
      {"full", {"sampler={type: full}", "model.type=gcn"}},
      {"saint", {"sampler={type: saint_rw, batch_size: 60, walk_length: 2}"}},
      {"cluster", {"sampler={type: cluster, num_parts: 8, batch_size: 2}"}},
      // MH-Aug (issue #41): the chain's state, its uncertainties and the live array go on.
      {"full-mh", {"sampler={type: full}", "model.type=gcn", "augment={type: mh, sigma_delta_e: 0.1, sigma_delta_v: 0.1}"}},
      {"saint-mh", {"sampler={type: saint_rw, batch_size: 60, walk_length: 2}", "augment={type: mh, accept: always}"}},
  };
  return cases;
}

std::vector<std::string> with_mode(std::vector<std::string> sets, const char* mode) {
  sets.push_back(std::string("pipeline.mode=") + mode);
  return sets;
}

}  // namespace

TEST_CASE("resume: a run stopped after epoch k and resumed trains bitwise the uninterrupted run", "[checkpoint]") {
  test::TempDir dir;
  for (const auto& [name, sets] : sampler_cases()) {
    for (const char* mode : {"sequential", "pipelined"}) {
      INFO(name << ", " << mode);
      const std::vector<std::string> s = with_mode(sets, mode);
      const std::string tag = name + "-" + mode;
      const auto whole = test::run_experiment(kBase, s, dir / (tag + "-whole"));
      std::vector<std::string> first = s;
      first.push_back("run.epochs=3");
      test::run_experiment(kBase, first, dir / (tag + "-part"));
      const auto manifest = experiments::read_checkpoint(dir / (tag + "-part") / "checkpoints" / "last");
      CHECK(manifest.epoch == 3);
      const nlohmann::json resumed = resume(s, dir / (tag + "-part"));
      CHECK(resumed["params_checksum"] == whole.summary["params_checksum"]);
      CHECK(resumed["best_epoch"] == whole.summary["best_epoch"]);
      CHECK(resumed["test_accuracy"] == whole.summary["test_accuracy"]);
      CHECK(resumed["epochs"] == 6);
      // metrics.csv: the first run's rows, then the resumed ones, as one run's.
      CHECK(stable_metrics(dir / (tag + "-part") / "metrics.csv") == stable_metrics(dir / (tag + "-whole") / "metrics.csv"));
      CHECK(experiments::read_checkpoint(dir / (tag + "-part") / "checkpoints" / "last").epoch == 6);
    }
  }
}

TEST_CASE("resume: checkpoints follow run.checkpoint_every, best holds the best evaluation's parameters", "[checkpoint]") {
  test::TempDir dir;
  const auto r = test::run_experiment(kBase, {"run.checkpoint_every=4", "run.epochs=6"}, dir / "every4");
  // Due at epoch 4 and at the last (6): last is epoch 6's, with the optimizer's state.
  const auto last = experiments::read_checkpoint(dir / "every4" / "checkpoints" / "last");
  CHECK(last.epoch == 6);
  CHECK(last.optimizer == "adam");
  CHECK(last.optimizer_state.size() == 2);
  CHECK(last.optimizer_steps > 0);
  CHECK(last.parameters.front().name == "layer0.weight_l");  // SAGE's names, as the model gives them
  const auto best = experiments::read_checkpoint(dir / "every4" / "checkpoints" / "best");
  CHECK(best.epoch == r.summary["best_epoch"].get<int>());
  CHECK(best.run_state["tracker"]["best_val"].get<double>() == r.summary["val_accuracy"].get<double>());
  // keep_last 3: epoch directories of the 3 newest due epochs (3, 4, 5 of 1..5 with every 1), the
  // newest the same checkpoint as last.
  test::run_experiment(kBase, {"run.checkpoint_every=1", "run.epochs=5", "run.keep_last=3"}, dir / "keep3");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir / "keep3" / "checkpoints")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"best", "epoch-000003", "epoch-000004", "epoch-000005", "last"});
  const auto newest = experiments::read_checkpoint(dir / "keep3" / "checkpoints" / "epoch-000005");
  const auto last5 = experiments::read_checkpoint(dir / "keep3" / "checkpoints" / "last");
  CHECK(newest.epoch == 5);
  CHECK(newest.parameters.front().values == last5.parameters.front().values);
  CHECK(experiments::read_checkpoint(dir / "keep3" / "checkpoints" / "epoch-000003").epoch == 3);
  // keep_last 1 (the default): last alone.
  CHECK_FALSE(fs::exists(dir / "every4" / "checkpoints" / "epoch-000006"));
  // checkpoint_every 0: none.
  test::run_experiment(kBase, {"run.checkpoint_every=0", "run.epochs=2"}, dir / "none");
  CHECK_FALSE(fs::exists(dir / "none" / "checkpoints"));
}

TEST_CASE("resume: another config, a finished run or a missing checkpoint is refused with one line", "[checkpoint]") {
  test::TempDir dir;
  test::run_experiment(kBase, {"run.epochs=2"}, dir / "run");
  // Another model and learning rate: both keys are named; run.epochs may change.
  try {
    resume({"model.hidden=32", "optimizer.lr=0.02"}, dir / "run");
    FAIL("no error");
  } catch (const core::ConfigError& e) {
    CHECK_THAT(e.message(), Catch::Contains("differs from the run's in model.hidden, optimizer.lr ("));
    // The keys it names as changeable are the ones the check lets change.
    CHECK_THAT(e.message(), Catch::EndsWith(fmt::format("(only {} may change)", fmt::join(experiments::resume_changeable_keys(), ", "))));
    CHECK_THAT(e.message(), Catch::Contains("run.epochs, run.checkpoint_every, run.keep_last, run.patience"));
  }
  for (const std::string& key : experiments::resume_changeable_keys()) CHECK(experiments::resume_may_change(key));
  CHECK_FALSE(experiments::resume_may_change("model.hidden"));
  // Nothing left to train.
  CHECK_THROWS_WITH(resume({"run.epochs=2"}, dir / "run"), Catch::Contains("nothing left to train"));
  // No checkpoint: a DataError naming the manifest.
  fs::remove_all(dir / "run" / "checkpoints" / "last");
  CHECK_THROWS_AS(resume({}, dir / "run"), core::DataError);
  CHECK_THROWS_AS(resume({}, dir / "nowhere"), core::ConfigError);
}

TEST_CASE("resume: a stop request writes last at the step it stopped before, and the run resumes there bitwise",
          "[checkpoint]") {
  test::TempDir dir;
  // The batch of epoch 4 whose step sees the request come in (the run stops before the next
  // step): full has one batch, so it stops before epoch 5's.
  const std::map<std::string, int64_t> signal_batches{{"neighbor", 2}, {"saint", 1},   {"cluster", 0},
                                                      {"full", 0},     {"full-mh", 0}, {"saint-mh", 1}};
  for (const auto& [name, sets] : sampler_cases()) {
    const int64_t signal_batch = signal_batches.at(name);
    for (const char* mode : {"sequential", "pipelined"}) {
      INFO(name << ", " << mode);
      const std::vector<std::string> s = with_mode(sets, mode);
      const std::string tag = name + "-" + mode;
      const auto whole = test::run_experiment(kBase, s, dir / (tag + "-whole"));
      // The request arrives while epoch 4's step `signal_batch` runs (as a signal would, from
      // outside; the pipelined sampler is epochs ahead by then): that step finishes, the next stops.
      std::atomic<int> stop{0};
      experiments::TrainOptions options;
      options.stop_request = &stop;
      options.fault = [&](pipeline::Stage stage, int epoch, int64_t batch) {
        if (stage == pipeline::Stage::kTrain && epoch == 4 && batch == signal_batch) stop.store(15);
      };
      const fs::path part = dir / (tag + "-stopped");
      try {
        test::run_experiment(kBase, s, part, options);
        FAIL("the run was not stopped");
      } catch (const core::Interrupted& e) {
        CHECK_THAT(e.message(), Catch::Contains("interrupted by signal 15") && Catch::Contains("--resume"));
        CHECK(core::exit_code_for(e) == core::ExitCode::kInterrupted);
      }
      const nlohmann::json stopped = nlohmann::json::parse(test::read_file(part / "summary.json"));
      CHECK(stopped["status"] == "interrupted");
      const auto last = experiments::read_checkpoint(part / "checkpoints" / "last");
      const pipeline::PartialEpoch partial = experiments::checkpoint_partial_epoch(last, "last");
      if (signal_batch + 1 < partial.batches) {
        CHECK(last.epoch == 3);
        CHECK(partial.epoch == 4);
        CHECK(partial.batches_done == signal_batch + 1);
        CHECK_THAT(stopped["error"].get<std::string>(),
                   Catch::Contains(fmt::format("stage train, batch {} of epoch 4: interrupted by signal 15 before the batch's step",
                                               signal_batch + 1)));
      } else {  // epoch 4's last step: the run stops before epoch 5's first
        CHECK(last.epoch == 4);
        CHECK(partial.epoch == 5);
        CHECK(partial.batches_done == 0);
      }
      CHECK(stopped["last"]["epoch"] == last.epoch);  // every earlier evaluation reported before the stop
      CHECK(last.run_state["rng"]["next_batch"] == partial.batches_done);
      const nlohmann::json resumed = resume(s, part);
      CHECK(resumed["params_checksum"] == whole.summary["params_checksum"]);
      CHECK(resumed["best_epoch"] == whole.summary["best_epoch"]);
      CHECK(stable_metrics(part / "metrics.csv") == stable_metrics(dir / (tag + "-whole") / "metrics.csv"));
    }
  }
}

TEST_CASE("resume: a damaged stopped-epoch record in the checkpoint is refused naming the file", "[checkpoint]") {
  experiments::Checkpoint c;
  c.epoch = 3;
  c.run_state["partial_epoch"] = {{"epoch", 4},
                                  {"batches_done", 2},
                                  {"batches", 8},
                                  {"loss_bits", {std::bit_cast<uint64_t>(0.5), std::bit_cast<uint64_t>(std::nan(""))}},
                                  {"loss_rows", {80, 80}},
                                  {"counters",
                                   {{"fit", 2}, {"split", 0}, {"micro_batches", 0}, {"resampled", 0}, {"cut", 0},
                                    {"edges_cut", 0}, {"retried", 0}, {"seeds", 160}, {"edges", 900},
                                    {"stage_retries", 0}, {"peak_bytes", 1}, {"reserved_bytes", 2}}}};
  const pipeline::PartialEpoch p = experiments::checkpoint_partial_epoch(c, "dir/last");
  CHECK(p.losses.size() == 2);
  CHECK(p.losses[0] == 0.5);
  CHECK(std::isnan(p.losses[1]));  // bit-exact, NaN included
  CHECK(p.counters.seeds == 160);
  CHECK(experiments::checkpoint_partial_epoch(experiments::Checkpoint{}, "x").epoch == 0);  // none
  experiments::Checkpoint bad = c;
  bad.run_state["partial_epoch"]["epoch"] = 5;  // does not follow epoch 3
  CHECK_THROWS_WITH(experiments::checkpoint_partial_epoch(bad, "dir/last"),
                    Catch::StartsWith("dir/last: run_state.partial_epoch: epoch 5 after 3 complete"));
  bad = c;
  bad.run_state["partial_epoch"]["loss_rows"] = nlohmann::json::array({80});
  CHECK_THROWS_AS(experiments::checkpoint_partial_epoch(bad, "dir/last"), core::DataError);
  bad = c;
  bad.run_state["partial_epoch"]["loss_bits"] = nlohmann::json::array({9.2e19, 1.0});  // floats: refused, not cast
  CHECK_THROWS_WITH(experiments::checkpoint_partial_epoch(bad, "dir/last"),
                    Catch::StartsWith("dir/last: run_state.partial_epoch.loss_bits: 9.2e+19 is not an integer in [0, "));
  bad = c;
  bad.run_state["partial_epoch"]["batches"] = int64_t{1} << 40;  // a large count in range is read as it is
  CHECK(experiments::checkpoint_partial_epoch(bad, "dir/last").batches == int64_t{1} << 40);
  bad = c;
  bad.run_state["partial_epoch"]["epoch"] = int64_t{1} << 40;  // beyond an int
  CHECK_THROWS_WITH(experiments::checkpoint_partial_epoch(bad, "dir/last"),
                    Catch::StartsWith("dir/last: run_state.partial_epoch.epoch: 1099511627776 is not an integer in ["));
  bad = c;
  bad.run_state["partial_epoch"].erase("counters");  // one line naming the key, no nlohmann text
  CHECK_THROWS_WITH(experiments::checkpoint_partial_epoch(bad, "dir/last"),
                    Catch::StartsWith("dir/last: run_state.partial_epoch.counters is missing ("));
  bad = c;
  bad.run_state["partial_epoch"]["counters"].erase("seeds");
  CHECK_THROWS_WITH(experiments::checkpoint_partial_epoch(bad, "dir/last"),
                    Catch::StartsWith("dir/last: run_state.partial_epoch.counters.seeds is missing ("));
}

TEST_CASE("resume: run.keep_last, run.checkpoint_every and pipeline.eval_threads may change, and the resumed run "
          "trains bitwise the same",
          "[checkpoint]") {
  test::TempDir dir;
  const auto whole = test::run_experiment(kBase, {}, dir / "whole");
  test::run_experiment(kBase, {"run.epochs=3"}, dir / "part");
  const nlohmann::json resumed =
      resume({"run.keep_last=2", "run.checkpoint_every=2", "pipeline.eval_threads=2"}, dir / "part");
  CHECK(resumed["params_checksum"] == whole.summary["params_checksum"]);
  CHECK(fs::is_directory(dir / "part" / "checkpoints" / "epoch-000006"));
}

TEST_CASE("resume: a metrics.csv without the rows up to the checkpoint is refused naming the epochs, before any write",
          "[checkpoint]") {
  test::TempDir dir;
  test::run_experiment(kBase, {"run.epochs=5"}, dir / "run");
  const fs::path metrics = dir / "run" / "metrics.csv";
  const std::string full = test::read_file(metrics), config = test::read_file(dir / "run" / "config.yaml");
  // The header and the rows of epochs 1-2 of 5.
  std::string cut = full;
  for (int lines = 0, at = 0;; ++at) {
    if (cut[static_cast<std::size_t>(at)] == '\n' && ++lines == 3) {
      cut.resize(static_cast<std::size_t>(at) + 1);
      break;
    }
  }
  test::write_file(metrics, cut);
  const auto refused = [&](const std::string& message) {
    try {
      resume({"run.epochs=7"}, dir / "run");
      FAIL("resumed");
    } catch (const core::DataError& e) {
      CHECK(e.message() == message);
    }
    CHECK(test::read_file(dir / "run" / "config.yaml") == config);  // nothing rewritten
  };
  refused(metrics.string() + ": lacks the rows of epochs 3-5, and the checkpoint is after epoch 5 (restore the file, "
                             "or start the run afresh)");
  CHECK(test::read_file(metrics) == cut);
  // A row missing in the middle, and a repeated one.
  std::string gap = full;
  const std::size_t row3 = gap.find("\n3,") + 1;
  gap.erase(row3, gap.find('\n', row3) + 1 - row3);
  test::write_file(metrics, gap);
  refused(metrics.string() + ": lacks the row of epoch 3, and the checkpoint is after epoch 5 (restore the file, or "
                             "start the run afresh)");
  test::write_file(metrics, full + full.substr(full.find("\n5,") + 1));
  refused(metrics.string() + ": the row of epoch 5 is out of order or repeated (restore the file, or start the run afresh)");
  fs::remove(metrics);
  refused(metrics.string() + ": missing, and the checkpoint is after epoch 5: the rows of epochs 1-5 are lost (restore "
                             "the file, or start the run afresh)");
  // A last row cut short (a kill while writing it) is of an epoch after the checkpoint: dropped.
  test::write_file(metrics, full + "6,0.5");
  CHECK(experiments::resumed_metrics_rows(metrics, 5) == full.substr(full.find('\n') + 1));
  CHECK_NOTHROW(resume({"run.epochs=6"}, dir / "run"));
}

TEST_CASE("resume: a run stopped early by run.patience is refused as finished, and a raised patience goes on bitwise",
          "[checkpoint]") {
  test::TempDir dir;
  const std::vector<std::string> stops{"run.epochs=40", "run.patience=2"};
  const auto early = test::run_experiment(kBase, stops, dir / "early");
  const int stopped = early.summary["epochs"].get<int>();
  REQUIRE(stopped < 40);
  const std::string metrics = test::read_file(dir / "early" / "metrics.csv");
  // The same patience: nothing left to train (it stopped there), as for a finished run.
  try {
    resume(stops, dir / "early");
    FAIL("resumed");
  } catch (const core::ConfigError& e) {
    CHECK(e.message() == fmt::format("run.patience: 2, and {} stopped early after epoch {} (no better validation score for "
                                     "2 epochs since epoch {}): nothing left to train (raise run.patience, or set it to 0)",
                                     (dir / "early").string(), stopped, early.summary["best_epoch"].get<int>()));
  }
  // A lower patience could have stopped the run before: refused.
  CHECK_THROWS_WITH(resume({"run.epochs=40", "run.patience=1"}, dir / "early"),
                    Catch::StartsWith("run.patience: 1 is below the run's 2 ("));
  CHECK(test::read_file(dir / "early" / "metrics.csv") == metrics);
  // A higher one goes on: the run is the one that had it from the start, bit for bit.
  const std::vector<std::string> longer{"run.epochs=40", "run.patience=5"};
  const auto whole = test::run_experiment(kBase, longer, dir / "whole");
  const nlohmann::json resumed = resume(longer, dir / "early");
  CHECK(resumed["epochs"] == whole.summary["epochs"]);
  CHECK(resumed["params_checksum"] == whole.summary["params_checksum"]);
  CHECK(stable_metrics(dir / "early" / "metrics.csv") == stable_metrics(dir / "whole" / "metrics.csv"));
  // The checkpoint records the patience it was written with, so a later resume checks its hash.
  CHECK(experiments::read_checkpoint(dir / "early" / "checkpoints" / "last").run_state["patience"] == 5);
  // 0 (never stop) is the highest.
  if (whole.summary["epochs"].get<int>() < 40) CHECK_NOTHROW(resume({"run.epochs=40", "run.patience=0"}, dir / "early"));
}
