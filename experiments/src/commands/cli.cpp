#include "gnnpipe/experiments/commands/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gnnpipe/core/build_info.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/process.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/experiments/commands/bench_command.hpp"
#include "gnnpipe/experiments/config/config_map.hpp"
#include "gnnpipe/experiments/config/reference.hpp"
#include "gnnpipe/experiments/commands/data_commands.hpp"
#include "gnnpipe/experiments/records/dir_lock.hpp"
#include "gnnpipe/experiments/commands/doctor.hpp"
#include "gnnpipe/experiments/commands/infer_command.hpp"
#include "gnnpipe/experiments/trainer.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/pipeline/nccl_collective.hpp"
#include "records/infer_output.hpp"
#include "commands/multi_seed.hpp"
#include "commands/report_command.hpp"
#include "stop_signals.hpp"
#include "commands/sweep.hpp"
#include "gnnpipe/experiments/training_sampler.hpp"
#include "ranks/feature_partition.hpp"
#include "ranks/job_ranks.hpp"
#include "ranks/rank_launcher.hpp"
#include "records/run_stats.hpp"

namespace gnnpipe::experiments {
namespace {

using core::ExitCode;

std::string version_text() {
  const auto& info = core::build_info();
  std::string text = fmt::format("gnnpipe {}\nbuild: {}, {}\ncuda: {}", info.version, info.build_type, info.compiler,
                                 info.cuda ? "on (archs " + info.cuda_archs + ")" : std::string("off"));
  const auto gpus = core::list_gpus();
  if (!core::cuda_probe().error.empty()) {
    text += "\ngpus: CUDA cannot be used: " + core::cuda_probe().error;
  } else if (gpus.empty()) {
    text += "\ngpus: none detected";
  }
  for (const auto& gpu : gpus) {
    text += fmt::format("\ngpu cuda:{}: {}, {}, sm_{}{}", gpu.index, gpu.name, core::format_bytes(gpu.total_memory_bytes),
                        gpu.compute_capability_major, gpu.compute_capability_minor);
  }
  return text;
}

// Options shared by the subcommands that take an experiment (docs/DESIGN.md §5).
struct ExperimentArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string out_dir;
  std::string data_dir;
};

void add_experiment_args(CLI::App& cmd, ExperimentArgs& args) {
  cmd.add_option("config", args.config, "experiment YAML file")->required();
  // One value per --set, so that `--set k=v CONFIG` does not take CONFIG as a second assignment.
  cmd.add_option("--set", args.sets, "override a key, value parsed as YAML: --set sampler.fanouts=[10,10] (repeatable; key=null removes it)")
      ->allow_extra_args(false);
  cmd.add_option("--out", args.out_dir, "run directory (default runs/<name>-<timestamp>)");
  cmd.add_option("--data-dir", args.data_dir, "base for relative dataset paths (default $GNNPIPE_DATA_DIR, else cwd)");
}

const std::vector<std::string> kCommands{"run", "bench", "infer", "report", "config", "data", "doctor"};

// The first word that is not an option (or the value of --log-level) when it is no command:
// "unknown command 'runn' (did you mean 'run'?)", which CLI11 would report as a missing command.
std::string unknown_command(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log-level") {
      ++i;
      continue;
    }
    if (arg.empty() || arg.front() == '-') continue;
    if (std::find(kCommands.begin(), kCommands.end(), arg) != kCommands.end()) return {};
    const std::string closest = config::closest_key(arg, kCommands);
    return fmt::format("unknown command '{}'{} (commands: {})", arg,
                       closest.empty() ? std::string() : " (did you mean '" + closest + "'?)", fmt::join(kCommands, ", "));
  }
  return {};
}

// The dataset of `experiment`, read from `config_file`: a ConfigError (a dataset.path that is not
// there) names the file as every other config error does.
graph::Dataset load_dataset_of(const config::ExperimentConfig& experiment, const std::string& config_file,
                               const std::string& data_dir_flag) {
  try {
    return load_training_dataset(experiment, graph::resolve_data_dir(data_dir_flag));
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", config_file, e.message());
  }
}

