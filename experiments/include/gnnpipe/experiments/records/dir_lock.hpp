#pragma once
// DirectoryLock: one gnnpipe process at a time per output directory (run, run --resume, infer
// --out). An exclusive advisory lock (flock) on DIR/.lock, taken before anything in DIR is read for
// a resume or written, and held while the object lives: the kernel lets go of it when the process
// ends, however it ends (kill -9 included), so a lock is never stale. The holder writes its pid
// into the file, for the refusal of a second process. The file stays (removing it would let a
// third process lock a new file while the second waits on the old one).
#include <filesystem>

namespace gnnpipe::experiments {

class DirectoryLock {
 public:
  // The name of the lock file in a locked directory.
  static constexpr const char* kFileName = ".lock";

  // Locks `dir` (which must exist) without waiting. ConfigError (exit code 2), before anything is
  // done in `dir`: "DIR: in use by another gnnpipe process (pid N); wait for it to end or use
  // another directory" (the pid when the holder wrote it), or naming the lock file when it cannot
  // be created. A second lock of one directory in one process is refused the same way.
  explicit DirectoryLock(const std::filesystem::path& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Refuses (the constructor's ConfigError) a `dir` that another holder has locked now; creates
  // nothing and takes no lock. For a check before a job's long loading, to fail early.
  static void check_free(const std::filesystem::path& dir);

 private:
  std::filesystem::path dir_;
  int fd_ = -1;
};

}  // namespace gnnpipe::experiments
