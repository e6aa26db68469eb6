#pragma once
// rank_share: the part of a step's batch that one rank of a data-parallel job trains (issue #42,
// TrainingSetup::collective). The batch's loss rows are cut into min(ranks, loss rows) runs by
// graph::split_batch, which keeps each run's targets with exactly their computation tree, so the
// ranks' losses and gradients sum to the batch's (up to summation order). A rank past the last run
// (a batch with fewer loss rows than ranks) trains run 0 with every loss weight 0: it adds exact
// zeros, and still takes part in the step's sums. A batch without loss rows is every rank's as it
// is (every rank skips it).
#include <cstddef>

#include "gnnpipe/graph/mini_batch.hpp"

namespace gnnpipe::pipeline::detail {

graph::MiniBatch rank_share(graph::MiniBatch batch, std::size_t layers, int rank, int ranks);

// Whether `share` is a rank's share that carries no loss (every loss weight 0, rank_share's idle
// share): its loss rows do not count in the epoch's.
bool idle_share(const graph::MiniBatch& share);

}  // namespace gnnpipe::pipeline::detail
