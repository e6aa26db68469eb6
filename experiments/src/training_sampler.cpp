#include "gnnpipe/experiments/training_sampler.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/full_batch_sampler.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"

namespace gnnpipe::experiments {
namespace {

std::filesystem::path env_path(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? std::filesystem::path(value) : std::filesystem::path();
}

}  // namespace

std::filesystem::path partition_cache_dir(const samplers::SamplerOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (auto dir = env_path("GNNPIPE_CACHE_DIR"); !dir.empty()) return dir;
  if (auto dir = env_path("XDG_CACHE_HOME"); !dir.empty()) return dir / "gnnpipe";
  if (auto dir = env_path("HOME"); !dir.empty()) return dir / ".cache" / "gnnpipe";
  return {};
}

void check_sampler_fits_model(const samplers::SamplerOptions& s, std::size_t num_layers) {
  GNNPIPE_CHECK_CONFIG(s.type != samplers::SamplerType::kNeighbor || s.fanouts.size() == num_layers,
                       "sampler.fanouts: {} hops for model.layers {}; give one fanout per layer", s.fanouts.size(),
                       num_layers);
}

std::unique_ptr<samplers::Sampler> make_training_sampler(const config::ExperimentConfig& c, const graph::Dataset& d,
                                                         graph::BlockNorm norm, std::size_t num_layers) {
  using samplers::SamplerType;
  const auto& s = c.sampler;
  std::vector<graph::NodeId> train(d.splits.train.begin(), d.splits.train.end());
  switch (s.type) {
    case SamplerType::kFull:
      return std::make_unique<samplers::FullBatchSampler>(d.graph, std::move(train), norm, num_layers);
    case SamplerType::kNeighbor:
      check_sampler_fits_model(s, num_layers);
      return std::make_unique<samplers::NeighborSampler>(
          d.graph, std::move(train),
          samplers::NeighborSamplerOptions{.fanouts = s.fanouts, .batch_size = s.batch_size, .replace = s.replace,
                                           .shuffle = true, .seed = c.run.seed, .norm = norm});
    case SamplerType::kSaintNode:
    case SamplerType::kSaintEdge:
    case SamplerType::kSaintRw: {
      const auto mode = s.type == SamplerType::kSaintNode   ? samplers::SaintMode::kNode
                        : s.type == SamplerType::kSaintEdge ? samplers::SaintMode::kEdge
                                                             : samplers::SaintMode::kRandomWalk;
      core::Stopwatch watch;
      auto sampler = std::make_unique<samplers::SaintSampler>(
          d.graph, std::move(train),
          samplers::SaintSamplerOptions{.mode = mode, .budget = s.batch_size, .walk_length = s.walk_length,
                                        .steps_per_epoch = s.steps_per_epoch, .norm_samples = s.norm_samples,
                                        .normalize = s.normalize, .seed = c.run.seed, .norm = norm,
                                        .num_layers = num_layers});
      core::logger().info("GraphSAINT ({}): {} batches per epoch; {} ({:.2f} s)", samplers::to_string(s.type),
                          sampler->steps_per_epoch(),
                          s.normalize ? fmt::format("norms from {} pre-sampled subgraphs", sampler->norm_samples())
                                      : std::string("no normalisation"),
                          watch.seconds());
      return sampler;
    }
    case SamplerType::kCluster:
      GNNPIPE_CHECK_CONFIG(s.diag_lambda == 0 || norm == graph::BlockNorm::kGcn,
                           "sampler.diag_lambda: the diagonal enhancement is only for model.type gcn");
      return std::make_unique<samplers::ClusterSampler>(
          d.graph, std::move(train),
          samplers::ClusterSamplerOptions{.num_parts = s.num_parts, .parts_per_batch = s.batch_size,
                                          .diag_lambda = static_cast<float>(s.diag_lambda),
                                          .cache_dir = partition_cache_dir(s), .seed = c.run.seed, .norm = norm,
                                          .num_layers = num_layers});
  }
  GNNPIPE_THROW(ConfigError, "sampler.type: '{}' is not available", samplers::to_string(s.type));
}

}  // namespace gnnpipe::experiments
