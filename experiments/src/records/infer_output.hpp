#pragma once
// gnnpipe infer's output directory (issue #15): its outputs appear together, and a job that never
// finished does not block its rerun.
//  - A RunDirectory with the unfinished marker: .unfinished is written first and removed last, once
//    summary.json says "status": "done".
//  - The outputs are written into OUT/.partial/ and renamed into OUT only when all are written
//    (StagedOutputs); a failure removes them, and the RunDirectory records the error (log.txt,
//    summary.json "status": "failed"), as a run does.
//  - An --out holding an unfinished infer's directory (.unfinished, and only files infer writes) is
//    cleared and reused by the next infer into it, once no process holds its lock.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gnnpipe/experiments/records/dir_lock.hpp"

namespace gnnpipe::experiments {

// The folder in the output directory the outputs are written into before they are complete.
inline constexpr const char* kStagingDir = ".partial";

// Whether `name` is a file or folder gnnpipe infer writes into its output directory.
bool infer_writes(const std::string& name);

// gnnpipe infer --out, before any work: like check_output_dir (ConfigError, exit 2), but an
// unfinished infer's directory passes; one that also holds other files is refused naming one.
void check_infer_output_dir(const std::filesystem::path& out);

// gnnpipe infer --out, after every check of the job: creates `out` (ConfigError when it cannot be
// created), locks it (ConfigError naming the pid of a process using it), and removes an unfinished
// infer's files from it (logging that it did). Then `out` holds only its lock file.
std::shared_ptr<const DirectoryLock> claim_infer_output_dir(const std::filesystem::path& out);

// Output files written under OUT/.partial/ and moved into OUT together by commit(). The destructor
// removes what was not committed (the staging folder, and on a failed commit the files moved).
class StagedOutputs {
 public:
  explicit StagedOutputs(std::filesystem::path out);
  ~StagedOutputs();
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;

  // Where to write the output `name` (creates the staging folder); names are kept for commit().
  std::filesystem::path path(const std::string& name);
  const std::vector<std::string>& names() const { return names_; }
  // Renames every output into OUT and removes the staging folder. DataError naming the file when
  // a rename fails. Until keep(), the destructor removes the outputs moved into OUT again.
  void commit();
  // The outputs stay (summary.json, written after commit(), says they are complete).
  void keep() { kept_ = true; }

 private:
  std::filesystem::path out_;
  std::vector<std::string> names_;
  std::vector<std::string> moved_;
  bool kept_ = false;
};

}  // namespace gnnpipe::experiments
