#include "commands/report_command.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/experiments/config/config_map.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "records/run_stats.hpp"

namespace gnnpipe::experiments {
namespace {

namespace fs = std::filesystem;

struct Row {
  std::string run;  // the directory as given or found
  std::map<std::string, std::string> keys;
  std::string status;
  double test = 0, test_std = 0, val = 0, val_std = 0, epoch_time = 0;
  int runs = 1;
};

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  GNNPIPE_CHECK_DATA(in.good(), "{}: cannot read", file.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: not valid JSON ({})", file.string(), e.what());
  }
}

// A number of the summary, or of its {"mean", "std"} object; NaN when absent (a failed run: the
// table shows a dash, the CSV an empty cell, not a score of 0).
std::pair<double, double> value_of(const nlohmann::json& summary, const char* key) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  if (!summary.contains(key)) return {kNone, kNone};
  const auto& v = summary[key];
  if (v.is_number()) return {v.get<double>(), 0.0};
  if (v.is_object() && v.contains("mean") && v["mean"].is_number()) return {v["mean"].get<double>(), v.value("std", 0.0)};
  return {kNone, kNone};
}

// A CSV cell of a number: empty when it is absent (NaN).
std::string number_cell(double x) { return std::isnan(x) ? std::string() : fmt::format("{}", x); }

Row read_row(const fs::path& dir) {
  Row row;
  row.run = dir.string();
  const nlohmann::json s = read_json(dir / "summary.json");
  GNNPIPE_CHECK_DATA(s.is_object(), "{}: not a run summary", (dir / "summary.json").string());
  row.status = s.value("status", std::string("done"));
  std::tie(row.test, row.test_std) = value_of(s, score_key(s, "test").c_str());
  std::tie(row.val, row.val_std) = value_of(s, score_key(s, "val").c_str());
  row.epoch_time = value_of(s, "epoch_time_s").first;
  if (s.contains("runs") && s["runs"].is_array()) row.runs = static_cast<int>(s["runs"].size());
  if (fs::exists(dir / "config.yaml")) {
    try {
      row.keys = config::flat_keys(config::load_yaml_file(dir / "config.yaml"));
    } catch (const core::ConfigError& e) {
      GNNPIPE_THROW(DataError, "{}", e.message());
    }
  }
  return row;
}

std::vector<fs::path> run_dirs(const std::string& arg) {
  const fs::path dir(arg);
  GNNPIPE_CHECK_CONFIG(fs::is_directory(dir), "{}: not a directory", arg);
  if (fs::exists(dir / "summary.json")) return {dir};
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && fs::exists(entry.path() / "summary.json")) found.push_back(entry.path());
  }
  GNNPIPE_CHECK_CONFIG(!found.empty(), "{}: no summary.json in it or one level down (not a run directory)", arg);
  std::sort(found.begin(), found.end());
  return found;
}

std::string plus_minus(double mean, double std, int runs) {
  if (std::isnan(mean)) return "—";
  return runs > 1 ? fmt::format("{:.4f} ± {:.4f}", mean, std) : fmt::format("{:.4f}", mean);
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

int report_runs(const ReportArgs& args, std::ostream& out) {
  GNNPIPE_CHECK_CONFIG(!args.dirs.empty(), "report: name at least one run directory");
  std::vector<Row> rows;
  for (const auto& arg : args.dirs) {
    for (const fs::path& dir : run_dirs(arg)) rows.push_back(read_row(dir));
  }
  // The keys whose value is not the same in every row (a missing key counts as a value).
  std::set<std::string> all;
  for (const Row& r : rows) for (const auto& [k, v] : r.keys) all.insert(k);
  std::vector<std::string> differing;
  for (const std::string& key : all) {
    std::set<std::string> values;
    for (const Row& r : rows) values.insert(r.keys.contains(key) ? r.keys.at(key) : "-");
    if (values.size() > 1) differing.push_back(key);
  }
  const auto value = [](const Row& r, const std::string& key) { return r.keys.contains(key) ? r.keys.at(key) : "-"; };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    for (const std::string& key : differing) {
      if (value(a, key) != value(b, key)) return value(a, key) < value(b, key);
    }
    return a.run < b.run;
  });

  std::vector<std::string> header{"run"};
  header.insert(header.end(), differing.begin(), differing.end());
  for (const char* h : {"status", "seeds", "test accuracy", "val accuracy", "epoch s"}) header.emplace_back(h);
  std::string line = "|", rule = "|";
  for (const auto& h : header) {
    line += " " + h + " |";
    rule += "---|";
  }
  fmt::print(out, "{}\n{}\n", line, rule);
  for (const Row& r : rows) {
    std::string text = "| " + r.run + " |";
    for (const std::string& key : differing) text += " " + value(r, key) + " |";
    text += fmt::format(" {} | {} | {} | {} | {} |", r.status, r.runs, plus_minus(r.test, r.test_std, r.runs),
                        plus_minus(r.val, r.val_std, r.runs),
                        std::isnan(r.epoch_time) ? std::string("—") : fmt::format("{:.4f}", r.epoch_time));
    fmt::print(out, "{}\n", text);
  }
  if (!args.csv.empty()) {
    std::ofstream csv(args.csv, std::ios::trunc);
    GNNPIPE_CHECK_CONFIG(csv.good(), "--csv {}: cannot write", args.csv);
    std::string head = "run";
    for (const std::string& key : differing) head += "," + csv_cell(key);
    csv << head << ",status,seeds,test_accuracy,test_std,val_accuracy,val_std,epoch_time_s\n";
    for (const Row& r : rows) {
      std::string text = csv_cell(r.run);
      for (const std::string& key : differing) text += "," + csv_cell(value(r, key));
      csv << text << fmt::format(",{},{},{},{},{},{},{}\n", r.status, r.runs, number_cell(r.test), number_cell(r.test_std),
                                 number_cell(r.val), number_cell(r.val_std), number_cell(r.epoch_time));
    }
    GNNPIPE_CHECK_CONFIG(csv.good(), "--csv {}: writing failed", args.csv);
  }
  return 0;
}

}  // namespace gnnpipe::experiments
