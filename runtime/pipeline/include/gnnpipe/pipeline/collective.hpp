#pragma once
// Collective: what data-parallel training needs from the ranks of a job (issue #42;
// docs/SCALE.md): each rank trains its share of every step's batch, the ranks' gradients and
// losses are summed before the optimizer's step, and their parameters are compared; evaluation
// is sharded between them. The MPI implementation is the program's (experiments:
// ranks/job_ranks.hpp); a run without one is a single process. Every call is collective: all
// ranks make the same calls in the same order, the sums from one thread each (the train stage's),
// gather_rows from another (evaluation's), on a channel of its own. Sums are exact functions of the inputs, the same bits on
// every rank (reduced in rank order at one rank and broadcast), so the ranks' optimizers step
// identically and their parameters stay bitwise equal.
#include <cstdint>
#include <span>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/stream.hpp"

namespace gnnpipe::pipeline {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Replaces every element by its sum over the ranks (host memory).
  virtual void sum(std::span<float> values) = 0;
  virtual void sum(std::span<double> values) = 0;
  // The largest of the ranks' values (the stop request every rank acts on before a step).
  virtual int max(int value) = 0;
  // Throws Error naming `what`, the ranks and their values when the ranks' `value`s differ.
  virtual void check_equal(uint64_t value, const char* what) = 0;
  // Sums of device arrays (GPU ranks: NCCL, nccl_collective.hpp), queued on `stream`, the same
  // bits on every rank: whether offered, and the sums.
  virtual bool sums_on_device() const { return false; }
  virtual void sum_on_device(std::span<float> values, const core::Stream& stream) {
    (void)values, (void)stream;
    GNNPIPE_THROW(Error, "this collective sums host memory only");
  }
  virtual void sum_on_device(std::span<double> values, const core::Stream& stream) {
    (void)values, (void)stream;
    GNNPIPE_THROW(Error, "this collective sums host memory only");
  }
  // Whether gather_rows is offered (it needs MPI calls from two threads at once).
  virtual bool gathers_rows() const { return false; }
  // Rank r's rows [row_offsets[r], row_offsets[r + 1]) of `values` (row-major, `cols` wide; the
  // offsets ascending, N + 1 of them) into every rank's `values`: each rank fills its own rows
  // first. Evaluation's channel, apart from the sums'.
  virtual void gather_rows(std::span<float> values, int64_t cols, std::span<const int64_t> row_offsets) {
    (void)values, (void)cols, (void)row_offsets;
  }
};

}  // namespace gnnpipe::pipeline
