#pragma once
// A training checkpoint on disk (issue #15): one directory, readable without gnnpipe.
//   manifest.json        {"format": "gnnpipe-checkpoint", "version": 1, "epoch", "config_hash",
//                         "parameters": [{"name", "file", "shape", "dtype": "float32", "fnv1a64"}],
//                         "optimizer": {"type", "steps", "arrays": [... as parameters ...]},
//                         "run_state": {...}}   (what the trainer needs to go on: the best-epoch
//                         tracker, the RNG position; opaque here)
//   params/NAME.npy      one float32 array per parameter, in the model's order, NAME as the model
//                        names it ("layer0.weight"): np.load works on each
//   optimizer/NAME.npy   the optimizer's state arrays (Adam: "m", "v"), flat over every parameter
//   augment/NAME.npy     with augment on: MH-Aug's chain (0/1 keep flags as float32, uncertainties),
//                        listed under the manifest's "augment": [...] as parameters are
// Writing is atomic: the new checkpoint is written and fsynced under a hidden name beside `dir`
// (".NAME.partial"), then swapped with the old one in one renameat2(RENAME_EXCHANGE) (a plain
// rename when there is no old one), and the old one is removed. A crash at any point leaves either
// the old checkpoint or the new one complete under `dir`, never a mixture; a leftover partial
// directory is removed by the next write. Each array's FNV-1a 64 checksum of its element bytes is
// in the manifest, so a corrupted file is named when read.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gnnpipe::experiments {

struct CheckpointArray {
  std::string name;             // [A-Za-z0-9_.-], not starting with '.'
  std::vector<int64_t> shape;   // not empty; product == values.size()
  std::vector<float> values;
};

struct Checkpoint {
  int epoch = 0;                // epochs completed
  std::string config_hash;      // of the config, less the keys a resume may change
  std::vector<CheckpointArray> parameters;
  std::string optimizer;        // "adam" | "sgd"
  int64_t optimizer_steps = 0;
  std::vector<CheckpointArray> optimizer_state;
  // augment/NAME.npy, manifest key "augment" (only when not empty): MH-Aug's chain (issue #41).
  std::vector<CheckpointArray> augment;
  nlohmann::json run_state = nlohmann::json::object();
};

inline constexpr int kCheckpointVersion = 1;

// Writes `checkpoint` to `dir` atomically (see above); creates the parent directory. Throws
// core::Error naming the file on an I/O failure (the old checkpoint is then untouched), a bad
// array name, or a shape that is empty or does not hold the values. `before_swap` (tests: a crash injected there) runs
// once the new checkpoint is complete under its partial name, before it replaces `dir`.
void write_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                      const std::function<void()>& before_swap = {});

// Reads a checkpoint written by write_checkpoint. Throws DataError (exit 3), one line naming the
// file (and for the manifest the key: "manifest.json: run_state is missing"), for a missing
// directory or file, a malformed manifest (a key missing or of another type, a negative epoch or
// step count, no parameters, a bad array name), an array whose dtype (the manifest's and the
// .npy header's must both be float32), shape or checksum is not the manifest's, a .npy with bytes
// after its data, or an unknown format version.
Checkpoint read_checkpoint(const std::filesystem::path& dir);

// run.keep_last: the directory under `checkpoints` that keeps epoch `epoch`'s checkpoint
// ("epoch-000012"), and the removal of all such directories but the `keep` newest (by epoch).
std::filesystem::path epoch_checkpoint_dir(const std::filesystem::path& checkpoints, int epoch);
void keep_newest_epoch_checkpoints(const std::filesystem::path& checkpoints, int keep);

// FNV-1a 64 of `bytes` (the manifest's checksum; also the summary's params_checksum).
uint64_t fnv1a64(const void* bytes, std::size_t size);

}  // namespace gnnpipe::experiments
