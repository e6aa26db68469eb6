#include "gnnpipe/samplers/parallel_sampler.hpp"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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
  // Isolated: a sampler runs parallel loops of its own (Block::from_csr's transpose), and a thread
  // waiting for one may otherwise pick up another task of the same arena, such as the next batch's
  // sample_one, which would take this thread's workspace while this batch still uses it (seen as
  // a pipelined run that trained other batches than the sequential one, under TSan's timing).
  return tbb::this_task_arena::isolate([&] { return sampler_.sample(spec, *workspaces_->per_thread.local()); });
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
