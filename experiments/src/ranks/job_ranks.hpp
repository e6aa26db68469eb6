#pragma once
// JobRanks: this process's place in a data-parallel job (issue #42, docs/SCALE.md). A process
// started by mpirun (OpenMPI: OMPI_COMM_WORLD_SIZE; MPICH and PMIx launchers: PMI_SIZE,
// PMIX_SIZE) with more than one rank joins MPI_COMM_WORLD (MPI_Init_thread, serialized: only the
// train stage's thread calls MPI during a run) and offers the job's sums as a
// pipeline::Collective; any other process is a single rank, and MPI is never initialised. Sums
// reduce in rank order at rank 0 and broadcast the result, so every rank gets the same bits.
// MPI_Finalize at destruction. A build without MPI (libopenmpi-dev missing at configure time)
// refuses a multi-rank launch with a ConfigError. One per process.
#include <memory>
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

 private:
  int rank_ = 0, size_ = 1;
  std::unique_ptr<pipeline::Collective> collective_;
};

// The rank count the launcher announced in the environment (1 when none did).
int launched_ranks();

}  // namespace gnnpipe::experiments
