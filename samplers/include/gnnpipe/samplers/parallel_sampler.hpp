#pragma once
// Samples several batches at once on oneTBB worker threads, each thread with its own workspace
// that is kept and reused across calls (no allocation of workspaces per batch, no lock on the hot
// path). Because a batch's randomness comes only from (seed, epoch, batch index), the result is
// byte-identical to sampling the specs one after another, for any thread count.
#include <memory>
#include <span>
#include <vector>

#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class ParallelSampler {
 public:
  explicit ParallelSampler(const Sampler& sampler);  // `sampler` must outlive this object
  ~ParallelSampler();
  ParallelSampler(const ParallelSampler&) = delete;
  ParallelSampler& operator=(const ParallelSampler&) = delete;

  // The batches of `specs`, in the order of `specs`. An exception thrown while sampling a batch
  // cancels the batches not yet started and is rethrown here.
  std::vector<graph::MiniBatch> sample(std::span<const BatchSpec> specs);

  // One batch on the calling thread with that thread's workspace (the pipeline's sample node,
  // whose bodies run concurrently on worker threads). Safe to call from several threads at once.
  graph::MiniBatch sample_one(const BatchSpec& spec);

 private:
  struct Workspaces;
  const Sampler& sampler_;
  std::unique_ptr<Workspaces> workspaces_;
};

}  // namespace gnnpipe::samplers
