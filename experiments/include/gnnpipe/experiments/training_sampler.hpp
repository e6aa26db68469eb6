#pragma once
// The sampler an experiment trains with, built from its `sampler:` section (docs/DESIGN.md §5):
// full | neighbor | saint_node | saint_edge | saint_rw | cluster. Edge weights follow what the
// model's layers expect (`norm`); batches are built for `num_layers` layers.
#include <filesystem>
#include <memory>

#include "gnnpipe/experiments/config/experiment_config.hpp"
#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::experiments {

// ConfigError when the sampler's batches do not fit a model of `num_layers` layers (neighbor: one
// fanout per layer). Cheap: the runner calls it before a run directory exists.
void check_sampler_fits_model(const samplers::SamplerOptions& options, std::size_t num_layers);

// ConfigError for options the sampler rejects (fanouts that do not match the layers, P > nodes, ...).
std::unique_ptr<samplers::Sampler> make_training_sampler(const config::ExperimentConfig& config,
                                                         const graph::Dataset& dataset, graph::BlockNorm norm,
                                                         std::size_t num_layers);

// Where Cluster-GCN partitions are cached: sampler.cache_dir, else $GNNPIPE_CACHE_DIR, else
// $XDG_CACHE_HOME/gnnpipe, else $HOME/.cache/gnnpipe; empty (no cache) when none is set.
std::filesystem::path partition_cache_dir(const samplers::SamplerOptions& options);

}  // namespace gnnpipe::experiments
