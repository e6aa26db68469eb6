#pragma once
// BatchStream: an epoch's sampled batches with their input rows gathered, produced ahead of the
// reader by a thread of its own (sampling `prefetch` batches at once on oneTBB's workers, then
// gathering each one's feature rows in parallel), handed over in the epoch's order. It is the
// Python loader's engine (issue #43 item 4, docs/PYTHON.md): a training loop written in another
// framework reads batches that gnnpipe's samplers made, and never waits for one that is ready.
// A batch is a function of (seed, epoch, index), so the stream gives exactly the batches a
// training run with the same sampler gives. Memory: batches waiting for the reader take at most
// `max_bytes` (a single larger batch is an OutOfBudget naming the limit).
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::pipeline {

// One batch as the reader gets it. `features` holds the rows of batch.input_nodes in their order
// (float32, widened from a 16-bit store); `labels` the targets' classes (-1: unlabeled), or their
// 0/1 rows for multi-label data.
struct StreamedBatch {
  graph::MiniBatch batch;
  std::vector<float> features;        // [input_nodes x feature columns]
  std::vector<int32_t> labels;        // [targets] single-label
  std::vector<uint8_t> multi_labels;  // [targets x classes] multi-label
  std::size_t bytes() const;          // what it holds (the governor of the stream's window)
};

struct BatchStreamOptions {
  int prefetch = 4;                    // batches sampled at once; the next ones while fewer wait
  std::size_t max_bytes = 0;           // 0: no limit on the waiting batches' bytes
};

class BatchStream {
 public:
  // `sampler` and `data` must outlive the stream. ConfigError for prefetch < 1.
  BatchStream(const samplers::Sampler& sampler, const graph::Dataset& data, BatchStreamOptions options);
  ~BatchStream();  // stops the producer (a batch being sampled finishes first)
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  // Starts `epoch` (>= 1): its plan's batches from the first; an epoch still being read is dropped.
  // Returns the epoch's batch count.
  std::size_t start(int64_t epoch);
  // The epoch's next batch, in plan order (waits for it); nullopt after the last. Rethrows what the
  // producer threw (a sampling or gathering error, an OutOfBudget) once, then nullopt.
  std::optional<StreamedBatch> next();

 private:
  void stop_producer();
  void produce(std::vector<samplers::BatchSpec> plan);
  StreamedBatch gather(graph::MiniBatch batch) const;

  const samplers::Sampler& sampler_;
  const graph::Dataset& data_;
  const BatchStreamOptions options_;
  // The stream's, for every epoch's producer in turn (one runs at a time): its per-thread
  // workspaces live as long as the stream, and go on the thread that destroys it, after the last
  // producer was joined.
  samplers::ParallelSampler parallel_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<StreamedBatch> ready_;
  std::size_t ready_bytes_ = 0;
  std::size_t remaining_ = 0;  // batches of the epoch not yet handed to the reader
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread producer_;
};

}  // namespace gnnpipe::pipeline
