#pragma once
// Summary statistics of repeated measurements (runs over seeds, epoch times of a bench).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gnnpipe::experiments {

// {"mean", "std", "n"} of `values` (std: unbiased, 0 for one value), as OGB reports runs.
nlohmann::json mean_std(const std::vector<double>& values);

// The score a summary.json reports: "accuracy", or "micro_f1" for multi-label data (its "metric"
// field; summaries without one are accuracy), and the key of a split's score in it
// ("test_accuracy", "val_micro_f1", ...). Readable name for messages: "accuracy", "micro-F1".
std::string metric_of(const nlohmann::json& summary);
// The score a run on this data reports: "micro_f1" for multi-label labels, else "accuracy".
std::string metric_for(bool multi_label);
std::string score_key(const nlohmann::json& summary, const char* split);
std::string metric_label(const std::string& metric);

}  // namespace gnnpipe::experiments
