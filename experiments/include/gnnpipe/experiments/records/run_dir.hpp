#pragma once
// The run directory of one experiment (docs/DESIGN.md §5):
//   config.yaml   the resolved config, written on construction
//   log.txt       every log line while the RunDirectory lives (core::add_log_file)
//   metrics.csv   one row per epoch: epoch,loss,train_acc,val_acc,test_acc, what the memory governor
//                 did (batches_fit,batches_split,micro_batches,batches_resampled,batches_cut,
//                 edges_cut,batches_retried), then the columns that may differ between the pipelined
//                 and sequential modes: peak_device_bytes,epoch_time_s, the epoch window's stage
//                 busy and wait seconds (sample_s,gather_s,transfer_s,train_s,eval_s,
//                 train_wait_data_s,train_wait_eval_s), trainer_wait_share (of the epoch),
//                 eval_time_s (its evaluation's own), seeds_per_s, edges_per_s (trained on),
//                 reserved_device_bytes, stage_retries (stage executions run again after a
//                 transient error: pipeline.stage_retries), batches_layerwise, layerwise_chunks,
//                 with augment on MH-Aug's chain (aug_proposals, aug_acceptances,
//                 aug_acceptance_rate, aug_delta_e, aug_delta_v, aug_chain_s, aug_wait_s)[,extra...]
//   summary.json  written only by an explicit write_summary() call, atomically (temp file + rename),
//                 so a run that fails before its end leaves no summary.json that claims success.
//   .lock         the DirectoryLock every RunDirectory holds while it lives (one process at a time)
//   .unfinished   (RunDirectoryOptions::unfinished_marker: gnnpipe infer) from before config.yaml
//                 until finished(): the directory of a job that never finished
// Not thread-safe: one thread (the runner) owns it.
#include <nlohmann/json.hpp>

#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/experiments/records/dir_lock.hpp"
#include "gnnpipe/pipeline/augment_counters.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"

namespace gnnpipe::experiments {

struct RunDirectoryOptions {
  // --out: this exact directory; created if missing, ConfigError if it exists and is not empty
  // (a lone .lock left by a process that wrote nothing does not count) or cannot be created.
  // Empty: a fresh `<runs_root>/<name>-<YYYYmmdd-HHMMSS>` (with "-2", "-3", ... if that is taken).
  std::filesystem::path out;
  std::filesystem::path runs_root = "runs";
  // metrics.csv columns after the fixed ones; names of [A-Za-z0-9_] only, no repeats.
  std::vector<std::string> extra_metrics;
  bool mirror_log = true;  // false: no log.txt (tests that must not touch the shared logger)
  // Resuming (gnnpipe run --resume): `out` is the existing run directory; config.yaml is
  // rewritten, metrics.csv keeps its header and the rows of epochs up to resume_after and is
  // appended to, log.txt is appended to. DataError naming metrics.csv, before anything is
  // written, when it is missing or lacks a row of one of those epochs (a resume would lose them).
  bool resume = false;
  int resume_after = 0;
  // gnnpipe infer: no metrics.csv, and a fresh directory named `<name><suffix>-<timestamp>`.
  bool metrics = true;
  std::string suffix;
  // The caller's lock on `out`, which it created (or, resuming, found) and checked: gnnpipe run
  // --resume locks before reading the checkpoint, gnnpipe infer before clearing an unfinished
  // --out. Null: the RunDirectory locks its directory itself before writing into it. Either way
  // the directory stays locked while the RunDirectory lives.
  std::shared_ptr<const DirectoryLock> lock;
  // gnnpipe infer: write kUnfinished before anything else, for finished() to remove.
  bool unfinished_marker = false;
};

// Checks, before any work is done, that `out` can be a new output directory: it does not exist
// and its nearest existing ancestor is a writable directory, or it is an empty writable directory
// (a lone DirectoryLock file counts as empty; any writable directory when `allow_files`, for
// `data ... --force`). ConfigError (exit 2) naming
// `option` and the problem otherwise, e.g. "--out runs/x: exists and is not empty (choose a new
// directory)". `hint` is appended to the not-empty message.
void check_output_dir(const std::filesystem::path& out, const std::string& option, bool allow_files = false,
                      const std::string& hint = "choose a new directory");

// The rows of a run's metrics.csv (below its header) that a resume after epoch `epoch` keeps:
// those of epochs 1..`epoch`, each once and in order (rows of later epochs are trained again; a
// last line without its newline, cut short by a kill, is dropped). DataError naming the file, and
// the epochs it lacks, when it is missing or lacks one: a resume would lose them.
std::string resumed_metrics_rows(const std::filesystem::path& file, int epoch);

// One metrics.csv row. `extra` has one value per RunDirectoryOptions::extra_metrics, in order.
struct EpochMetrics {
  int epoch = 0;
  double loss = 0;
  double train_acc = 0;
  double val_acc = 0;
  double test_acc = 0;
  pipeline::MemoryCounters memory;
  double epoch_time_s = 0;
  std::vector<double> extra;
  // Where the epoch's wall time went (its window), and its evaluation's own time.
  pipeline::WindowStats window;
  double eval_time_s = 0;
  // With augment on (the columns follow the fixed ones: aug_proposals, aug_acceptances,
  // aug_acceptance_rate, aug_delta_e, aug_delta_v, aug_chain_s, aug_wait_s).
  std::optional<pipeline::AugmentCounters> augment{};
};

// The status a job stopped by `e` records: "interrupted" for core::Interrupted (a signal), else
// "failed".
const char* stop_status(const std::exception& e);

class RunDirectory {
 public:
  // The marker of an unfinished directory (RunDirectoryOptions::unfinished_marker).
  static constexpr const char* kUnfinished = ".unfinished";