// The `run` command's arguments.
struct RunArgs {
  ExperimentArgs experiment;
  bool trace = false, plan = false;
  std::string resume;
  int ranks = 1;                  // --ranks: start mpirun with this many copies of the command
  std::vector<std::string> argv;  // the program's command line, for --ranks
  DatasetSource dataset;          // run_cli_throwing's: the dataset instead of dataset.path's
  bool in_library = false;        // run_cli_throwing's caller (not the gnnpipe program): no --ranks
};

CLI::App* add_run_command(CLI::App& app, RunArgs& args) {
  auto* run = app.add_subcommand("run", "train and evaluate an experiment, writing a run directory");
  add_experiment_args(*run, args.experiment);
  run->add_option("--resume", args.resume,
                  "continue the run in this run directory from its checkpoints/last (the same config; run.epochs "
                  "may be raised)");
  run->add_option("--ranks", args.ranks,
                  "train data-parallel as this many MPI ranks on this machine: starts mpirun -np N with this "
                  "command (docs/SCALE.md)")
      ->check(CLI::Range(1, 4096));
  run->add_flag("--trace", args.trace, "also write trace.json (Chrome trace of every stage; open in Perfetto)");
  run->add_flag("--plan", args.plan,
                "print the memory plan (budget, resident memory, what the governor does with epoch 1's batches) and "
                "exit without training");
  return run;
}

// The `infer` command's arguments; `cmd` tells whether --embeddings was given.
struct InferArgs {
  ExperimentArgs experiment;
  std::string checkpoint, limit;
  int embeddings = -1;
  bool logits = false;
  CLI::App* cmd = nullptr;
  CommandOutputs* outputs = nullptr;  // run_cli_throwing's: also given the arrays written
};

CLI::App* add_infer_command(CLI::App& app, InferArgs& args) {
  auto* infer = app.add_subcommand("infer", "memory-limited full-neighbor inference with a trained checkpoint");
  add_experiment_args(*infer, args.experiment);
  infer->add_option("--checkpoint", args.checkpoint, "checkpoint directory (RUN_DIR/checkpoints/best or .../last)")
      ->required();
  infer->add_option("--memory-limit", args.limit, "device memory budget, e.g. 2GiB (default: memory.limit)");
  infer->add_option("--embeddings", args.embeddings, "also write this layer's outputs (0-based) as embeddings_layerL.npy");
  infer->add_flag("--logits", args.logits, "also write logits.npy [nodes x classes]");
  args.cmd = infer;
  return infer;
}

// The `data` command's subcommands and their arguments.
struct DataArgs {
  CLI::App* info = nullptr;
  CLI::App* convert = nullptr;
  CLI::App* synth = nullptr;
  DataInfoArgs info_args;
  DataConvertArgs convert_args;
  DataSynthArgs synth_args;
};

