#include "records/infer_output.hpp"

#include <algorithm>
#include <system_error>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"

namespace gnnpipe::experiments {
namespace fs = std::filesystem;

namespace {

// The first entry of `dir` that infer does not write; empty when there is none.
std::string foreign_entry(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!infer_writes(name)) return name;
  }
  GNNPIPE_CHECK_CONFIG(!ec, "--out {}: cannot list it: {}", dir.string(), ec.message());
  return {};
}

// An unfinished infer's directory must hold nothing else: its files are removed on reuse.
void check_only_infer_files(const fs::path& out) {
  const std::string foreign = foreign_entry(out);
  GNNPIPE_CHECK_CONFIG(foreign.empty(),
                       "--out {}: holds an unfinished infer's files, and also {}, which infer does not write (remove it "
                       "or choose a new directory)",
                       out.string(), foreign);
}

bool unfinished(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / RunDirectory::kUnfinished, ec);
}

}  // namespace

bool infer_writes(const std::string& name) {
  std::string base = name;
  if (base.ends_with(".tmp")) base.resize(base.size() - 4);  // write_npy's and write_summary's temporaries
  static const char* const kFixed[] = {"config.yaml", "log.txt",      "summary.json", "predictions.npy",
                                       "logits.npy",  DirectoryLock::kFileName, RunDirectory::kUnfinished, kStagingDir};
  if (std::any_of(std::begin(kFixed), std::end(kFixed), [&](const char* fixed) { return base == fixed; })) return true;
  const std::string prefix = "embeddings_layer", suffix = ".npy";
  if (!base.starts_with(prefix) || !base.ends_with(suffix) || base.size() == prefix.size() + suffix.size()) return false;
  return std::all_of(base.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                     base.end() - static_cast<std::ptrdiff_t>(suffix.size()), [](char c) { return c >= '0' && c <= '9'; });
}

void check_infer_output_dir(const fs::path& out) {
  std::error_code ec;
  if (!fs::is_directory(out, ec) || !unfinished(out)) {
    check_output_dir(out, "--out");
    return;
  }
  DirectoryLock::check_free(out);  // an infer still at work, not one that died
  check_only_infer_files(out);
}

std::shared_ptr<const DirectoryLock> claim_infer_output_dir(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  GNNPIPE_CHECK_CONFIG(!ec, "--out {}: cannot create the output directory: {}", out.string(), ec.message());
  auto lock = std::make_shared<const DirectoryLock>(out);
  if (!unfinished(out)) {
    check_output_dir(out, "--out");  // again under the lock: another process may have written into it
    return lock;
  }
  check_only_infer_files(out);
  core::logger().info("--out {}: replacing the files of an infer that did not finish",
                      out.string());
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    // The marker last: a removal cut short leaves a directory still known as unfinished.
    if (name == DirectoryLock::kFileName || name == RunDirectory::kUnfinished) continue;
    fs::remove_all(entry.path(), ec);
    GNNPIPE_CHECK_CONFIG(!ec, "--out {}: cannot remove {}: {}", out.string(), entry.path().string(), ec.message());
  }
  fs::remove(out / RunDirectory::kUnfinished, ec);
  GNNPIPE_CHECK_CONFIG(!ec, "--out {}: cannot remove {}: {}", out.string(), RunDirectory::kUnfinished, ec.message());
  return lock;
}

StagedOutputs::StagedOutputs(fs::path out) : out_(std::move(out)) {}

StagedOutputs::~StagedOutputs() {
  std::error_code ec;
  if (!kept_) {
    for (const std::string& name : moved_) fs::remove(out_ / name, ec);
  }
  fs::remove_all(out_ / kStagingDir, ec);
}

fs::path StagedOutputs::path(const std::string& name) {
  std::error_code ec;
  fs::create_directories(out_ / kStagingDir, ec);
  GNNPIPE_CHECK(!ec, "cannot create '{}': {}", (out_ / kStagingDir).string(), ec.message());
  names_.push_back(name);
  return out_ / kStagingDir / name;
}

void StagedOutputs::commit() {
  for (const std::string& name : names_) {
    std::error_code ec;
    fs::rename(out_ / kStagingDir / name, out_ / name, ec);
    GNNPIPE_CHECK_DATA(!ec, "{}: cannot move it into place: {}", (out_ / name).string(), ec.message());
    moved_.push_back(name);
  }
  std::error_code ec;
  fs::remove_all(out_ / kStagingDir, ec);
}

}  // namespace gnnpipe::experiments
