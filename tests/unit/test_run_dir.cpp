#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/experiments/records/dir_lock.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "temp_dir.hpp"

using gnnpipe::core::ConfigError;
using gnnpipe::experiments::EpochMetrics;
using gnnpipe::experiments::RunDirectory;
using gnnpipe::experiments::RunDirectoryOptions;
using gnnpipe::test::read_file;
namespace fs = std::filesystem;

namespace {
gnnpipe::experiments::config::ExperimentConfig tiny_config() {
  return gnnpipe::experiments::config::parse_experiment(YAML::Load("{name: tiny, dataset: {synthetic: {nodes: 100}}}"));
}
}  // namespace

TEST_CASE("a run directory holds config.yaml, metrics.csv and log.txt, and no summary until asked", "[run_dir]") {
  gnnpipe::test::TempDir dir;
  const auto config = tiny_config();
  fs::path path;
  {
    RunDirectoryOptions options;
    options.runs_root = dir / "runs";
    options.extra_metrics = {"learning_rate"};
    RunDirectory run(config, options);
    path = run.path();
    CHECK(path.parent_path() == dir / "runs");
    const std::string stem = path.filename().string();
    CHECK(stem.rfind("tiny-", 0) == 0);
    CHECK(stem.size() == std::string("tiny-YYYYmmdd-HHMMSS").size());
    CHECK(read_file(path / "config.yaml") == gnnpipe::experiments::config::yaml_text(config.resolved));

    gnnpipe::core::logger().info("epoch 1 of the run under test");
    gnnpipe::pipeline::MemoryCounters memory;
    memory.fit = 9;
    memory.split = 1;
    memory.micro_batches = 4;
    memory.peak_bytes = 123456;
    memory.stage_retries = 2;
    run.append_metrics({1, 0.5, 0.25, 0.75, 0.125, memory, 1.5, {0.01}, {}, 0});
    run.append_metrics({2, 0.1, 0.3, 0.8, 0.7, {}, 2, {0.005}, {}, 0});
    CHECK(read_file(path / "metrics.csv") ==
          "epoch,loss,train_acc,val_acc,test_acc,batches_fit,batches_split,micro_batches,batches_resampled,batches_cut,"
          "edges_cut,batches_retried,peak_device_bytes,epoch_time_s,sample_s,gather_s,transfer_s,train_s,eval_s,"
          "train_wait_data_s,train_wait_eval_s,trainer_wait_share,eval_time_s,seeds_per_s,edges_per_s,reserved_device_bytes,"
          "stage_retries,batches_layerwise,layerwise_chunks,learning_rate\n"
          "1,0.5,0.25,0.75,0.125,9,1,4,0,0,0,0,123456,1.5,0,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0.01\n"
          "2,0.1,0.3,0.8,0.7,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0.005\n");
    CHECK_THROWS_AS(run.append_metrics({3, 0, 0, 0, 0, {}, 0, {}, {}, 0}), gnnpipe::core::Error);
    // A run that ends without write_summary (a failure) leaves no summary.json.
    CHECK_FALSE(fs::exists(path / "summary.json"));
  }
  CHECK_FALSE(fs::exists(path / "summary.json"));
  CHECK_THAT(read_file(path / "log.txt"), Catch::Contains("epoch 1 of the run under test"));
  gnnpipe::core::logger().info("after the run directory closed");
  CHECK_THAT(read_file(path / "log.txt"), !Catch::Contains("after the run directory closed"));
}

TEST_CASE("write_summary writes summary.json atomically and replaces an earlier one", "[run_dir]") {
  gnnpipe::test::TempDir dir;
  RunDirectoryOptions options;
  options.out = dir / "out" / "nested";
  options.mirror_log = false;
  RunDirectory run(tiny_config(), options);
  CHECK(run.path() == dir / "out" / "nested");
  CHECK_FALSE(fs::exists(run.path() / "log.txt"));
  run.write_summary({{"test_accuracy", 0.5}, {"epochs", 3}});
  CHECK(nlohmann::json::parse(read_file(run.path() / "summary.json"))["epochs"] == 3);
  run.write_summary({{"test_accuracy", 0.75}});
  const auto summary = nlohmann::json::parse(read_file(run.path() / "summary.json"));
  CHECK(summary["test_accuracy"] == 0.75);
  CHECK_FALSE(summary.contains("epochs"));
  CHECK_FALSE(fs::exists(run.path() / "summary.json.tmp"));
  CHECK(read_file(run.path() / "metrics.csv") == "epoch,loss,train_acc,val_acc,test_acc,batches_fit,batches_split,micro_batches,batches_resampled,"
        "batches_cut,edges_cut,batches_retried,peak_device_bytes,epoch_time_s,sample_s,gather_s,transfer_s,train_s,eval_s,"
        "train_wait_data_s,train_wait_eval_s,trainer_wait_share,eval_time_s,seeds_per_s,edges_per_s,"
        "reserved_device_bytes,stage_retries,batches_layerwise,layerwise_chunks\n");
}