void add_data_commands(CLI::App& app, DataArgs& args) {
  auto* data = app.add_subcommand("data", "inspect, convert and synthesize datasets");
  data->require_subcommand(1);
  DataInfoArgs& info_args = args.info_args;
  auto* info = data->add_subcommand("info", "counts, degrees, features, labels, splits and warnings of a dataset");
  info->add_option("path", info_args.path, "dataset directory or file (a dataset root is searched one level down)");
  info->add_option("--config", info_args.config, "an experiment YAML: inspect its dataset section instead of PATH");
  info->add_option("--data-dir", info_args.data_dir, "base of relative dataset paths in --config");
  info->add_option("--format", info_args.format, graph::io::dataset_format_names())
      ->capture_default_str();
  DataConvertArgs& convert_args = args.convert_args;
  auto* convert = data->add_subcommand("convert", "convert a dataset to the native format (meta.yaml + .npy)");
  convert->add_option("--from", convert_args.from, graph::io::dataset_format_names())
      ->capture_default_str();
  convert->add_option("src", convert_args.src, "source dataset")->required();
  convert->add_option("--out", convert_args.out, "output directory")->required();
  convert->add_option("--feature-dtype", convert_args.feature_dtype, "float32, float16 or bfloat16")->capture_default_str();
  convert->add_option("--random-features", convert_args.random_features,
                      "add seeded random features of this width (for datasets without features)");
  convert->add_option("--seed", convert_args.seed, "seed of --random-features")->capture_default_str();
  convert->add_flag("--force", convert_args.force, "write into an existing, non-empty --out directory");
  DataSynthArgs& synth_args = args.synth_args;
  auto* synth = data->add_subcommand("synth", "generate a synthetic graph with community structure (native format)");
  synth->add_option("--out", synth_args.out, "output directory")->required();
  synth->add_option("--nodes", synth_args.nodes, "number of nodes")->capture_default_str();
  synth->add_option("--avg-degree", synth_args.avg_degree, "average undirected degree")->capture_default_str();
  synth->add_option("--features", synth_args.features, "feature width")->capture_default_str();
  synth->add_option("--classes", synth_args.classes, "number of classes (= communities)")->capture_default_str();
  synth->add_option("--seed", synth_args.seed, "seed")->capture_default_str();
  synth->add_flag("--force", synth_args.force, "write into an existing, non-empty --out directory");
  args.info = info;
  args.convert = convert;
  args.synth = synth;
}

// The `doctor` command's arguments, as given (devices and bytes parsed when it runs).
struct DoctorArgs {
  DoctorOptions options;
  std::vector<std::string> devices;
  std::string bytes = "64MiB";
};

CLI::App* add_doctor_command(CLI::App& app, DoctorArgs& args) {
  auto* doctor = app.add_subcommand("doctor", "check devices, streams, pinned memory and copy bandwidth on this machine");
  doctor->add_option("--device", args.devices, "device(s) to check (default: cpu and every GPU)");
  doctor->add_option("--bytes", args.bytes, "size of each bandwidth test")->capture_default_str();
  doctor->add_option("--repeats", args.options.repeats, "bandwidth = best of this many copies")->capture_default_str();
  return doctor;
}

// A data-parallel job's rank above 0 (issue #42): it trains as rank 0 does, but rank 0 alone
// writes the run directory; this rank's goes to a private temporary directory, removed when the
// run ends, without checkpoints, and its console shows warnings and errors only.
struct FollowerRank {
  explicit FollowerRank(const JobRanks& ranks)
      : dir(std::filesystem::temp_directory_path() /
            fmt::format("gnnpipe-rank{}-of-{}-{}", ranks.rank(), ranks.size(), static_cast<long>(getpid()))) {
    core::set_log_level("warn");
  }
  ~FollowerRank() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::filesystem::path dir;
};

int run_ranked(const RunArgs& args, std::ostream& out, JobRanks& ranks);

// gnnpipe run --ranks N: runs `mpirun -np N` with the same command line without --ranks (as root
// with OpenMPI's consent flag, and --oversubscribe when N exceeds the usable CPUs; no stdin: mpirun
// runs in a process group of its own, rank_launcher.hpp) and returns its exit status. ConfigError
// when already started as ranks, Error when mpirun cannot be started.
int start_ranks(const RunArgs& args) {
  GNNPIPE_CHECK_CONFIG(launched_ranks() == 1, "--ranks {}: this process was already started as {} ranks by a launcher",
                       args.ranks, launched_ranks());
  std::vector<std::string> command{"mpirun", "--stdin", "none", "-np", std::to_string(args.ranks)};
  if (geteuid() == 0) command.emplace_back("--allow-run-as-root");
  if (args.ranks > core::usable_cpus().usable) command.emplace_back("--oversubscribe");
  // This very program (argv[0] may be a relative name), then its arguments without --ranks.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  command.push_back(ec ? args.argv.at(0) : self.string());
  for (std::size_t i = 1; i < args.argv.size(); ++i) {
    const std::string& a = args.argv[i];
    if (a == "--ranks") {
      ++i;  // and its value
    } else if (!a.starts_with("--ranks=")) {
      command.push_back(a);
    }
  }
  return run_rank_launcher(command);
}

