// Fuzz target: the checkpoint manifest (experiments::read_checkpoint), then the run_state a resume
// and `gnnpipe infer` read from it (checkpoint_partial_epoch: a stopped epoch; checkpoint_model_dims).
// A valid checkpoint (one float32 parameter "w" [2], Adam state "m" and "v" [2]) is written once;
// each input replaces its manifest.json, so the manifest's references to the arrays (file, shape,
// dtype, checksum) are checked against real files.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "gnnpipe/experiments/records/checkpoint.hpp"
#include "records/training_checkpoints.hpp"

namespace {

const std::filesystem::path& checkpoint_dir() {
  static const std::filesystem::path dir = [] {
    namespace ex = gnnpipe::experiments;
    const std::filesystem::path d = gnnpipe::fuzz::scratch_dir() / "checkpoint";
    ex::Checkpoint c;
    c.epoch = 3;
    c.config_hash = "0123456789abcdef";
    c.parameters.push_back({"w", {2}, {0.5F, -1.0F}});
    c.optimizer = "adam";
    c.optimizer_steps = 3;
    c.optimizer_state.push_back({"m", {2}, {0.25F, 0.0F}});
    c.optimizer_state.push_back({"v", {2}, {1.0F, 2.0F}});
    c.run_state = {{"best_epoch", 2}};
    ex::write_checkpoint(d, c);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = checkpoint_dir();
  gnnpipe::fuzz::write_bytes(dir / "manifest.json", data, size);
  gnnpipe::fuzz::guarded([&] {
    const gnnpipe::experiments::Checkpoint c = gnnpipe::experiments::read_checkpoint(dir);
    gnnpipe::fuzz::guarded([&] { (void)gnnpipe::experiments::checkpoint_partial_epoch(c, "manifest.json"); });
    (void)gnnpipe::experiments::checkpoint_model_dims(c, "manifest.json");
  });
  return 0;
}
