// Fuzz target: the experiment file (experiments::config::load_experiment): YAML parsing, the
// unique-key check, every section's strict parser, the sweep grid and the cross-section rules.
// The input is the file's text; nothing is run or loaded.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path file = gnnpipe::fuzz::scratch_dir() / "experiment.yaml";
  gnnpipe::fuzz::write_bytes(file, data, size);
  gnnpipe::fuzz::guarded([&] { (void)gnnpipe::experiments::config::load_experiment(file, {}); });
  return 0;
}