// gnnpipe run: one run directory, or one per sweep point or seed; --plan prints the memory plan.
// Started by mpirun as several ranks: one data-parallel run (run_ranked).
int run_command(const RunArgs& args, std::ostream& out) {
  // --ranks re-runs this program under mpirun; a library caller (the Python module) is another
  // program, which starts its ranks itself (gnnpipe.run(..., ranks=N)).
  GNNPIPE_CHECK_CONFIG(args.ranks <= 1 || !args.in_library,
                       "--ranks: an option of the gnnpipe program; from Python use gnnpipe.run(..., ranks=N)");
  if (args.ranks > 1) return start_ranks(args);
  JobRanks ranks;
  if (ranks.size() <= 1) return run_ranked(args, out, ranks);
  try {
    return run_ranked(args, out, ranks);
  } catch (const core::Interrupted&) {
    throw;  // every rank stopped before the same step (pipeline: stop_signal), none waits
  } catch (const std::exception& e) {
    // Every rank must end: the others would wait for this one in the step's sum.
    fmt::print(stderr, "gnnpipe: rank {} of {}: {}\n", ranks.rank(), ranks.size(), core::user_message(e));
    std::fflush(stderr);
    ranks.abort(static_cast<int>(core::exit_code_for(e)));
    throw;
  }
}

