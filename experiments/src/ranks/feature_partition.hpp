#pragma once
// dataset.partition in a data-parallel job (issue #42 item 2, docs/SCALE.md): each rank keeps the
// feature rows of its part of the nodes in an MPI window (MPI_Win_allocate) and reads the other
// rows straight from their owners' windows (passive-target MPI_Get, one per owner and run of rows,
// from whichever thread gathers), so no rank holds the whole matrix after setup and no collective
// has to be kept in step with the pipeline's threads.
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"
#include "ranks/job_ranks.hpp"

namespace gnnpipe::experiments {

// Replaces d.features by this rank's shard under `scheme` (hash, or METIS parts computed at rank 0
// with `metis_cache` as samplers::load_or_partition's cache and broadcast). Collective: every rank
// calls it once, in the same place. Nothing happens for a single rank, `none`, or a dataset
// without feature columns. The window is freed by `ranks` at its end (JobRanks::at_finalize):
// `d` must not outlive `ranks`. ConfigError in a build without MPI or when MPI cannot read from
// several threads at once.
void partition_features(graph::Dataset& d, graph::FeaturePartition scheme, JobRanks& ranks,
                        const std::filesystem::path& metis_cache);

}  // namespace gnnpipe::experiments