  // The fixed metrics.csv columns, in order.
  static const std::vector<std::string>& metric_columns();

  // Creates the directory, writes config.yaml (config.resolved, or to_yaml(config) when that is
  // empty) and the metrics.csv header, and starts mirroring the log into log.txt.
  // ConfigError for an --out that exists and is not empty or for bad extra metric names; Error
  // when a file cannot be written.
  RunDirectory(const config::ExperimentConfig& config, RunDirectoryOptions options);
  // Stops the log mirroring (core::remove_log_files: every file sink, as only one run lives at a time).
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Names metrics.csv's three score columns after the run's metric: train_acc, val_acc, test_acc
  // for accuracy (the header written at construction), train_micro_f1, ... otherwise. Before the
  // first row (the run's metric is known once its dataset is); no-op without metrics.csv.
  void name_score_columns(const std::string& metric);

  // Appends and flushes one row (numbers in their shortest exact form) and flushes the log.
  // Error when row.extra does not match the extra columns or the write fails.
  void append_metrics(const EpochMetrics& row);

  // Writes summary.json (2-space indented) via summary.json.tmp and a rename, replacing any
  // earlier summary. Error when it cannot be written.
  void write_summary(const nlohmann::json& summary);

  // How a job that threw `e` ended, recorded in this directory: the error in log.txt, and
  // `summary` with "status" (stop_status(e)) and "error" (its one-line message) as summary.json.
  // Never throws: a failure to record is logged (the caller rethrows `e`).
  void record_stop(const std::exception& e, nlohmann::json summary) noexcept;

  // Removes kUnfinished (the job's outputs are complete); no-op without the marker option.
  void finished();

 private:
  void write_metrics_header();  // (re)writes metrics.csv: header_ and kept_rows_

  std::shared_ptr<const DirectoryLock> lock_;  // first: released last
  std::filesystem::path path_;
  std::size_t extra_count_ = 0;
  bool augment_columns_ = false;
  std::ofstream metrics_;
  std::vector<std::string> header_;
  std::string kept_rows_;  // a resumed run's rows, below the header
  bool rows_appended_ = false;
  bool mirror_log_ = false;
  bool marked_ = false;  // kUnfinished is there
};

}  // namespace gnnpipe::experiments