int run_ranked(const RunArgs& args, std::ostream& out, JobRanks& ranks) {
  const ExperimentArgs& run_args = args.experiment;
  const std::string& run_resume = args.resume;
  const bool run_plan = args.plan;
  config::ExperimentConfig experiment = config::load_experiment(run_args.config, run_args.sets);
  check_training_supported(experiment);
  std::optional<FollowerRank> follower;
  if (ranks.size() > 1) {
    GNNPIPE_CHECK_CONFIG(!run_plan && experiment.run.seeds.empty() && experiment.sweep.empty(),
                         "{} ranks: --plan, run.seeds and sweep are not data-parallel yet; run them in one process",
                         ranks.size());
    if (ranks.rank() > 0) {
      follower.emplace(ranks);
      experiment.run.checkpoint_every = 0;
    }
  }
  // --out before the dataset: a minute of loading must not end in "--out exists".
  // (Rank 0's: the other ranks write elsewhere, and rank 0 may have made it already.)
  if (!run_args.out_dir.empty() && run_resume.empty() && !run_plan && !follower) check_output_dir(run_args.out_dir, "--out");
  TrainOptions train_options;
  RunDirectoryOptions dir_options;
  dir_options.out = run_args.out_dir;
  if (!run_resume.empty() && !run_plan) {
    GNNPIPE_CHECK_CONFIG(experiment.run.seeds.empty() && experiment.sweep.empty(),
                         "--resume: give one run's directory (<dir>/seed-N, a sweep point) and its config.yaml, "
                         "not a config with run.seeds or sweep");
    GNNPIPE_CHECK_CONFIG(run_args.out_dir.empty() || std::filesystem::path(run_args.out_dir) == run_resume,
                         "--out {}: a resumed run writes into its own directory ({})", run_args.out_dir, run_resume);
    GNNPIPE_CHECK_CONFIG(std::filesystem::is_directory(run_resume), "--resume {}: not a directory", run_resume);
    if (follower) {
      // Rank 0 holds the directory's lock and writes it; this rank only reads the checkpoint
      // (written whole, and not again before this rank takes part in a step).
      train_options.resume = load_resume_checkpoint(experiment, run_resume);
    } else {
      // Locked before its checkpoint is read (and to the end): a second process on the same
      // directory is refused before either reads or writes a file. Checked before the dataset.
      dir_options.lock = std::make_shared<const DirectoryLock>(run_resume);
      train_options.resume = load_resume_checkpoint(experiment, run_resume);
      dir_options.out = run_resume;
      dir_options.resume = true;
      dir_options.resume_after = train_options.resume->epoch;
    }
  }
  graph::Dataset dataset = args.dataset ? training_dataset_from(experiment, args.dataset())
                                        : load_dataset_of(experiment, run_args.config, run_args.data_dir);
  // (Collective; `dataset` ends before `ranks`, which frees the shard's window.)
  partition_features(dataset, experiment.dataset.partition, ranks, partition_cache_dir(experiment.sampler));
  if (run_plan) {
    for (const std::string& line : plan_experiment(experiment, dataset).lines()) fmt::print(out, "{}\n", line);
    return 0;
  }
  train_options.trace = args.trace;
  // A progress line only where someone watches: a terminal, at info level or more verbose.
  train_options.progress = isatty(fileno(stderr)) == 1 && core::console_log_level() <= spdlog::level::info;
  const StopSignals stop_signals;
  train_options.stop_request = &stop_signals.flag();
  // sweep: a run directory per point; run.seeds: per seed (sweep.hpp, multi_seed.hpp).
  if (!experiment.sweep.empty() || !experiment.run.seeds.empty()) {
    if (!experiment.sweep.empty()) {
      train_sweep(experiment, dataset, graph::resolve_data_dir(run_args.data_dir), dir_options, train_options, out);
    } else {
      train_seeds(experiment, dataset, dir_options, train_options, out);
    }
    return 0;
  }
  train_options.collective = ranks.collective();
  std::unique_ptr<pipeline::Collective> gpu_sums;
  if (ranks.size() > 1 && experiment.run.device.is_cuda()) {
    // GPU ranks: each its own GPU (run.device's index plus its place on its machine), the step's
    // sums through NCCL on the train stream, the host's (stop requests, checksums) through MPI.
    const int gpu = experiment.run.device.index() + ranks.local_rank();
    GNNPIPE_CHECK_CONFIG(gpu < core::cuda_device_count(),
                         "run.device {}: rank {} of {} is number {} on its machine and would use cuda:{}, and the "
                         "machine has {} GPU(s); start at most one rank per GPU",
                         experiment.run.device.str(), ranks.rank(), ranks.size(), ranks.local_rank(), gpu,
                         core::cuda_device_count());
    experiment.run.device = core::Device::cuda(gpu);
    gpu_sums = pipeline::make_nccl_collective(ranks.collective(), ranks.rank(), ranks.size(), experiment.run.device,
                                              [&](std::span<std::byte> id) { ranks.broadcast(id); });
    train_options.collective = gpu_sums.get();
  }
  if (follower) dir_options.out = follower->dir.string();
  RunDirectory run_dir(experiment, dir_options);
  core::logger().info("run directory {}", run_dir.path().string());
  nlohmann::json summary = train_experiment(experiment, dataset, run_dir, train_options);
  if (ranks.size() > 1) {
    // Every rank's stage table in rank 0's summary.json (rank order).
    nlohmann::json mine = {{"rank", ranks.rank()},
                           {"epoch_time_s", summary["epoch_time_s"]},
                           {"run_time_s", summary["run_time_s"]},
                           {"trainer_wait_s", summary["trainer_wait_s"]},
                           {"stage_busy_s", summary["stage_busy_s"]},
                           {"stage_detail", summary["stage_detail"]},
                           {"peak_host_bytes", summary["memory"]["peak_host_bytes"]},
                           {"host_bytes_at_end", core::rss_bytes()},
                           {"host_private_bytes_at_end", core::anon_rss_bytes()},
                           {"host_shared_bytes_at_end", core::shmem_rss_bytes()}};
    if (summary.contains("feature_partition")) mine["feature_partition"] = summary["feature_partition"];
    const std::vector<std::string> all = ranks.gather(mine.dump());
    if (follower) return 0;
    summary["rank_stages"] = nlohmann::json::array();
    for (const std::string& text : all) summary["rank_stages"].push_back(nlohmann::json::parse(text));
    run_dir.write_summary(summary);
  }
  fmt::print(out, "{}: test {} {:.4f} at epoch {} (val {:.4f}){}; summary in {}\n", experiment.name,
             metric_label(metric_of(summary)), summary[score_key(summary, "test")].get<double>(),
             summary["best_epoch"].get<int>(), summary[score_key(summary, "val")].get<double>(),
             experiment.dataset.random_features > 0 ? " (random features: the accuracy is not meaningful)" : "",
             (run_dir.path() / "summary.json").string());
  return 0;
}

