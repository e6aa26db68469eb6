#include "gnnpipe/experiments/records/run_dir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/experiments/config/sections.hpp"

namespace gnnpipe::experiments {
namespace {

namespace fs = std::filesystem;

std::string timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &local);
  return text;
}

// Claims a fresh directory under `root`: create_directory answers false when it already exists,
// so two runs started in the same second get different directories.
fs::path create_fresh(const fs::path& root, const std::string& stem) {
  std::error_code ec;
  fs::create_directories(root, ec);
  GNNPIPE_CHECK_CONFIG(!ec, "cannot create the runs directory '{}': {} (choose one with --out)", root.string(),
                       ec.message());
  for (int attempt = 1;; ++attempt) {
    const fs::path candidate = root / (attempt == 1 ? stem : fmt::format("{}-{}", stem, attempt));
    if (fs::create_directory(candidate, ec)) return candidate;
    GNNPIPE_CHECK_CONFIG(!ec, "cannot create the run directory '{}': {} (choose one with --out)", candidate.string(),
                         ec.message());
  }
}

// A failure to create it is the same usage error as an ancestor that is not writable (exit 2):
// /sys or /proc pass that check for root, and refuse the directory itself.
fs::path create_out(const fs::path& out) {
  check_output_dir(out, "--out");
  std::error_code ec;
  fs::create_directories(out, ec);
  GNNPIPE_CHECK_CONFIG(!ec, "--out {}: cannot create the run directory: {}", out.string(), ec.message());
  return out;
}

// "5-10", "3", "1-2, 7": sorted epochs as ranges.
std::string epoch_ranges(const std::vector<int>& epochs) {
  std::string text;
  for (std::size_t i = 0; i < epochs.size();) {
    std::size_t j = i;
    while (j + 1 < epochs.size() && epochs[j + 1] == epochs[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += i == j ? std::to_string(epochs[i]) : fmt::format("{}-{}", epochs[i], epochs[j]);
    i = j + 1;
  }
  return text;
}

// Whether `dir` holds nothing but a DirectoryLock file (one a process left that wrote nothing else).
bool empty_but_lock(const fs::path& dir, std::error_code& ec) {
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename() != DirectoryLock::kFileName) return false;
  }
  return !ec;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  GNNPIPE_CHECK(file.good(), "cannot write '{}'", path.string());
}

void check_metric_name(const std::string& name) {
  bool ok = !name.empty();
  for (const char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  }
  GNNPIPE_CHECK_CONFIG(ok, "metrics column '{}': use letters, digits and '_' only", name);
}

}  // namespace

void check_output_dir(const fs::path& out, const std::string& option, bool allow_files, const std::string& hint) {
  GNNPIPE_CHECK_CONFIG(!out.empty(), "{}: empty path", option);
  std::error_code ec;
  const auto writable = [](const fs::path& dir) { return ::access(dir.c_str(), W_OK | X_OK) == 0; };
  if (fs::exists(out, ec)) {
    GNNPIPE_CHECK_CONFIG(fs::is_directory(out, ec), "{} {}: exists and is not a directory", option, out.string());
    GNNPIPE_CHECK_CONFIG(allow_files || empty_but_lock(out, ec), "{} {}: exists and is not empty ({})", option,
                         out.string(), hint);
    GNNPIPE_CHECK_CONFIG(writable(out), "{} {}: the directory is not writable", option, out.string());
    return;
  }
  // The nearest ancestor that exists must be a directory this process may create entries in.
  fs::path ancestor = fs::absolute(out, ec).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec) && ancestor != ancestor.root_path()) ancestor = ancestor.parent_path();
  GNNPIPE_CHECK_CONFIG(fs::is_directory(ancestor, ec), "{} {}: cannot be created ({} is not a directory)", option,
                       out.string(), ancestor.string());
  GNNPIPE_CHECK_CONFIG(writable(ancestor), "{} {}: cannot be created ({} is not writable)", option, out.string(),
                       ancestor.string());
}

