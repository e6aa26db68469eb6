// run.seeds / run.runs (issue #16 item 3): the config keys and the statistics of the summary.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "records/run_stats.hpp"
#include "commands/sweep.hpp"

using gnnpipe::experiments::mean_std;
using gnnpipe::experiments::config::parse_experiment;

namespace {
gnnpipe::experiments::config::ExperimentConfig run_section(const std::string& run) {
  return parse_experiment(YAML::Load("{name: s, dataset: {synthetic: {nodes: 100}}, run: " + run + "}"));
}
}  // namespace

TEST_CASE("mean and unbiased standard deviation, as OGB reports them", "[seeds]") {
  const auto s = mean_std({0.80, 0.82, 0.84});
  CHECK(s["mean"].get<double>() == Approx(0.82));
  CHECK(s["std"].get<double>() == Approx(0.02));  // sqrt((0.0004 + 0 + 0.0004) / 2)
  CHECK(s["n"] == 3);
  CHECK(mean_std({0.5})["std"].get<double>() == 0.0);
}

TEST_CASE("run.seeds and run.runs give the seeds of a multi-seed run, and round-trip", "[seeds][config]") {
  using Catch::Contains;
  CHECK(run_section("{seeds: [0, 1, 2]}").run.seeds == std::vector<uint64_t>{0, 1, 2});
  CHECK(run_section("{seed: 5, runs: 3}").run.seeds == std::vector<uint64_t>{5, 6, 7});
  CHECK(run_section("{runs: 1}").run.seeds.empty());  // one run: the plain single run
  CHECK(run_section("{}").run.seeds.empty());
  const auto c = run_section("{seed: 5, runs: 3}");
  const auto again = parse_experiment(YAML::Load(gnnpipe::experiments::config::yaml_text(c.resolved)));
  CHECK(gnnpipe::experiments::config::same_settings(again, c));
  CHECK_THROWS_WITH(run_section("{seeds: []}"), Contains("run.seeds: must not be empty"));
  CHECK_THROWS_WITH(run_section("{seeds: [1, 1]}"), Contains("run.seeds: a seed appears twice"));
  CHECK_THROWS_WITH(run_section("{seeds: [1, 2], runs: 2}"), Contains("run.runs: set run.seeds or run.runs, not both"));
  CHECK_THROWS_WITH(run_section("{runs: 0}"), Contains("run.runs: must be in [1, 1000], got 0"));
}

TEST_CASE("a sweep block: its grid, its errors before any run, and its config round trip", "[seeds][config]") {
  using Catch::Contains;
  using gnnpipe::experiments::config::sweep_points;
  const auto c = parse_experiment(YAML::Load(
      "{name: s, dataset: {synthetic: {nodes: 100}}, sweep: {model.hidden: [8, 16], optimizer.lr: [0.1, 0.01, 0.001]}}"));
  REQUIRE(c.sweep.size() == 2);
  const auto points = sweep_points(c.sweep);
  REQUIRE(points.size() == 6);
  CHECK(points.front() == std::vector<std::string>{"model.hidden=8", "optimizer.lr=0.1"});
  CHECK(points[1] == std::vector<std::string>{"model.hidden=8", "optimizer.lr=0.01"});
  CHECK(points.back() == std::vector<std::string>{"model.hidden=16", "optimizer.lr=0.001"});
  const auto again = parse_experiment(YAML::Load(gnnpipe::experiments::config::yaml_text(c.resolved)));
  CHECK(gnnpipe::experiments::config::same_settings(again, c));
  CHECK(gnnpipe::experiments::sweep_point_name(0, points.front()) == "01-hidden-8_lr-0.1");
  CHECK(gnnpipe::experiments::sweep_point_name(11, {"sampler.fanouts=[5, 5]"}) == "12-fanouts-_5__5_");
  const auto bad = [](const std::string& sweep) {
    return parse_experiment(YAML::Load("{name: s, dataset: {synthetic: {nodes: 100}}, sweep: " + sweep + "}"));
  };
  CHECK_THROWS_WITH(bad("{model.hiden: [8]}"), Contains("sweep point model.hiden=8: --set 'model.hiden=8': unknown key model.hiden"));
  CHECK_THROWS_WITH(bad("{model.hidden: [8, 0]}"), Contains("sweep point model.hidden=0: model.hidden: must be >= 1"));
  CHECK_THROWS_WITH(bad("{model.hidden: []}"), Contains("sweep.model.hidden: expected a non-empty list"));
  CHECK_THROWS_WITH(bad("{name: [a, b]}"), Contains("sweep.name: cannot be swept"));
  CHECK_THROWS_WITH(bad("[1, 2]"), Contains("sweep: expected a mapping"));
}