TEST_CASE("an --out directory: an existing empty directory is used, a non-empty one or a file is refused", "[run_dir]") {
  gnnpipe::test::TempDir dir;
  RunDirectoryOptions options;
  options.mirror_log = false;
  options.out = dir / "empty";
  fs::create_directories(options.out);
  { RunDirectory run(tiny_config(), options); }
  CHECK(fs::exists(dir / "empty" / "config.yaml"));
  CHECK_THROWS_WITH(RunDirectory(tiny_config(), options), Catch::Contains("exists and is not empty"));
  CHECK_THROWS_AS(RunDirectory(tiny_config(), options), ConfigError);
  options.out = dir / "file";
  gnnpipe::test::write_file(options.out, "x");
  CHECK_THROWS_WITH(RunDirectory(tiny_config(), options), Catch::Contains("is not a directory"));
}

TEST_CASE("two runs of one name get distinct directories, bad metric names are refused", "[run_dir]") {
  gnnpipe::test::TempDir dir;
  RunDirectoryOptions options;
  options.mirror_log = false;
  options.runs_root = dir.path();
  RunDirectory first(tiny_config(), options);
  RunDirectory second(tiny_config(), options);
  CHECK(first.path() != second.path());
  options.extra_metrics = {"loss"};
  CHECK_THROWS_WITH(RunDirectory(tiny_config(), options), Catch::Contains("metrics column 'loss' appears twice"));
  options.extra_metrics = {"a,b"};
  CHECK_THROWS_WITH(RunDirectory(tiny_config(), options), Catch::Contains("letters, digits and '_' only"));
}

TEST_CASE("a directory is locked while its RunDirectory lives: a second one is refused naming it and the pid",
          "[run_dir][lock]") {
  gnnpipe::test::TempDir dir;
  using gnnpipe::experiments::DirectoryLock;
  const std::string in_use = fmt::format("{}: in use by another gnnpipe process (pid {}); wait for it to end or use "
                                         "another directory", (dir / "run").string(), ::getpid());
  RunDirectoryOptions options;
  options.mirror_log = false;
  options.out = dir / "run";
  {
    RunDirectory first(tiny_config(), options);
    CHECK(read_file(dir / "run" / DirectoryLock::kFileName) == fmt::format("{}\n", ::getpid()));
    // A resume into it (run --resume of the same directory) and a lock of it are refused.
    RunDirectoryOptions again = options;
    again.resume = true;
    CHECK_THROWS_AS(RunDirectory(tiny_config(), again), ConfigError);
    CHECK_THROWS_WITH(RunDirectory(tiny_config(), again), Catch::StartsWith(in_use + " ("));
    CHECK_THROWS_WITH(DirectoryLock(dir / "run"), Catch::StartsWith(in_use + " ("));
    CHECK_THROWS_WITH(DirectoryLock::check_free(dir / "run"), Catch::StartsWith(in_use + " ("));
  }
  // Released with the RunDirectory; the file stays and an empty directory with it counts as empty.
  { DirectoryLock lock(dir / "run"); }
  DirectoryLock::check_free(dir / "run");
  fs::create_directories(dir / "lone");
  { DirectoryLock lock(dir / "lone"); }
  options.out = dir / "lone";
  { RunDirectory reuse(tiny_config(), options); }
  CHECK(fs::exists(dir / "lone" / "config.yaml"));
  // A caller's lock (run --resume takes it before reading the checkpoint) is the RunDirectory's.
  RunDirectoryOptions resumed = options;
  resumed.resume = true;
  resumed.lock = std::make_shared<const DirectoryLock>(dir / "lone");
  { RunDirectory run(tiny_config(), resumed); }
  CHECK_THROWS_WITH(DirectoryLock(dir / "lone"), Catch::Contains("in use by another gnnpipe process"));
  resumed.lock.reset();
  CHECK_NOTHROW(DirectoryLock(dir / "lone"));
}

TEST_CASE("an --out that cannot be created is a usage error naming it, as one whose parent is not writable",
          "[run_dir]") {
  RunDirectoryOptions options;
  options.mirror_log = false;
  options.out = "/proc/gnnpipe_test_run_dir/run";  // /proc refuses new entries, even to root
  try {
    RunDirectory run(tiny_config(), options);
    FAIL("created");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.message(), Catch::StartsWith("--out /proc/gnnpipe_test_run_dir/run: cannot "));
    CHECK(gnnpipe::core::exit_code_for(e) == gnnpipe::core::ExitCode::kUsage);
  }
}

TEST_CASE("an unfinished marker is written before config.yaml and removed by finished()", "[run_dir][infer]") {
  gnnpipe::test::TempDir dir;
  RunDirectoryOptions options;
  options.mirror_log = false;
  options.metrics = false;
  options.unfinished_marker = true;
  options.out = dir / "infer";
  RunDirectory run(tiny_config(), options);
  CHECK(fs::exists(dir / "infer" / RunDirectory::kUnfinished));
  CHECK_FALSE(fs::exists(dir / "infer" / "metrics.csv"));
  run.finished();
  CHECK_FALSE(fs::exists(dir / "infer" / RunDirectory::kUnfinished));
  run.finished();  // once is enough
}
