#pragma once
// Summary statistics of repeated measurements (runs over seeds, epoch times of a bench).
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "gnnpipe/pipeline/pipeline_options.hpp"

namespace gnnpipe::experiments {

// {"mean", "std", "n"} of `values` (std: unbiased, 0 for one value), as OGB reports runs.
nlohmann::json mean_std(const std::vector<double>& values);

// The score a summary.json reports: "accuracy", or "micro_f1" for multi-label data (its "metric"
// field; summaries without one are accuracy), and the key of a split's score in it
// ("test_accuracy", "val_micro_f1", ...). Readable name for messages: "accuracy", "micro-F1",
// "macro-F1 (top-k)".
std::string metric_of(const nlohmann::json& summary);
// The score a run reports (run.metric, `wanted`) on single- or multi-label data: auto is accuracy
// or micro-F1; accuracy needs single-label labels and the F1 scores multi-label ones (ConfigError
// naming run.metric and `dataset` otherwise). metric_for names it ("accuracy", "micro_f1_topk", ...).
pipeline::Score resolve_score(pipeline::Score wanted, bool multi_label, const std::string& dataset);
std::string metric_for(pipeline::Score wanted, bool multi_label);
std::string score_key(const nlohmann::json& summary, const char* split);
std::string metric_label(const std::string& metric);

}  // namespace gnnpipe::experiments