// gnnpipe bench: one config with one seed, sequential and pipelined (bench.json).
// Commands that run in one process: started by mpirun as several ranks, each would write the same
// --out (only `run` is data-parallel).
void check_single_process(const char* command) {
  GNNPIPE_CHECK_CONFIG(launched_ranks() == 1,
                       "gnnpipe {} runs in one process, and this one was started as {} ranks: run it without mpirun "
                       "(only gnnpipe run trains data-parallel)",
                       command, launched_ranks());
}

int bench_command(const ExperimentArgs& bench_args, std::ostream& out) {
  check_single_process("bench");
  const config::ExperimentConfig experiment = config::load_experiment(bench_args.config, bench_args.sets);
  check_training_supported(experiment);
  GNNPIPE_CHECK_CONFIG(experiment.run.seeds.empty() && experiment.sweep.empty(),
                       "{}: run.seeds / run.runs / sweep: gnnpipe bench trains one config with one seed "
                       "(run.seed); leave them out", bench_args.config);
  if (!bench_args.out_dir.empty()) check_output_dir(bench_args.out_dir, "--out");
  const graph::Dataset dataset = load_dataset_of(experiment, bench_args.config, bench_args.data_dir);
  run_bench(experiment, dataset, bench_args.out_dir, out);
  return 0;
}

// gnnpipe infer: layer-wise inference with a checkpoint under a memory budget.
int infer_command(const InferArgs& args, std::ostream& out) {
  check_single_process("infer");
  const ExperimentArgs& infer_args = args.experiment;
  const config::ExperimentConfig experiment = config::load_experiment(infer_args.config, infer_args.sets);
  // An unfinished infer's --out (killed, or failed) is taken over; see infer_output.hpp.
  if (!infer_args.out_dir.empty()) check_infer_output_dir(infer_args.out_dir);
  InferOptions options;
  options.checkpoint = args.checkpoint;
  if (!args.limit.empty()) options.memory_limit = core::parse_bytes(args.limit);
  if (args.cmd->count("--embeddings") > 0) options.embeddings_layer = args.embeddings;
  options.logits = args.logits;
  options.data_dir = graph::resolve_data_dir(infer_args.data_dir);
  options.out.out = infer_args.out_dir;
  options.outputs = args.outputs;
  const nlohmann::json summary = infer_experiment(experiment, options);
  const auto& test = summary[score_key(summary, "test")];
  fmt::print(out, "{}: {} nodes in {:.3f} s, test {} {}; {} chunks, {} rows cut; summary in {}\n",
             experiment.name, summary["nodes"].get<int64_t>(), summary["time_s"].get<double>(),
             metric_label(metric_of(summary)),
             test.is_null() ? std::string("n/a") : fmt::format("{:.4f}", test.get<double>()),
             summary["chunks"].get<int64_t>(), summary["rows_cut"].get<int64_t>(),
             summary["output_dir"].get<std::string>() + "/summary.json");
  return 0;
}

// gnnpipe doctor: exit code kDevice when a check failed.
int doctor_command(DoctorArgs& args, std::ostream& out) {
  for (const auto& text : args.devices) args.options.devices.push_back(core::Device::parse(text));
  args.options.copy_bytes = core::parse_bytes(args.bytes);
  const DoctorReport doctor_report = run_doctor(args.options, out);
  return static_cast<int>(doctor_report.ok ? ExitCode::kOk : ExitCode::kDevice);
}

}  // namespace

