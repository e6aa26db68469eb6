#pragma once
// Runs an experiment given as YAML text (with --set overrides) through the runner into `out`, the
// way `gnnpipe run` does, and returns its summary and metrics.csv; or returns its memory plan.
// Shared by the runner, pipeline and GPU training tests.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/experiments/trainer.hpp"

namespace gnnpipe::test {

struct ExperimentRun {
  nlohmann::json summary;
  std::string metrics;  // metrics.csv
};

// Every run made here has the stall watchdog on (unless the config sets run.stall_timeout): a run
// that hangs (a lost hand-off) ends the test binary with the stall message, naming what each
// stage and hand-off holds (exit code 6), instead of hanging the suite until CI's deadline. Far
// above any test run's longest item, sanitizers included. (Set after parsing: config.yaml and the
// resume check read the resolved config, which does not have it.)
inline constexpr double kTestStallTimeoutS = 300;

inline ExperimentRun run_experiment(const std::string& yaml, const std::vector<std::string>& sets,
                                    const std::filesystem::path& out, const experiments::TrainOptions& options = {}) {
  auto config = experiments::config::parse_experiment(YAML::Load(yaml), sets);
  if (config.run.stall_timeout_s == 0) config.run.stall_timeout_s = kTestStallTimeoutS;
  experiments::check_training_supported(config);
  const auto dataset = experiments::load_training_dataset(config, ".");
  experiments::RunDirectoryOptions dir_options;
  dir_options.out = out;
  dir_options.mirror_log = false;
  experiments::RunDirectory run_dir(config, dir_options);
  ExperimentRun r{experiments::train_experiment(config, dataset, run_dir, options), {}};
  std::ifstream in(out / "metrics.csv");
  std::stringstream text;
  text << in.rdbuf();
  r.metrics = text.str();
  return r;
}

// The memory plan `gnnpipe run --plan` prints for the same experiment.
inline pipeline::MemoryPlan plan_experiment(const std::string& yaml, const std::vector<std::string>& sets) {
  const auto config = experiments::config::parse_experiment(YAML::Load(yaml), sets);
  return experiments::plan_experiment(config, experiments::load_training_dataset(config, "."));
}

// metrics.csv as rows of named numbers.
inline std::vector<std::map<std::string, double>> metrics_rows(const std::string& csv) {
  std::stringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  {
    std::stringstream header(line);
    for (std::string name; std::getline(header, name, ',');) names.push_back(name);
  }
  std::vector<std::map<std::string, double>> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::map<std::string, double> row;
    std::size_t i = 0;
    for (std::string field; std::getline(fields, field, ','); ++i) row[names.at(i)] = std::stod(field);
    rows.push_back(std::move(row));
  }
  return rows;
}

// metrics.csv without the columns that may differ between pipelined and sequential runs of one
// configuration: everything after batches_retried (peak_device_bytes, since the pipeline holds more
// device slots at once, and every time and rate). Found by name, so new timing columns stay out.
inline std::string metrics_without_times(const std::string& csv) {
  std::stringstream in(csv), out;
  std::string line;
  std::getline(in, line);
  std::size_t keep = 0;  // columns kept
  {
    std::stringstream header(line);
    std::size_t i = 0;
    for (std::string name; std::getline(header, name, ',');) {
      ++i;
      if (name == "batches_retried") keep = i;
    }
  }
  if (keep == 0) throw std::runtime_error("metrics.csv has no batches_retried column: " + line);
  in.seekg(0);
  while (std::getline(in, line)) {
    std::size_t end = 0;
    for (std::size_t i = 0; i < keep && end != std::string::npos; ++i) end = line.find(',', i == 0 ? 0 : end + 1);
    out << line.substr(0, end) << '\n';
  }
  return out.str();
}

}  // namespace gnnpipe::test
