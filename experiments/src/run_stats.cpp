#include "run_stats.hpp"

#include <cmath>
#include <numeric>

namespace gnnpipe::experiments {

nlohmann::json mean_std(const std::vector<double>& values) {
  const auto n = static_cast<double>(values.size());
  const double mean = values.empty() ? 0.0 : std::accumulate(values.begin(), values.end(), 0.0) / n;
  double squares = 0;
  for (const double v : values) squares += (v - mean) * (v - mean);
  const double std = values.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  return {{"mean", mean}, {"std", std}, {"n", values.size()}};
}

std::string metric_of(const nlohmann::json& summary) {
  return summary.is_object() ? summary.value("metric", std::string("accuracy")) : std::string("accuracy");
}

std::string metric_for(bool multi_label) { return multi_label ? "micro_f1" : "accuracy"; }

std::string score_key(const nlohmann::json& summary, const char* split) {
  return std::string(split) + "_" + metric_of(summary);
}

std::string metric_label(const std::string& metric) { return metric == "micro_f1" ? "micro-F1" : metric; }

}  // namespace gnnpipe::experiments