namespace {

int run_cli_impl(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool rethrow,
                 const DatasetSource& dataset, CommandOutputs* outputs) {
  CLI::App app{"gnnpipe: pipelined, sampling-based GNN training on graphs too large for full-batch GPU training",
               "gnnpipe"};
  app.set_version_flag("--version", version_text, "print version, build type, CUDA support and detected GPUs");
  app.require_subcommand(1);
  // Options of the program are accepted after the command too (gnnpipe run CONFIG --log-level debug).
  app.fallthrough();
  std::string log_level;
  bool quiet = false, verbose = false;
  app.add_option("--log-level", log_level, "console level: trace, debug, info (default), warn, error or off; "
                                           "log.txt always has every line at info and above");
  app.add_flag("-q,--quiet", quiet, "console: warnings and errors only (--log-level warn)");
  app.add_flag("-v,--verbose", verbose, "console: debug lines too (--log-level debug)");

  // The commands in the order --help lists them.
  RunArgs run_args;
  run_args.argv.assign(argv, argv + argc);
  run_args.dataset = dataset;
  run_args.in_library = rethrow;
  auto* run = add_run_command(app, run_args);
  ExperimentArgs bench_args;
  auto* bench = app.add_subcommand("bench", "run the sequential baseline and the pipeline side by side (bench.json)");
  add_experiment_args(*bench, bench_args);
  InferArgs infer_args;
  infer_args.outputs = outputs;
  auto* infer = add_infer_command(app, infer_args);
  ReportArgs report_args;
  auto* report = app.add_subcommand("report", "one table (Markdown; --csv) over run directories, by the config keys that differ");
  report->add_option("dirs", report_args.dirs, "run directories, multi-seed parents, or directories holding them")
      ->required();
  report->add_option("--csv", report_args.csv, "also write the table as CSV to this file");
  bool config_reference_flag = false;
  auto* config_cmd = app.add_subcommand("config", "about experiment configs: --reference prints every key (docs/CONFIG.md)");
  config_cmd->add_flag("--reference", config_reference_flag, "print the Markdown reference of every config key")->required();
  DataArgs data_args;
  add_data_commands(app, data_args);
  DoctorArgs doctor_args;
  auto* doctor = add_doctor_command(app, doctor_args);

  if (const std::string problem = unknown_command(argc, argv); !problem.empty()) {
    fmt::print(err, "gnnpipe: {}\n", problem);
    return static_cast<int>(ExitCode::kUsage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rethrow && e.get_exit_code() != 0) GNNPIPE_THROW(ConfigError, "{}", e.what());
    const int code = app.exit(e, out, err);
    return code == 0 ? 0 : static_cast<int>(ExitCode::kUsage);
  }

  try {
    core::set_log_level(!log_level.empty() ? log_level : quiet ? "warn" : verbose ? "debug" : "info");
    if (*run) return run_command(run_args, out);
    if (*bench) return bench_command(bench_args, out);
    if (*infer) return infer_command(infer_args, out);
    if (*report) return report_runs(report_args, out);
    if (*config_cmd) {
      fmt::print(out, "{}", config::config_reference());
      return 0;
    }
    if (*data_args.info) return data_info(data_args.info_args, out);
    if (*data_args.convert) return data_convert(data_args.convert_args, out);
    if (*data_args.synth) return data_synth(data_args.synth_args, out);
    if (*doctor) return doctor_command(doctor_args, out);
  } catch (const std::exception& e) {
    if (rethrow) throw;
    fmt::print(err, "gnnpipe: {}\n", core::user_message(e));
    core::logger().debug("{}", e.what());
    return static_cast<int>(core::exit_code_for(e));
  }
  return static_cast<int>(ExitCode::kInternal);
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  return run_cli_impl(argc, argv, out, err, /*rethrow=*/false, {}, nullptr);
}

int run_cli_throwing(int argc, const char* const* argv, std::ostream& out, const DatasetSource& dataset,
                     CommandOutputs* outputs) {
  std::ostringstream err;  // usage text of --help and the like; errors are thrown
  return run_cli_impl(argc, argv, out, err, /*rethrow=*/true, dataset, outputs);
}

}  // namespace gnnpipe::experiments
