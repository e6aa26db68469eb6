#include "gnnpipe/pipeline/layerwise_inference.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"

namespace gnnpipe::pipeline {
namespace {

// One chunk through layer l on the model's GPU: the chunk (its input rows gathered from `source`,
// its block) is packed into pinned memory, copied to the device in one copy, run, and its outputs
// copied back into their rows of `out`. Synchronous per chunk (evaluation runs on its own thread
// and stream; the pinned buffer is reused by the next chunk).
class DeviceChunkRunner {
 public:
  explicit DeviceChunkRunner(const models::OpContext& ctx) : ctx_(ctx) {}

  void run(models::GnnModel<float>& model, std::size_t l, const graph::MiniBatch& chunk,
           const graph::FeatureStore& source, models::MatrixView<float> out_rows) {
    const BatchLayout layout = BatchLayout::of(chunk, source.cols());
    if (pinned_.size() < layout.total_bytes) pinned_ = core::Buffer<std::byte>(layout.total_bytes, core::MemoryKind::kPinned);
    pack_batch(chunk, source, {}, layout, pinned_.data());
    std::byte* dev = packed_.ensure(ctx_, layout.total_bytes);
    core::copy_bytes_async(dev, pinned_.data(), layout.total_bytes, ctx_.stream());
    const PackedBatchView view = PackedBatchView::of(layout, nullptr, dev);
    const models::MatrixView<float> y = y_.matrix(ctx_, out_rows.rows, out_rows.cols);
    model.infer_layer(l, view.blocks.front(), view.features, y);
    core::copy_bytes_async(out_rows.data, y.data, static_cast<std::size_t>(y.size()) * sizeof(float), ctx_.stream());
    ctx_.stream().synchronize();
  }

 private:
  const models::OpContext& ctx_;
  core::Buffer<std::byte> pinned_;
  models::DeviceArray<std::byte> packed_;
  models::DeviceArray<float> y_;
};

}  // namespace

models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options) {
  GNNPIPE_CHECK_CONFIG(options.parallel_chunks >= 1, "inference: parallel_chunks must be >= 1, got {}",
                       options.parallel_chunks);
  GNNPIPE_CHECK(features.rows() == graph.num_nodes(), "inference: {} feature rows for a graph of {} nodes",
                features.rows(), graph.num_nodes());
  const auto sampler = samplers::make_inference_sampler(graph, model.block_norm(), options.chunk_nodes);
  samplers::ParallelSampler parallel(*sampler);
  const std::vector<samplers::BatchSpec> plan = sampler->plan_epoch(0);
  const auto window = static_cast<std::size_t>(options.parallel_chunks);

  models::Matrix<float> previous;  // the last layer's outputs for every node (empty before layer 0)
  std::vector<float> input;        // one chunk's input rows, reused (CPU)
  const bool on_gpu = model.context().is_cuda();
  std::optional<DeviceChunkRunner> gpu;
  if (on_gpu) gpu.emplace(model.context());
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    const int64_t in_cols = l == 0 ? features.cols() : previous.cols();
    models::Matrix<float> out(graph.num_nodes(), model.layer_out_dim(l));
    // On the GPU, chunks are packed from the layer's input: the features, then a feature-store view
    // of the previous layer's outputs.
    const graph::FeatureStore source =
        l == 0 || !on_gpu ? features
                          : graph::FeatureStore(graph::HostArray<float>::view(nullptr, previous.data(),
                                                                              static_cast<std::size_t>(previous.size())),
                                                previous.rows(), previous.cols(), "layer outputs");
    for (std::size_t begin = 0; begin < plan.size(); begin += window) {
      const std::size_t end = std::min(plan.size(), begin + window);
      const auto chunks = parallel.sample(std::span<const samplers::BatchSpec>(plan).subspan(begin, end - begin));
      for (const graph::MiniBatch& chunk : chunks) {
        const graph::Block& block = chunk.blocks.front();
        // The chunk's destinations are consecutive node ids (the plan lists nodes in id order).
        const graph::NodeId first = chunk.targets[0];
        GNNPIPE_CHECK(chunk.targets[chunk.targets.size() - 1] == first + block.num_dst - 1,
                      "inference: chunk {} does not hold consecutive destinations", chunk.index);
        const models::MatrixView<float> y{out.data() + static_cast<int64_t>(first) * out.cols(), block.num_dst, out.cols()};
        if (on_gpu) {
          gpu->run(model, l, chunk, source, y);
          continue;
        }
        const std::size_t rows = chunk.input_nodes.size();
        input.resize(rows * static_cast<std::size_t>(in_cols));
        if (l == 0) {
          features.gather(chunk.input_nodes.span(), input);
        } else {
          const auto cols = static_cast<std::size_t>(in_cols);
          using Range = tbb::blocked_range<std::size_t>;
          tbb::parallel_for(Range(0, rows, 1024), core::tsan::fork_join([&](const Range& r) {
            for (std::size_t i = r.begin(); i != r.end(); ++i) {
              const float* src = previous.data() + static_cast<std::size_t>(chunk.input_nodes[i]) * cols;
              std::copy(src, src + cols, input.begin() + static_cast<std::ptrdiff_t>(i * cols));
            }
          }));
        }
        model.infer_layer(l, block, models::MatrixView<const float>{input.data(), static_cast<int64_t>(rows), in_cols}, y);
      }
    }
    previous = std::move(out);
  }
  return previous;
}

}  // namespace gnnpipe::pipeline
