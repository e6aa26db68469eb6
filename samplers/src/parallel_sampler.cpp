#include "gnnpipe/samplers/parallel_sampler.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "gnnpipe/core/tsan_annotations.hpp"

namespace gnnpipe::samplers {

struct ParallelSampler::Workspaces {
  explicit Workspaces(const Sampler& sampler) : per_thread([&sampler] { return sampler.make_workspace(); }) {}
  tbb::enumerable_thread_specific<std::unique_ptr<SamplerWorkspace>> per_thread;
};

ParallelSampler::ParallelSampler(const Sampler& sampler)
    : sampler_(sampler), workspaces_(std::make_unique<Workspaces>(sampler)) {}

ParallelSampler::~ParallelSampler() = default;

graph::MiniBatch ParallelSampler::sample_one(const BatchSpec& spec) {
  return sampler_.sample(spec, *workspaces_->per_thread.local());
}

std::vector<graph::MiniBatch> ParallelSampler::sample(std::span<const BatchSpec> specs) {
  std::vector<graph::MiniBatch> batches(specs.size());
  // One batch per task: batches are large units of work (milliseconds), so grain 1 balances best.
  using Range = tbb::blocked_range<std::size_t>;
  tbb::parallel_for(Range(0, specs.size(), 1), core::tsan::fork_join([&](const Range& r) {
    for (std::size_t i = r.begin(); i != r.end(); ++i) batches[i] = sample_one(specs[i]);
  }));
  return batches;
}

}  // namespace gnnpipe::samplers
