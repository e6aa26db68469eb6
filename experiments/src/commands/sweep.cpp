#include "commands/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <exception>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"
#include "commands/multi_seed.hpp"
#include "commands/report_command.hpp"
#include "records/run_stats.hpp"

namespace gnnpipe::experiments {

std::string sweep_point_name(std::size_t index, const std::vector<std::string>& assignments) {
  std::string name = fmt::format("{:02}", index + 1);
  for (const std::string& a : assignments) {
    const std::size_t eq = a.find('=');
    const std::string key = a.substr(0, eq);
    const std::size_t dot = key.rfind('.');
    std::string part = (dot == std::string::npos ? key : key.substr(dot + 1)) + "-" + a.substr(eq + 1);
    for (char& ch : part) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
      if (!ok) ch = '_';
    }
    name += (name.size() == 2 ? "-" : "_") + part;
  }
  return name;
}

nlohmann::json train_sweep(const config::ExperimentConfig& c, const graph::Dataset& dataset,
                           const graph::DataDir& data_dir, const RunDirectoryOptions& parent_options,
                           const TrainOptions& options, std::ostream& out) {
  RunDirectoryOptions parent_dir_options = parent_options;
  parent_dir_options.metrics = false;
  RunDirectory parent(c, parent_dir_options);
  YAML::Node base = YAML::Clone(c.resolved.IsMap() ? c.resolved : config::to_yaml(c));
  base.remove("sweep");
  const auto points = config::sweep_points(c.sweep);
  core::logger().info("sweep: {} points under {}", points.size(), parent.path().string());
  nlohmann::json runs = nlohmann::json::array();
  std::vector<std::string> dirs;
  std::exception_ptr first_failure;
  const auto record = [&](const std::string& status) {
    parent.write_summary({{"name", c.name}, {"status", status}, {"points", points.size()}, {"runs", runs}});
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    const config::ExperimentConfig point = config::parse_experiment(base, points[i]);
    const std::string name = sweep_point_name(i, points[i]);
    RunDirectoryOptions point_options;
    point_options.out = parent.path() / name;
    point_options.mirror_log = false;  // the parent's log.txt has every run
    core::logger().info("sweep point {} of {}: {} -> {}", i + 1, points.size(), fmt::join(points[i], ", "), name);
    nlohmann::json entry = {{"dir", name}, {"overrides", points[i]}};
    try {
      const graph::Dataset own = point.dataset == c.dataset ? graph::Dataset{} : load_training_dataset(point, data_dir);
      const graph::Dataset& data = point.dataset == c.dataset ? dataset : own;
      nlohmann::json s;
      if (!point.run.seeds.empty()) {
        s = train_seeds(point, data, point_options, options, out);
      } else {
        RunDirectory dir(point, point_options);
        s = train_experiment(point, data, dir, options);
      }
      entry["status"] = "done";
      entry["metric"] = metric_of(s);
      entry[score_key(s, "test")] = s[score_key(s, "test")];
      entry[score_key(s, "val")] = s[score_key(s, "val")];
      dirs.push_back(point_options.out.string());
    } catch (const core::Interrupted&) {
      entry["status"] = "interrupted";
      runs.push_back(entry);
      record("interrupted");
      throw;
    } catch (const std::exception& e) {
      core::logger().error("sweep point {} failed: {}", name, core::user_message(e));
      entry["status"] = "failed";
      entry["error"] = core::user_message(e);
      if (!first_failure) first_failure = std::current_exception();
    }
    runs.push_back(entry);
    record("running");
  }
  record(first_failure ? "failed" : "done");
  if (!dirs.empty()) {
    fmt::print(out, "{}: sweep of {} points in {}\n", c.name, points.size(), parent.path().string());
    report_runs({dirs, ""}, out);
  }
  if (first_failure) std::rethrow_exception(first_failure);
  return runs;
}

}  // namespace gnnpipe::experiments
