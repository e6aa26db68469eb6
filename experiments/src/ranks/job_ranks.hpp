#pragma once
// JobRanks: this process's place in a data-parallel job (issue #42, docs/SCALE.md). A process
// started by mpirun (OpenMPI: OMPI_COMM_WORLD_SIZE; MPICH and PMIx launchers: PMI_SIZE,
// PMIX_SIZE) with more than one rank joins MPI_COMM_WORLD (MPI_Init_thread: MULTIPLE where offered,
// for the partitioned feature store's reads from any thread; at least SERIALIZED, for the sums
// the train stage's thread makes) and offers the job's sums as a
// pipeline::Collective; any other process is a single rank, and MPI is never initialised. Sums
// reduce in rank order at rank 0 and broadcast the result, so every rank gets the same bits.
// MPI_Finalize at destruction. A build without MPI (libopenmpi-dev missing at configure time)
// refuses a multi-rank launch with a ConfigError. One per process.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gnnpipe/pipeline/collective.hpp"

namespace gnnpipe::experiments {

class JobRanks {
 public:
  JobRanks();
  ~JobRanks();
  JobRanks(const JobRanks&) = delete;
  JobRanks& operator=(const JobRanks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The job's collective; null for a single rank.
  pipeline::Collective* collective() { return collective_.get(); }
  // Collective (the main thread, after training): every rank's `text`, in rank order, at rank 0;
  // empty at the other ranks. A single rank gets its own.
  std::vector<std::string> gather(const std::string& text) const;
  // Ends every rank of the job with `code` (MPI_Abort): a rank that failed must not leave the others
  // waiting in a sum. No-op for a single rank.
  void abort(int code) const;
  // Collective: rank 0's `bytes` into every rank's (MPI_Bcast). No-op for a single rank.
  void broadcast(std::span<std::byte> bytes) const;
  // This rank's place among the ranks on its machine (the launcher's local rank; 0 when unknown).
  int local_rank() const;
  // Whether MPI allows calls from several threads at once (MPI_THREAD_MULTIPLE).
  bool thread_multiple() const { return thread_multiple_; }
  // Runs `release` at destruction, before MPI_Finalize, in reverse order of registration: for
  // collective releases (MPI_Win_free) that every rank must reach in the same order, which the
  // end of the job guarantees and the end of a run's objects would not.
  void at_finalize(std::function<void()> release) { at_finalize_.push_back(std::move(release)); }

 private:
  int rank_ = 0, size_ = 1;
  bool thread_multiple_ = false;
  std::vector<std::function<void()>> at_finalize_;
  std::unique_ptr<pipeline::Collective> collective_;
};

// The rank count the launcher announced in the environment (1 when none did).
int launched_ranks();

}  // namespace gnnpipe::experiments
