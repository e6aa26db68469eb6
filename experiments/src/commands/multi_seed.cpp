#include "commands/multi_seed.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <cmath>
#include <numeric>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"
#include "records/run_stats.hpp"

namespace gnnpipe::experiments {

namespace {

nlohmann::json seeds_summary(const config::ExperimentConfig& c, const nlohmann::json& runs, const std::string& status,
                             const std::string& metric) {
  std::vector<double> val, test, epoch_time;
  for (const auto& r : runs) {
    val.push_back(r["val_" + metric].get<double>());
    test.push_back(r["test_" + metric].get<double>());
    epoch_time.push_back(r["epoch_time_s"].get<double>());
  }
  return {{"name", c.name},
          {"status", status},
          {"seeds", c.run.seeds},
          {"runs", runs},
          {"metric", metric},
          {"val_" + metric, mean_std(val)},
          {"test_" + metric, mean_std(test)},
          {"epoch_time_s", mean_std(epoch_time)},
          {"metric_note", fmt::format("per run: the best validation {0} and the test {0} at that epoch", metric)}};
}

}  // namespace

nlohmann::json train_seeds(const config::ExperimentConfig& c, const graph::Dataset& d,
                           const RunDirectoryOptions& parent_options, const TrainOptions& options, std::ostream& out) {
  RunDirectoryOptions parent_dir_options = parent_options;
  parent_dir_options.metrics = false;
  RunDirectory parent(c, parent_dir_options);
  core::logger().info("{} seeds: {}; runs under {}", c.run.seeds.size(), fmt::join(c.run.seeds, ", "),
                      parent.path().string());
  nlohmann::json runs = nlohmann::json::array();
  std::string metric = metric_for(c.run.metric, d.labels.is_multi_label());
  for (const uint64_t seed : c.run.seeds) {
    config::ExperimentConfig one = c;
    one.run.seed = seed;
    one.run.seeds.clear();
    one.resolved = config::to_yaml(one);
    RunDirectoryOptions options_one;
    options_one.out = parent.path() / fmt::format("seed-{}", seed);
    options_one.mirror_log = false;  // the parent's log.txt has every run
    core::logger().info("seed {}: run directory {}", seed, options_one.out.string());
    try {
      RunDirectory dir(one, options_one);
      const nlohmann::json s = train_experiment(one, d, dir, options);
      metric = metric_of(s);
      runs.push_back({{"seed", seed},
                      {"dir", options_one.out.filename().string()},
                      {"val_" + metric, s[score_key(s, "val")]},
                      {"test_" + metric, s[score_key(s, "test")]},
                      {"best_epoch", s["best_epoch"]},
                      {"epoch_time_s", s["epoch_time_s"]},
                      {"params_checksum", s["params_checksum"]}});
    } catch (const std::exception& e) {
      nlohmann::json summary =
          seeds_summary(c, runs, stop_status(e), metric);
      summary["error"] = fmt::format("seed {}: {}", seed, core::user_message(e));
      parent.write_summary(summary);
      throw;
    }
  }
  const nlohmann::json summary = seeds_summary(c, runs, "done", metric);
  parent.write_summary(summary);
  const auto& test = summary["test_" + metric];
  const auto& val = summary["val_" + metric];
  fmt::print(out, "{}: test {} {:.4f} ± {:.4f}, val {:.4f} ± {:.4f} over {} seeds (mean ± std of each run's best "
                  "validation epoch); summary in {}\n",
             c.name, metric_label(metric), test["mean"].get<double>(), test["std"].get<double>(), val["mean"].get<double>(),
             val["std"].get<double>(), runs.size(), (parent.path() / "summary.json").string());
  return summary;
}

}  // namespace gnnpipe::experiments
