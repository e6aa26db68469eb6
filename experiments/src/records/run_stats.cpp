#include "records/run_stats.hpp"

#include <cmath>
#include <numeric>

#include "gnnpipe/core/check.hpp"

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

pipeline::Score resolve_score(pipeline::Score wanted, bool multi_label, const std::string& dataset) {
  using pipeline::Score;
  if (wanted == Score::kAuto) return multi_label ? Score::kMicroF1 : Score::kAccuracy;
  GNNPIPE_CHECK_CONFIG(multi_label || wanted == Score::kAccuracy,
                       "run.metric: {} scores multi-label predictions; {} has one label per node (use accuracy or auto)",
                       to_string(wanted), dataset);
  GNNPIPE_CHECK_CONFIG(!multi_label || wanted != Score::kAccuracy,
                       "run.metric: accuracy needs one label per node; {} is multi-label (use micro_f1, macro_f1, "
                       "micro_f1_topk, macro_f1_topk or auto)",
                       dataset);
  return wanted;
}

std::string metric_for(pipeline::Score wanted, bool multi_label) {
  return std::string(to_string(wanted == pipeline::Score::kAuto ? resolve_score(wanted, multi_label, "") : wanted));
}

std::string score_key(const nlohmann::json& summary, const char* split) {
  return std::string(split) + "_" + metric_of(summary);
}

std::string metric_label(const std::string& metric) {
  if (metric == "micro_f1") return "micro-F1";
  if (metric == "macro_f1") return "macro-F1";
  if (metric == "micro_f1_topk") return "micro-F1 (top-k)";
  if (metric == "macro_f1_topk") return "macro-F1 (top-k)";
  return metric;
}

}  // namespace gnnpipe::experiments
