#pragma once
// The config keys, one row each (issue 37): what the parser reads and checks, what the emitter
// writes to config.yaml and to the schema that --set paths are checked against, and what
// `gnnpipe config --reference` says of the key. Parser (sections.cpp, dataset_section.cpp),
// emitter (experiment_config.cpp) and reference (reference.cpp) all read these tables, so adding
// a key means adding its row (and its field to the options struct).
//
// The options structs stay in their modules with their in-class defaults (only experiments sees
// YAML): a row reads and writes one field of its section's struct, and a key left out keeps the
// struct's default, which is therefore also the default the reference shows (a row may give
// another: sampler.batch_size's depends on sampler.type).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gnnpipe/experiments/config/config_map.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"

namespace gnnpipe::experiments::config {

// What the reference says of a key (reference.hpp's KeyDoc, without the path).
struct KeyText {
  std::string type;     // "integer", "number", "string", "boolean", "list of integers", "bytes", ...
  std::string read_by;  // which types read it ("all", "sampler.type neighbor", ...)
  std::string meaning;
};

// One key of a section whose options struct is `Options`. The rows of a section are read, written
// and documented in table order (the order of config.yaml; of two bad keys, the first is
// reported); keys a row's `applies` depends on (the section's `type`) come first.
template <class Options>
struct Key {
  std::string name;  // within its section ("hidden"); the key path is "<section>.<name>"
  KeyText doc;
  // Reads the key `name` (absent: the field keeps its default) and checks the value: a
  // ConfigError naming the key path ("model.hidden: must be >= 1, got 0") otherwise.
  void (*read)(ConfigMap& section, const std::string& name, Options&) = nullptr;
  // The key's value as config.yaml holds it.
  YAML::Node (*write)(const Options&) = nullptr;
  // Whether the options read the key (e.g. the section's type uses it); nullptr: always. Where it
  // does not, the key given is a ConfigError "<path>: only for <only_for>", and the schema still
  // holds it.
  bool (*applies)(const Options&) = nullptr;
  const char* only_for = "";
  // Whether config.yaml holds a key that applies (e.g. only when set, so that older runs keep
  // their resolved config and config hash); nullptr: always.
  bool (*written)(const Options&) = nullptr;
  // Where the key does not apply, what the field is set to instead; nullptr: it keeps its default.
  void (*unread)(Options&) = nullptr;
};

// Reads every key of `keys` from `section` into `options`, in table order (section.finish() is the
// caller's: some sections read more keys by hand).
template <class Options>
void read_keys(ConfigMap& section, Options& options, const std::vector<Key<Options>>& keys) {
  for (const Key<Options>& key : keys) {
    if (key.applies == nullptr || key.applies(options)) {
      key.read(section, key.name, options);
      continue;
    }
    GNNPIPE_CHECK_CONFIG(!section.has(key.name), "{}: only for {}", section.key_path(key.name), key.only_for);
    if (key.unread != nullptr) key.unread(options);
  }
}

// The keys of `keys` that config.yaml holds for `options` as a YAML mapping, in table order;
// `every_key`: all of them (the schema).
template <class Options>
YAML::Node write_keys(const Options& options, const std::vector<Key<Options>>& keys, bool every_key) {
  YAML::Node node(YAML::NodeType::Map);
  for (const Key<Options>& key : keys) {
    const bool applies = key.applies == nullptr || key.applies(options);
    if (every_key || (applies && (key.written == nullptr || key.written(options)))) node[key.name] = key.write(options);
  }
  return node;
}

// The tables, one per section (and per nested section of `dataset`).
const std::vector<Key<graph::DatasetOptions>>& dataset_keys();       // dataset.* but keys, synthetic
const std::vector<Key<graph::io::ArrayKeys>>& dataset_array_keys();  // dataset.keys.*
const std::vector<Key<graph::SyntheticOptions>>& synthetic_keys();   // dataset.synthetic.*
const std::vector<Key<models::ModelOptions>>& model_keys();
const std::vector<Key<samplers::SamplerOptions>>& sampler_keys();
const std::vector<Key<models::OptimizerOptions>>& optimizer_keys();
const std::vector<Key<pipeline::PipelineOptions>>& pipeline_keys();
const std::vector<Key<memory::MemoryOptions>>& memory_keys();
const std::vector<Key<RunOptions>>& run_keys();
const std::vector<Key<samplers::AugmentOptions>>& augment_keys();

// The documentation of the keys that no table reads: `name`, `sweep` and the sections themselves
// (the parser reads them by hand), by key path.
const std::vector<std::pair<std::string, KeyText>>& unread_key_docs();

// Value checks shared by the rows: ConfigError "<path>: must be ..." naming the key.
template <class T>
void check_at_least(const ConfigMap& section, const std::string& key, T value, T min) {
  GNNPIPE_CHECK_CONFIG(value >= min, "{}: must be >= {}, got {}", section.key_path(key), min, value);
}
void check_positive(const ConfigMap& section, const std::string& key, double value);
void check_fraction(const ConfigMap& section, const std::string& key, double value);

// Emitted text shared by the rows: numbers as their shortest exact text ("0.003", not
// 0.0030000000000000001, read back exactly), byte counts in the largest binary unit that divides
// them ("16GiB"), lists of integers in flow style.
YAML::Node number(double value);
std::string bytes_text(uint64_t bytes);
YAML::Node flow_list(const std::vector<int>& values);
YAML::Node text(std::string_view value);

// Row parts for a field read and written as it is (`Field`: a pointer to the member).
template <class Options, auto Field>
void read_field(ConfigMap& section, const std::string& name, Options& o) {
  o.*Field = section.get(name, o.*Field);
}
// ... that must be >= `Min`.
template <class Options, auto Field, auto Min>
void read_at_least(ConfigMap& section, const std::string& name, Options& o) {
  using T = std::remove_cvref_t<decltype(o.*Field)>;
  o.*Field = section.get(name, o.*Field);
  check_at_least(section, name, o.*Field, static_cast<T>(Min));
}
// ... an integer >= 1, or "auto" (stored as `Auto`, a value below 1).
template <class Options, auto Field, int Auto>
void read_count_or_auto(ConfigMap& section, const std::string& name, Options& o) {
  if (section.get<std::string>(name, "auto") == "auto") {
    o.*Field = Auto;
  } else {
    o.*Field = section.get(name, 1);
    check_at_least(section, name, o.*Field, 1);
  }
}
template <class Options, auto Field>
YAML::Node write_count_or_auto(const Options& o) {
  return o.*Field > 0 ? YAML::Node(o.*Field) : YAML::Node("auto");
}
// ... that must be in [0, 1).
template <class Options, auto Field>
void read_fraction(ConfigMap& section, const std::string& name, Options& o) {
  o.*Field = section.get(name, o.*Field);
  check_fraction(section, name, o.*Field);
}
template <class Options, auto Field>
YAML::Node write_field(const Options& o) {
  return YAML::Node(o.*Field);
}
template <class Options, auto Field>
YAML::Node write_number(const Options& o) {
  return number(o.*Field);
}

}  // namespace gnnpipe::experiments::config
