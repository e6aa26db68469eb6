#include "gnnpipe/pipeline/batch_stream.hpp"

#include <algorithm>
#include <span>
#include <utility>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/units.hpp"

namespace gnnpipe::pipeline {

std::size_t StreamedBatch::bytes() const {
  std::size_t b = features.size() * sizeof(float) + labels.size() * sizeof(int32_t) + multi_labels.size();
  b += batch.input_nodes.size() * sizeof(graph::NodeId) + batch.targets.size() * sizeof(graph::NodeId);
  for (const graph::Block& block : batch.blocks) {
    b += block.offsets.size() * sizeof(graph::EdgeOffset) + block.indices.size() * sizeof(graph::NodeId) +
         block.weights.size() * sizeof(float) + block.t_offsets.size() * sizeof(graph::EdgeOffset) +
         block.t_indices.size() * sizeof(graph::NodeId) + block.t_edges.size() * sizeof(graph::EdgeOffset);
  }
  return b;
}

BatchStream::BatchStream(const samplers::Sampler& sampler, const graph::Dataset& data, BatchStreamOptions options)
    : sampler_(sampler), data_(data), options_(options), parallel_(sampler) {
  GNNPIPE_CHECK_CONFIG(options.prefetch >= 1, "prefetch: {} batches; at least 1", options.prefetch);
}

BatchStream::~BatchStream() { stop_producer(); }

void BatchStream::stop_producer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard lock(mutex_);
  stop_ = false;
  ready_.clear();
  ready_bytes_ = 0;
  remaining_ = 0;
  error_ = nullptr;
}

std::size_t BatchStream::start(int64_t epoch) {
  GNNPIPE_CHECK_CONFIG(epoch >= 1, "epoch {}: epochs count from 1", epoch);
  stop_producer();
  std::vector<samplers::BatchSpec> plan = sampler_.plan_epoch(epoch);
  const std::size_t batches = plan.size();
  {
    std::lock_guard lock(mutex_);
    remaining_ = batches;
  }
  producer_ = std::thread([this, plan = std::move(plan)]() mutable { produce(std::move(plan)); });
  return batches;
}

StreamedBatch BatchStream::gather(graph::MiniBatch batch) const {
  StreamedBatch out;
  const graph::FeatureStore& f = data_.features;
  out.features.resize(batch.input_nodes.size() * static_cast<std::size_t>(f.cols()));
  if (f.cols() > 0) f.gather(batch.input_nodes.span(), out.features);
  const graph::Labels& l = data_.labels;
  if (l.is_multi_label()) {
    const auto classes = static_cast<std::size_t>(l.num_classes);
    out.multi_labels.resize(batch.targets.size() * classes);
    for (std::size_t i = 0; i < batch.targets.size(); ++i) {
      std::copy_n(l.multi.data() + static_cast<std::size_t>(batch.targets[i]) * classes, classes,
                  out.multi_labels.data() + i * classes);
    }
  } else if (!l.single.empty()) {
    out.labels.resize(batch.targets.size());
    for (std::size_t i = 0; i < batch.targets.size(); ++i) out.labels[i] = l.single[static_cast<std::size_t>(batch.targets[i])];
  }
  out.batch = std::move(batch);
  return out;
}

void BatchStream::produce(std::vector<samplers::BatchSpec> plan) {
  try {
    const auto window = static_cast<std::size_t>(options_.prefetch);
    for (std::size_t begin = 0; begin < plan.size(); begin += window) {
      {
        // The next window is sampled while fewer than `prefetch` batches wait for the reader.
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || ready_.size() < window; });
        if (stop_) return;
      }
      const std::size_t n = std::min(window, plan.size() - begin);
      std::vector<graph::MiniBatch> batches = parallel_.sample(std::span<const samplers::BatchSpec>(plan).subspan(begin, n));
      for (graph::MiniBatch& b : batches) {
        StreamedBatch s = gather(std::move(b));
        const std::size_t bytes = s.bytes();
        GNNPIPE_CHECK_AS(OutOfBudget, options_.max_bytes == 0 || bytes <= options_.max_bytes,
                         "loader: batch {} of epoch {} takes {} with its rows, beyond the memory limit of {}; raise "
                         "memory_limit or lower batch_size",
                         s.batch.index, s.batch.epoch, core::format_bytes(bytes), core::format_bytes(options_.max_bytes));
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] {
          return stop_ || ready_.empty() || options_.max_bytes == 0 || ready_bytes_ + bytes <= options_.max_bytes;
        });
        if (stop_) return;
        ready_bytes_ += bytes;
        ready_.push_back(std::move(s));
        lock.unlock();
        changed_.notify_all();
      }
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  }
  changed_.notify_all();
}

std::optional<StreamedBatch> BatchStream::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_ || remaining_ == 0; });
  if (!ready_.empty()) {
    StreamedBatch s = std::move(ready_.front());
    ready_.pop_front();
    ready_bytes_ -= s.bytes();
    --remaining_;
    lock.unlock();
    changed_.notify_all();
    return s;
  }
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    remaining_ = 0;
    std::rethrow_exception(e);
  }
  return std::nullopt;
}

}  // namespace gnnpipe::pipeline
