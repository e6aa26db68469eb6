#pragma once
// `gnnpipe data {info,convert,synth}`: inspect, convert and generate datasets.
// Each returns the process exit code and throws the project's errors (the CLI maps them).
#include <cstdint>
#include <iosfwd>
#include <string>

namespace gnnpipe::experiments {

struct DataInfoArgs {
  std::string path;
  std::string format = "auto";
  std::string config;    // instead of path: the dataset section of this experiment
  std::string data_dir;  // base of relative dataset paths in `config`
};

struct DataConvertArgs {
  std::string from = "auto";
  std::string src;
  std::string out;
  std::string feature_dtype = "float32";
  int64_t random_features = 0;  // > 0: add seeded random features of this width
  uint64_t seed = 0;
  bool force = false;  // write into an existing, non-empty `out` (refused otherwise)
};

struct DataSynthArgs {
  std::string out;
  int64_t nodes = 100000;
  double avg_degree = 20;
  int features = 64;
  int classes = 16;
  uint64_t seed = 0;
  bool force = false;  // write into an existing, non-empty `out` (refused otherwise)
};

int data_info(const DataInfoArgs& args, std::ostream& out);
int data_convert(const DataConvertArgs& args, std::ostream& out);
int data_synth(const DataSynthArgs& args, std::ostream& out);

}  // namespace gnnpipe::experiments