// (A row is written before its epoch's checkpoint, so a line cut short is of an epoch after it.)
std::string resumed_metrics_rows(const fs::path& file, int epoch) {
  std::ifstream in(file, std::ios::binary);
  std::string line, out;
  const std::string fix = "restore the file, or start the run afresh";
  if (!std::getline(in, line) || in.eof()) {
    GNNPIPE_CHECK_DATA(epoch == 0, "{}: {}, and the checkpoint is after epoch {}: the rows of epochs 1-{} are lost ({})",
                       file.string(), fs::exists(file) ? "has no header" : "missing", epoch, epoch, fix);
    return out;
  }
  std::vector<int> seen;
  while (std::getline(in, line) && !in.eof()) {
    const std::size_t comma = line.find(',');
    int row_epoch = 0;
    try {
      row_epoch = std::stoi(line.substr(0, comma));
    } catch (const std::exception&) {
      GNNPIPE_THROW(DataError, "{}: '{}' does not start with an epoch number", file.string(), line);
    }
    if (row_epoch > epoch) continue;
    GNNPIPE_CHECK_DATA(row_epoch >= 1 && (seen.empty() || row_epoch > seen.back()),
                       "{}: the row of epoch {} {} ({})", file.string(), row_epoch,
                       row_epoch < 1 ? "is not an epoch" : "is out of order or repeated", fix);
    seen.push_back(row_epoch);
    out += line + "\n";
  }
  std::vector<int> missing;
  for (int e = 1, i = 0; e <= epoch; ++e) {
    if (i < static_cast<int>(seen.size()) && seen[static_cast<std::size_t>(i)] == e) {
      ++i;
    } else {
      missing.push_back(e);
    }
  }
  GNNPIPE_CHECK_DATA(missing.empty(), "{}: lacks the row{} of epoch{} {}, and the checkpoint is after epoch {} ({})",
                     file.string(), missing.size() == 1 ? "" : "s", missing.size() == 1 ? "" : "s", epoch_ranges(missing),
                     epoch, fix);
  return out;
}

const std::vector<std::string>& RunDirectory::metric_columns() {
  static const std::vector<std::string> columns{"epoch",          "loss",          "train_acc",        "val_acc",
                                                "test_acc",       "batches_fit",   "batches_split",    "micro_batches",
                                                "batches_resampled", "batches_cut", "edges_cut",       "batches_retried",
                                                "peak_device_bytes", "epoch_time_s", "sample_s", "gather_s",
                                                "transfer_s", "train_s", "eval_s", "train_wait_data_s",
                                                "train_wait_eval_s", "trainer_wait_share", "eval_time_s", "seeds_per_s",
                                                "edges_per_s", "reserved_device_bytes", "stage_retries", "batches_layerwise",
                                                "layerwise_chunks"};
  return columns;
}

RunDirectory::RunDirectory(const config::ExperimentConfig& config, RunDirectoryOptions options)
    : extra_count_(options.extra_metrics.size()), augment_columns_(config.augment.enabled()) {
  std::vector<std::string> header = metric_columns();
  if (augment_columns_) {
    for (const char* name : {"aug_proposals", "aug_acceptances", "aug_acceptance_rate", "aug_delta_e", "aug_delta_v",
                             "aug_chain_s", "aug_wait_s"}) {
      header.emplace_back(name);
    }
  }
  for (const auto& name : options.extra_metrics) {
    check_metric_name(name);
    GNNPIPE_CHECK_CONFIG(std::find(header.begin(), header.end(), name) == header.end(),
                         "metrics column '{}' appears twice", name);
    header.push_back(name);
  }
  config::check_experiment_name(config.name);
  if (options.resume || options.lock) {
    // The run's own directory (--resume), or one the caller created, locked and checked (infer).
    GNNPIPE_CHECK_CONFIG(fs::is_directory(options.out), "{} {}: not a {}directory", options.resume ? "--resume" : "--out",
                         options.out.string(), options.resume ? "run " : "");
    path_ = options.out;
  } else {
    path_ = options.out.empty() ? create_fresh(options.runs_root, config.name + options.suffix + "-" + timestamp_now())
                                : create_out(options.out);
  }
  if (options.lock) {
    std::error_code ec;
    GNNPIPE_CHECK(fs::equivalent(options.lock->dir(), path_, ec), "the lock of {} is not for {}",
                  options.lock->dir().string(), path_.string());
    lock_ = std::move(options.lock);
  } else {
    lock_ = std::make_shared<const DirectoryLock>(path_);
  }
  // Another process may have written into --out between its check and the lock (and ended).
  if (!options.resume && !options.out.empty()) check_output_dir(path_, "--out");
  header_ = std::move(header);
  // A resume's rows are read (and checked) before anything is written.
  if (options.metrics && options.resume) kept_rows_ = resumed_metrics_rows(path_ / "metrics.csv", options.resume_after);
  if (options.unfinished_marker) {
    write_text(path_ / kUnfinished, "");
    marked_ = true;
  }
  write_text(path_ / "config.yaml", config::yaml_text(config.resolved.IsMap() ? config.resolved
                                                                               : config::to_yaml(config)));
  if (options.metrics) write_metrics_header();
  if (options.mirror_log) {
    core::add_log_file((path_ / "log.txt").string());
    mirror_log_ = true;
  }
}

