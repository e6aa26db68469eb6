#pragma once
// The whole experiment (docs/DESIGN.md §5): every section parsed strictly into the options structs that
// the modules own, after `--set key.path=value` overrides. Each ConfigError names the full key
// path ("model.hidden: must be >= 1, got 0") and, for a typo, the closest known key.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/memory/memory_options.hpp"
#include "gnnpipe/models/model_options.hpp"
#include "gnnpipe/models/op_context.hpp"
#include "gnnpipe/models/optimizer_options.hpp"
#include "gnnpipe/pipeline/pipeline_options.hpp"
#include "gnnpipe/samplers/augment_options.hpp"
#include "gnnpipe/samplers/sampler_options.hpp"

namespace gnnpipe::experiments::config {

// The `run:` section.
struct RunOptions {
  core::Device device = core::Device::cpu();
  int epochs = 10;     // >= 1
  uint64_t seed = 0;   // the only source of randomness of a run (with epoch and batch ids)
  // run.seeds: [0, 1, 2] (or run.runs: N, meaning seed, seed+1, ...): one run directory per seed
  // and a summary over them. Empty: one run with `seed`.
  std::vector<uint64_t> seeds;
  int patience = 0;    // stop after this many epochs without a better validation score; 0 = off
  // run.metric: the score best epoch and patience follow (pipeline::Score; auto from the labels).
  pipeline::Score metric = pipeline::Score::kAuto;
  // Checkpoints (issue #15): checkpoints/last at every evaluated epoch that is a multiple of
  // checkpoint_every (and the last), checkpoints/best at every new best evaluation; 0 = none.
  int checkpoint_every = 1;
  // How many checkpoints of due epochs stay: 1 keeps checkpoints/last alone; K > 1 also keeps
  // checkpoints/epoch-NNNNNN of the K most recent ones (the newest is last's epoch). >= 1.
  int keep_last = 1;
  // checkpoints/last is taken at most once per this many seconds of the run (the first due
  // epoch, the last epoch and a stop request's always); 0 = every due epoch. Ignored (0) with
  // keep_last > 1, whose epoch copies are of every due epoch. Written on a thread of its own.
  double checkpoint_interval_s = 10;
  // Seconds with no stage beginning or finishing an item before the run is declared stalled
  // (what each thread holds is printed and recorded, exit code 6); 0 = off. Must exceed the
  // longest single item (an evaluation of a large graph).
  double stall_timeout_s = 0;
  // CUDA only: run.tf32 (cuBLAS may use TF32 tensor cores; off keeps CPU parity) and run.spmm
  // (kernel | cusparse: which SpMM aggregates).
  models::OpOptions ops;

  bool operator==(const RunOptions&) const = default;
};

// One axis of a `sweep:` block: a --set key path and the values it takes (YAML flow text each).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  bool operator==(const SweepAxis&) const = default;
};

struct ExperimentConfig {
  std::string name;  // required; names the run directory, so a safe file-name component
  graph::DatasetOptions dataset;
  models::ModelOptions model;
  samplers::SamplerOptions sampler;
  models::OptimizerOptions optimizer;
  pipeline::PipelineOptions pipeline;
  memory::MemoryOptions memory;
  RunOptions run;
  // augment: MH-Aug (issue #41); absent from config.yaml when off, so older runs keep their hash.
  samplers::AugmentOptions augment;
  // sweep: {model.hidden: [64, 128], optimizer.lr: [0.01, 0.003]}: the grid of runs (every
  // combination, the first key varying slowest), each the config with those keys set (sweep.hpp).
  // Every combination is parsed with the rest of the config (errors before any run).
  std::vector<SweepAxis> sweep;
  // The configuration as run: the file after overrides, every default filled in (= to_yaml of the
  // fields above). Written to the run directory as config.yaml; parsing it gives the same config.
  YAML::Node resolved;
};

// Whether every setting of `a` equals `b`'s (all fields but `resolved`).
bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b);

// The grid of a sweep: one list of "key=value" assignments per run, the first axis varying
// slowest; empty for no sweep.
std::vector<std::vector<std::string>> sweep_points(const std::vector<SweepAxis>& sweep);

// Reads the experiment file, applies `sets` in order (see apply_set), and parses it (see
// parse_experiment). ConfigError "<file>: <problem>" for a bad file or value; a bad --set
// assignment is a ConfigError naming the assignment.
ExperimentConfig load_experiment(const std::filesystem::path& file, const std::vector<std::string>& sets);

// Applies `sets` to a copy of `root` (which is not modified) and parses every section strictly:
// keys repeated within a mapping (check_unique_keys), unknown keys, types and value ranges, `name` required, `dataset` required, and the cross-section
// rule that a neighbor sampler has at most one fanout per model layer. Fills `resolved`.
ExperimentConfig parse_experiment(const YAML::Node& root, const std::vector<std::string>& sets = {});

// Applies one "key.path=value" assignment to `root` in place. The value is parsed as YAML
// ("sampler.fanouts=[10,10]", "memory.limit=8GiB"); blanks around the key and the value are
// ignored. Missing sections are created. ConfigError when there is no '=', the key or the value is
// empty (an unset shell variable must not silently mean the default), the value is not YAML, or
// the key path is not in the schema (naming the first unknown component and the closest key).
void apply_set(YAML::Node& root, const std::string& assignment);

// The config as YAML with every default filled in: the keys of the sections' types only (e.g. no
// `heads` for a sage model, no `momentum` for adam), so that parse_experiment(to_yaml(c)) == c.
YAML::Node to_yaml(const ExperimentConfig& config);

// The schema: the defaults with the keys of every type (what --set paths are checked against).
YAML::Node to_yaml_schema();

// Every leaf of `node` by its dotted key path ("model.hidden" -> "256"), values in YAML flow text.
std::map<std::string, std::string> flat_keys(const YAML::Node& node);

// `node` as YAML text (block style, lists of numbers in flow style), ending in a newline.
std::string yaml_text(const YAML::Node& node);

}  // namespace gnnpipe::experiments::config