void RunDirectory::finished() {
  if (!marked_) return;
  std::error_code ec;
  fs::remove(path_ / kUnfinished, ec);
  GNNPIPE_CHECK(!ec, "cannot remove '{}': {}", (path_ / kUnfinished).string(), ec.message());
  marked_ = false;
}

void RunDirectory::write_metrics_header() {
  if (metrics_.is_open()) metrics_.close();
  metrics_.open(path_ / "metrics.csv", std::ios::binary | std::ios::trunc);
  metrics_ << fmt::format("{}\n", fmt::join(header_, ",")) << kept_rows_;
  metrics_.flush();
  GNNPIPE_CHECK(metrics_.good(), "cannot write '{}'", (path_ / "metrics.csv").string());
}

void RunDirectory::name_score_columns(const std::string& metric) {
  if (!metrics_.is_open()) return;
  const std::string suffix = metric == "accuracy" ? "acc" : metric;
  check_metric_name(suffix);
  std::vector<std::string> header = header_;
  header[2] = "train_" + suffix;
  header[3] = "val_" + suffix;
  header[4] = "test_" + suffix;
  if (header == header_) return;
  GNNPIPE_CHECK(!rows_appended_, "{}: metrics.csv already has rows; its score columns cannot be renamed",
                path_.string());
  header_ = std::move(header);
  write_metrics_header();
}

RunDirectory::~RunDirectory() {
  if (mirror_log_) core::remove_log_files();
}

void RunDirectory::append_metrics(const EpochMetrics& row) {
  GNNPIPE_CHECK(row.extra.size() == extra_count_, "metrics row has {} extra values, the header {}", row.extra.size(),
                extra_count_);
  GNNPIPE_CHECK(metrics_.is_open(), "{}: this run directory keeps no metrics.csv", path_.string());
  const pipeline::MemoryCounters& m = row.memory;
  std::string line = fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}", row.epoch, row.loss, row.train_acc,
                                 row.val_acc, row.test_acc, m.fit, m.split, m.micro_batches, m.resampled, m.cut,
                                 m.edges_cut, m.retried, m.peak_bytes, row.epoch_time_s);
  const pipeline::WindowStats& w = row.window;
  const auto busy = [&](pipeline::Stage s) { auto it = w.busy_s.find(s); return it == w.busy_s.end() ? 0.0 : it->second; };
  const auto per_s = [&](int64_t n) { return row.epoch_time_s > 0 ? static_cast<double>(n) / row.epoch_time_s : 0.0; };
  line += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{}", busy(pipeline::Stage::kSample), busy(pipeline::Stage::kGather),
                      busy(pipeline::Stage::kTransfer), busy(pipeline::Stage::kTrain), busy(pipeline::Stage::kEval),
                      w.train_wait_input_s, w.train_wait_eval_s,
                      w.share_of(w.train_wait_input_s + w.train_wait_eval_s) / 100.0, row.eval_time_s, per_s(m.seeds),
                      per_s(m.edges), m.reserved_bytes, m.stage_retries);
  line += fmt::format(",{},{}", m.layerwise, m.chunks);
  if (augment_columns_) {
    const pipeline::AugmentCounters a = row.augment.value_or(pipeline::AugmentCounters{});
    line += fmt::format(",{},{},{},{},{},{},{}", a.proposals, a.acceptances, a.acceptance_rate(), a.delta_e, a.delta_v,
                        a.chain_s, a.wait_s);
  }
  for (const double value : row.extra) line += fmt::format(",{}", value);
  metrics_ << line << '\n';
  rows_appended_ = true;
  metrics_.flush();
  GNNPIPE_CHECK(metrics_.good(), "cannot write '{}'", (path_ / "metrics.csv").string());
  if (mirror_log_) core::logger().flush();
}

void RunDirectory::write_summary(const nlohmann::json& summary) {
  const fs::path temp = path_ / "summary.json.tmp";
  write_text(temp, summary.dump(2) + "\n");
  std::error_code ec;
  fs::rename(temp, path_ / "summary.json", ec);
  GNNPIPE_CHECK(!ec, "cannot write '{}': {}", (path_ / "summary.json").string(), ec.message());
}

const char* stop_status(const std::exception& e) {
  return dynamic_cast<const core::Interrupted*>(&e) != nullptr ? "interrupted" : "failed";
}

void RunDirectory::record_stop(const std::exception& e, nlohmann::json summary) noexcept {
  try {
    const std::string message = core::user_message(e);
    core::log_to_files(spdlog::level::err, message);
    summary["status"] = stop_status(e);
    summary["error"] = message;
    write_summary(summary);
  } catch (const std::exception& also) {
    core::logger().error("could not record how the job in {} ended: {}", path_.string(), also.what());
  }
}

}  // namespace gnnpipe::experiments
