#include "gnnpipe/pipeline/layerwise_inference.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/models/ops/sparse_input.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "chunk_cache.hpp"
#include "sparse_rows_gather.hpp"
#include "transformed_store.hpp"

namespace gnnpipe::pipeline {
namespace {

// Which packed array each chunk is copied into: with two, chunk k of a call goes to array k % 2,
// so that on a GPU chunk k + 1's copy (on a copy stream) runs while chunk k's layer does. The
// second array is used while its size class fits `overlap_bytes` (what the budget leaves beside
// the plan); a chunk that would grow it past that gives it up, and every later chunk of the call
// shares the first (its copy then waits for the previous chunk's layer). Decided from sizes
// alone, so the CPU backend's budget charges follow the GPU's arrays exactly.
class PackedArrays {
 public:
  explicit PackedArrays(std::size_t overlap_bytes) : overlap_bytes_(overlap_bytes), shared_(overlap_bytes == 0) {}

  struct Choice {
    std::size_t array;  // 0 or 1
    bool give_up;       // the second array was given up at this chunk: its memory goes back
  };

  // The array of the next chunk, whose packed bytes are `bytes`.
  Choice next(std::size_t bytes) {
    const bool odd = (chunk_++ % 2) == 1;
    if (shared_ || !odd) return {0, false};
    if (memory::CachingAllocator::size_class(bytes) <= overlap_bytes_) return {1, false};
    shared_ = true;  // for the rest of the call
    return {0, true};
  }

 private:
  std::size_t overlap_bytes_;
  bool shared_;
  int64_t chunk_ = 0;
};

// Runs chunks through a layer on the model's GPU (and, with device_outputs, on either backend:
// run_on_device), with a ring of pinned staging pairs: chunk c is
// packed into slot c % kRingSlots (its input rows gathered from `source`, its block) while the
// chunks before it still run, copied to the device in one piece on a copy stream of its own, run
// on the context's stream once the copy is done, and its outputs copied back (on the context's
// stream) into the slot's pinned output buffer. The copy goes into one of two device arrays
// (PackedArrays): with two, a chunk's copy overlaps the previous chunk's layer; a copy never
// starts before the layer that last read its array has finished. A slot is retired (its event
// waited for, its outputs copied into their rows of the result) before it is packed again;
// flush() retires them all.
class DeviceChunkRunner {
 public:
  static constexpr std::size_t kRingSlots = 2;

  explicit DeviceChunkRunner(const models::OpContext& ctx) : ctx_(ctx), copy_(ctx.device()) {
    for (std::size_t i = 0; i < kRingSlots; ++i) slots_.emplace_back(ctx.device());
    for (std::size_t i = 0; i < arrays_.size(); ++i) arrays_[i].emplace(ctx.device());
  }
  ~DeviceChunkRunner() { discard(); }
  DeviceChunkRunner(const DeviceChunkRunner&) = delete;
  DeviceChunkRunner& operator=(const DeviceChunkRunner&) = delete;

  const models::OpContext& context() const { return ctx_; }
  std::size_t pinned_bytes() const {
    std::size_t total = 0;
    for (const Slot& s : slots_) total += s.in.size() + s.out.size();
    return total;
  }
  int64_t pinned_allocations() const { return pinned_allocations_; }

  // Queues chunk `chunk` (laid out as `layout`, its rows from `source`) through layer l, copied
  // into packed array `array` (0 or 1); its outputs are in `out_rows` once a later run() has
  // retired its slot or flush() returned.
  void run(models::GnnModel<float>& model, std::size_t l, const graph::MiniBatch& chunk, const BatchLayout& layout,
           const graph::FeatureStore& source, models::MatrixView<float> out_rows, std::size_t array) {
    Slot& slot = slots_[next_++ % slots_.size()];
    retire(slot);
    grow(slot.in, layout.total_bytes);
    pack_batch(chunk, source, {}, layout, slot.in.data());
    const PackedBatchView view = PackedBatchView::of(layout, nullptr, copy_in(slot, layout, array));
    const models::MatrixView<float> y = y_.matrix(ctx_, out_rows.rows, out_rows.cols);
    model.infer_layer(l, view.blocks.front(), view.features, y, true);
    consumed(array);
    const std::size_t out_bytes = static_cast<std::size_t>(y.size()) * sizeof(float);
    grow(slot.out, out_bytes);
    core::copy_bytes_async(slot.out.data(), y.data, out_bytes, ctx_.stream());
    slot.done.record(ctx_.stream());
    slot.target = out_rows;
    slot.pending = true;
  }

  // Queues chunk `chunk` through layer l with its outputs written straight into `y` (rows of
  // an activation array in the context's memory: nothing comes back). Layer 0 reads the rows the
  // packed chunk carries (`layout` with feature columns, from `source`); a later layer's chunk
  // carries ids only (`layout` without feature columns) and its rows are gathered from `input`,
  // the previous layer's outputs for every node, into an array of the runner's.
  void run_on_device(models::GnnModel<float>& model, std::size_t l, const graph::MiniBatch& chunk,
                     const BatchLayout& layout, const graph::FeatureStore& source, models::MatrixView<const float> input,
                     models::MatrixView<float> y, std::size_t array) {
    Slot& slot = slots_[next_++ % slots_.size()];
    retire(slot);
    grow(slot.in, layout.total_bytes);
    pack_batch(chunk, source, {}, layout, slot.in.data());
    const PackedBatchView view = PackedBatchView::of(layout, nullptr, copy_in(slot, layout, array));
    models::MatrixView<const float> x = view.features;
    if (layout.feature_cols == 0) {
      const models::MatrixView<float> rows =
          rows_.matrix(ctx_, static_cast<int64_t>(chunk.input_nodes.size()), input.cols);
      models::ops::copy_rows<float>(ctx_, input, view.input_nodes, rows, {});
      x = rows;
    }
    model.infer_layer(l, view.blocks.front(), x, y, true);
    consumed(array);
  }

  // Gives packed array `array` back (PackedArrays gave it up), once the layer that last read it
  // has finished.
  void release(std::size_t array) {
    Packed& packed = *arrays_[array];
    if (packed.used) copy_.wait(packed.consumed);
    packed.data.release(copy_);
  }

  // Readies the runner for a call: nothing of an earlier, failed call stays queued, and the second
  // packed array goes back (a call takes it again within its own overlap_bytes).
  void start() {
    discard();
    release(1);
  }

  // Waits for every queued chunk and puts its outputs in place.
  void flush() {
    for (Slot& slot : slots_) retire(slot);
  }

  // Forgets queued chunks (after a failure): waits, ignoring errors, until the device no longer
  // uses the pinned buffers; outputs are not copied.
  void discard() noexcept {
    try {
      copy_.synchronize();  // a copy whose chunk failed before its slot was queued
      for (Slot& slot : slots_) {
        if (slot.pending) slot.done.synchronize();
      }
    } catch (const std::exception&) {
      // A device fault: the error was reported where it happened.
    }
    for (Slot& slot : slots_) {
      slot.pending = false;
      slot.copied = false;
    }
  }

 private:
  struct Slot {
    explicit Slot(core::Device device) : done(device), in_read(device) {}
    core::Buffer<std::byte> in, out;  // pinned
    core::Event done;                 // recorded after the chunk's outputs were copied into `out`
    core::Event in_read;              // on the copy stream: the copy out of `in` is done
    models::MatrixView<float> target{};
    bool pending = false;
    bool copied = false;  // `in` was handed to the copy stream since the slot was last retired
  };

  // A packed array on the device and the events that order its copies and the layers reading it.
  struct Packed {
    explicit Packed(core::Device device) : copied(device), consumed(device) {}
    models::DeviceArray<std::byte> data;
    core::Event copied;    // on the copy stream: the latest chunk is in `data`
    core::Event consumed;  // on the context's stream: the layer that read it has finished
    bool used = false;
  };

  // Copies `slot`'s packed chunk into packed array `array` on the copy stream, once the layer that
  // read the array last has finished; the context's stream waits for the copy. Returns the array.
  std::byte* copy_in(Slot& slot, const BatchLayout& layout, std::size_t array) {
    Packed& packed = *arrays_[array];
    if (packed.used) copy_.wait(packed.consumed);  // the layer that read the array last has finished
    std::byte* dev = packed.data.ensure(ctx_.allocator(), copy_, layout.total_bytes);
    core::copy_bytes_async(dev, slot.in.data(), layout.total_bytes, copy_);
    packed.copied.record(copy_);
    slot.in_read.record(copy_);
    slot.copied = true;  // the copy stream reads slot.in until in_read
    ctx_.stream().wait(packed.copied);
    return dev;
  }

  // The layer that reads packed array `array` was queued on the context's stream.
  void consumed(std::size_t array) {
    Packed& packed = *arrays_[array];
    packed.consumed.record(ctx_.stream());
    packed.used = true;
  }

  void retire(Slot& slot) {
    if (!slot.pending) {
      if (slot.copied) slot.in_read.synchronize();  // its chunk's copy may still read `in`
      slot.copied = false;
      return;
    }
    slot.done.synchronize();
    std::memcpy(slot.target.data, slot.out.data(), static_cast<std::size_t>(slot.target.size()) * sizeof(float));
    slot.pending = false;
    slot.copied = false;  // the chunk's layer waited for its copy, and done follows the layer
  }

  // Pinned memory grows with 1/4 headroom and is kept: a retired slot is not in use.
  void grow(core::Buffer<std::byte>& buffer, std::size_t bytes) {
    if (buffer.size() >= bytes) return;
    buffer = core::Buffer<std::byte>();
    buffer = core::Buffer<std::byte>(bytes + bytes / 4, core::MemoryKind::kStaging, ctx_.device());
    ++pinned_allocations_;
  }

  const models::OpContext& ctx_;
  core::Stream copy_;  // declared before the arrays: their memory is freed in its order
  std::vector<Slot> slots_;
  std::size_t next_ = 0;
  int64_t pinned_allocations_ = 0;
  std::array<std::optional<Packed>, 2> arrays_;
  models::DeviceArray<float> y_;     // a chunk's outputs before they come back (run)
  models::DeviceArray<float> rows_;  // a chunk's input rows gathered on the device (run_on_device)
};

// Discards what a failed call left queued in the runner.
struct DiscardOnFailure {
  DeviceChunkRunner* runner;
  int exceptions = std::uncaught_exceptions();
  ~DiscardOnFailure() {
    if (runner != nullptr && std::uncaught_exceptions() > exceptions) runner->discard();
  }
};

// The plan of `chunks`: chunk c's destinations as seeds, in id order.
std::vector<samplers::BatchSpec> chunk_specs(const InferenceChunks& chunks, int64_t num_nodes) {
  GNNPIPE_CHECK(!chunks.bounds.empty() && chunks.bounds.front() == 0 && chunks.bounds.back() == num_nodes &&
                    chunks.keep_edges.size() + 1 == chunks.bounds.size(),
                "inference: the chunks do not cover the graph's {} nodes", num_nodes);
  std::vector<samplers::BatchSpec> plan(chunks.keep_edges.size());
  for (std::size_t c = 0; c < plan.size(); ++c) {
    GNNPIPE_CHECK(chunks.bounds[c] < chunks.bounds[c + 1], "inference: chunk {} is empty", c);
    plan[c].index = static_cast<int64_t>(c);
    plan[c].seeds.resize(static_cast<std::size_t>(chunks.bounds[c + 1] - chunks.bounds[c]));
    std::iota(plan[c].seeds.begin(), plan[c].seeds.end(), chunks.bounds[c]);
  }
  return plan;
}

// Samples `plan`'s chunks `window` at a time (in parallel), cuts those `options.chunks` plans
// to fewer edges, and calls fn(chunk, first) for each in order: `first` is its first destination,
// and its destinations are first, first + 1, ... (checked: the plan lists nodes in id order).
// (Only the chunks [from, to) of the plan: a shard's.)
template <class Fn>
void for_each_chunk(samplers::ParallelSampler& parallel, const std::vector<samplers::BatchSpec>& plan,
                    const LayerwiseInferenceOptions& options, detail::ChunkCache& cache, Fn&& fn, std::size_t from = 0,
                    std::size_t to = std::numeric_limits<std::size_t>::max()) {
  const auto window = static_cast<std::size_t>(options.parallel_chunks);
  to = std::min(to, plan.size());
  for (std::size_t begin = from; begin < to; begin += window) {
    const std::size_t end = std::min(to, begin + window);
    if (cache.holds(begin, end)) {
      for (std::size_t k = begin; k < end; ++k) {
        const graph::MiniBatch& chunk = cache.chunk(k);
        fn(chunk, chunk.targets[0]);
      }
      continue;
    }
    auto chunks = parallel.sample(std::span<const samplers::BatchSpec>(plan).subspan(begin, end - begin));
    cache.count_sampled(chunks.size());
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      const int64_t keep = options.chunks != nullptr ? options.chunks->keep_edges[begin + k] : -1;
      std::optional<graph::MiniBatch> was_cut = cut_inference_chunk(chunks[k], keep, options.cut);
      graph::MiniBatch& chunk = was_cut ? *was_cut : chunks[k];
      const graph::NodeId first = chunk.targets[0];
      GNNPIPE_CHECK(chunk.targets[chunk.targets.size() - 1] == first + chunk.blocks.front().num_dst - 1,
                    "inference: chunk {} does not hold consecutive destinations", chunk.index);
      fn(chunk, first);
      cache.offer(begin + k, std::move(chunk), options.cache_bytes);
    }
  }
}

// Shard r's chunks of a plan of `chunks`: the contiguous run [chunks * r / shards, chunks * (r + 1) / shards).
std::size_t shard_begin(std::size_t chunks, int shard, int shards) {
  return chunks * static_cast<std::size_t>(shard) / static_cast<std::size_t>(shards);
}

// Where each shard's rows begin (the first destination of its first chunk; the node count for a
// shard without chunks), and the node count last.
std::vector<int64_t> shard_row_offsets(const std::vector<samplers::BatchSpec>& plan, int shards, int64_t nodes) {
  std::vector<int64_t> offsets;
  for (int r = 0; r < shards; ++r) {
    const std::size_t first = shard_begin(plan.size(), r, shards);
    offsets.push_back(first < plan.size() ? static_cast<int64_t>(plan[first].seeds.front()) : nodes);
  }
  offsets.push_back(nodes);
  return offsets;
}

}  // namespace

struct InferenceWorkspace::State {
  std::optional<DeviceChunkRunner> runner;
  detail::ChunkCache chunks;  // LayerwiseInferenceOptions::cache_bytes
  // device_outputs: the two activation arrays layers alternate between, [nodes x widest output]
  // in the model context's memory, kept across calls (a run's evaluations) like the runner.
  std::array<models::DeviceArray<float>, 2> activations;
  const models::OpContext* activations_ctx = nullptr;

  DeviceChunkRunner& runner_for(const models::OpContext& ctx) {
    if (!runner || &runner->context() != &ctx) {
      runner.reset();
      runner.emplace(ctx);
    }
    return *runner;
  }
};

namespace {

// infer_layerwise with LayerwiseInferenceOptions::device_outputs: every chunk through the runner
// (on either backend), each layer's outputs written into an activation array of the workspace's
// and the next layer's rows gathered from it there; the last layer's outputs come back at the end.
models::Matrix<float> infer_on_device(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options,
                                      InferenceWorkspace& workspace, samplers::ParallelSampler& parallel,
                                      const std::vector<samplers::BatchSpec>& plan) {
  GNNPIPE_CHECK(features.cols() > 0, "inference: device_outputs needs the first layer's input rows (the store has no columns)");
  const models::OpContext& ctx = model.context();
  InferenceWorkspace::State& state = workspace.state();
  if (state.activations_ctx != &ctx) {
    for (auto& a : state.activations) a = models::DeviceArray<float>();
    state.activations_ctx = &ctx;
  }
  DeviceChunkRunner& runner = state.runner_for(ctx);
  runner.start();
  const DiscardOnFailure guard{&runner};
  PackedArrays arrays(options.overlap_bytes);
  const int64_t n = graph.num_nodes();
  models::MatrixView<const float> previous;  // the last layer's outputs, every node's, in ctx's memory
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    const models::MatrixView<float> out = state.activations[l % 2].matrix(ctx, n, model.layer_out_dim(l));
    for_each_chunk(parallel, plan, options, state.chunks, [&](const graph::MiniBatch& chunk, graph::NodeId first) {
      // Layer 0's chunks carry their feature rows (float32: 16-bit ones widened as packed); a
      // later layer's carry none and gather theirs from `previous`.
      const BatchLayout layout = BatchLayout::of(chunk, l == 0 ? features.cols() : 0);
      const PackedArrays::Choice choice = arrays.next(layout.total_bytes);
      if (choice.give_up) runner.release(1);
      const models::MatrixView<float> y{out.data + static_cast<int64_t>(first) * out.cols, chunk.blocks.front().num_dst,
                                        out.cols};
      runner.run_on_device(model, l, chunk, layout, features, previous, y, choice.array);
    });
    previous = out;
    if (options.on_layer) {
      models::Matrix<float> host(n, out.cols);
      core::copy_to_host_sync(host.data(), out.data, static_cast<std::size_t>(out.size()) * sizeof(float), ctx.stream());
      options.on_layer(l, host);
    }
  }
  runner.flush();  // every pinned staging slot free (nothing comes back through them)
  models::Matrix<float> logits(n, previous.cols);
  core::copy_to_host_sync(logits.data(), previous.data, static_cast<std::size_t>(previous.size()) * sizeof(float),
                          ctx.stream());
  return logits;
}

}  // namespace

InferenceWorkspace::InferenceWorkspace() : state_(std::make_unique<State>()) {}
InferenceWorkspace::~InferenceWorkspace() = default;
InferenceWorkspace::InferenceWorkspace(InferenceWorkspace&&) noexcept = default;
InferenceWorkspace& InferenceWorkspace::operator=(InferenceWorkspace&&) noexcept = default;
InferenceWorkspace::State& InferenceWorkspace::state() { return *state_; }
std::size_t InferenceWorkspace::pinned_bytes() const { return state_->runner ? state_->runner->pinned_bytes() : 0; }
int64_t InferenceWorkspace::pinned_allocations() const {
  return state_->runner ? state_->runner->pinned_allocations() : 0;
}
std::size_t InferenceWorkspace::cached_chunks() const { return state_->chunks.kept(); }
std::size_t InferenceWorkspace::cached_bytes() const { return state_->chunks.bytes(); }
int64_t InferenceWorkspace::sampled_chunks() const { return state_->chunks.sampled(); }

graph::FeatureStore layerwise_input(const models::GnnModel<float>& model, const graph::FeatureStore& features,
                                    const core::Stream& stream, std::vector<float>& host_copy) {
  if (!model.has_embedding()) return features;
  const models::MatrixView<const float> table = model.embedding();
  const auto count = static_cast<std::size_t>(table.size());
  const float* host = table.data;
  if (model.context().is_cuda()) {
    host_copy.resize(count);
    core::copy_to_host_sync(host_copy.data(), table.data, count * sizeof(float), stream);
    host = host_copy.data();
  }
  // The store only reads its values: the view's non-const pointer is never written through.
  return graph::FeatureStore(graph::HostArray<float>::view(nullptr, const_cast<float*>(host), count), table.rows,
                             table.cols, "learned embedding");
}

std::optional<int64_t> csr_feature_nonzeros(const models::GnnModel<float>& model, const graph::FeatureStore& features) {
  if (model.context().is_cuda() || !model.context().options().sparse_input || !model.infers_sparse_input() ||
      features.is_16bit() || features.partitioned() || features.cols() == 0) {
    return std::nullopt;
  }
  return models::cpu::sparse_nonzeros<float>({features.float_values().data(), features.rows(), features.cols()});
}

models::SparseRowsView<float> build_csr_features(const models::OpContext& ctx, const graph::FeatureStore& features,
                                                 int64_t nnz, models::DeviceArray<std::byte>& buffer, const char* who) {
  const std::size_t bytes = models::cpu::sparse_rows_bytes(features.rows(), nnz, sizeof(float));
  const models::SparseRowsView<float> view = models::cpu::sparse_rows<float>(
      {features.float_values().data(), features.rows(), features.cols()}, nnz, {buffer.ensure(ctx, bytes), bytes});
  core::logger().debug("{} reads the features in CSR form: {} non-zeros ({:.2f} % of {} x {}), {}", who, nnz,
                       100.0 * static_cast<double>(nnz) / static_cast<double>(features.rows() * features.cols()),
                       features.rows(), features.cols(), core::format_bytes(bytes));
  return view;
}

std::size_t device_outputs_bytes(const models::GnnModel<float>& model, int64_t num_nodes) {
  int64_t widest = 0;
  for (std::size_t l = 0; l < model.num_layers(); ++l) widest = std::max(widest, model.layer_out_dim(l));
  return 2 * memory::CachingAllocator::size_class(static_cast<std::size_t>(num_nodes * widest) * sizeof(float));
}

models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options) {
  InferenceWorkspace workspace;
  return infer_layerwise(model, graph, features, options, workspace);
}

namespace {

void check_call(const graph::CsrGraph& graph, const graph::FeatureStore& features,
                const LayerwiseInferenceOptions& options) {
  GNNPIPE_CHECK_CONFIG(options.parallel_chunks >= 1, "inference: parallel_chunks must be >= 1, got {}",
                       options.parallel_chunks);
  GNNPIPE_CHECK(features.rows() == graph.num_nodes(), "inference: {} feature rows for a graph of {} nodes",
                features.rows(), graph.num_nodes());
}

}  // namespace

models::Matrix<float> infer_layerwise(models::GnnModel<float>& model, const graph::CsrGraph& graph,
                                      const graph::FeatureStore& features, const LayerwiseInferenceOptions& options,
                                      InferenceWorkspace& workspace) {
  check_call(graph, features, options);
  const auto sampler = samplers::make_inference_sampler(graph, model.block_norm(), options.chunk_nodes);
  samplers::ParallelSampler parallel(*sampler);
  const std::vector<samplers::BatchSpec> plan =
      options.chunks != nullptr ? chunk_specs(*options.chunks, graph.num_nodes()) : sampler->plan_epoch(0);
  detail::ChunkCache& cache = workspace.state().chunks;
  cache.use(options.cache_bytes > 0 ? detail::chunk_plan_key(graph, model.block_norm(), plan, options) : 0, plan.size());
  if (options.device_outputs) return infer_on_device(model, graph, features, options, workspace, parallel, plan);
  GNNPIPE_CHECK(options.shards >= 1 && options.shard >= 0 && options.shard < options.shards &&
                    (options.shards == 1 || (options.share_rows && !model.context().is_cuda())),
                "inference: shard {} of {} (sharding needs share_rows and the CPU backend)", options.shard, options.shards);
  const std::size_t from = shard_begin(plan.size(), options.shard, options.shards);
  const std::size_t to = shard_begin(plan.size(), options.shard + 1, options.shards);
  const std::vector<int64_t> row_offsets =
      options.shards > 1 ? shard_row_offsets(plan, options.shards, graph.num_nodes()) : std::vector<int64_t>{};

  models::Matrix<float> previous;  // the last layer's outputs for every node (empty before layer 0)
  std::vector<float> input;        // one chunk's input rows, reused (CPU)
  // CPU: layer 0's rows as the non-zeros of the features' CSR form, where given and usable.
  const models::SparseRowsView<float>* const sparse =
      options.sparse_features != nullptr && !model.context().is_cuda() && model.infers_sparse_input()
          ? options.sparse_features
          : nullptr;
  GNNPIPE_CHECK(sparse == nullptr || (sparse->rows == features.rows() && sparse->cols == features.cols()),
                "inference: sparse features of another shape than the store's [{} x {}]", features.rows(),
                features.cols());
  detail::SparseRowsGather sparse_chunk;
  // charge_packed: the CPU backend's twin of the GPU's packed chunk, the budget it would take there
  // (grown like its device array: the old charge goes back, then the larger one is taken), while
  // the rows themselves are gathered into `input`. So a budget binds both backends alike.
  memory::CachingAllocator* const budget = options.charge_packed ? model.context().allocator() : nullptr;
  std::array<memory::BudgetCharge, 2> packed_charge;  // one per packed array (PackedArrays)
  PackedArrays arrays(options.overlap_bytes);
  const bool on_gpu = model.context().is_cuda();
  DeviceChunkRunner* gpu = on_gpu ? &workspace.state().runner_for(model.context()) : nullptr;
  if (gpu != nullptr) gpu->start();
  const DiscardOnFailure guard{gpu};
  detail::TransformedStore transformed;
  for (std::size_t l = 0; l < model.num_layers(); ++l) {
    const int64_t in_cols = l == 0 ? features.cols() : previous.cols();
    models::Matrix<float> out(graph.num_nodes(), model.layer_out_dim(l));
    // The layer's input rows of `ids` into `input` (CPU).
    const auto gather_input = [&](std::span<const graph::NodeId> ids) {
      input.resize(ids.size() * static_cast<std::size_t>(in_cols));
      if (l == 0) {
        features.gather(ids, input);
        return;
      }
      const auto cols = static_cast<std::size_t>(in_cols);
      using Range = tbb::blocked_range<std::size_t>;
      tbb::parallel_for(Range(0, ids.size(), 1024), core::tsan::fork_join([&](const Range& r) {
        for (std::size_t i = r.begin(); i != r.end(); ++i) {
          const float* src = previous.data() + static_cast<std::size_t>(ids[i]) * cols;
          std::copy(src, src + cols, input.begin() + static_cast<std::ptrdiff_t>(i * cols));
        }
      }));
    };
    // A layer with a row transform (GAT) on the CPU transforms every row once, before its chunks,
    // rather than every chunk all its sources (at degree 50 most of the graph a chunk): in runs of
    // each chunk's destinations (no more rows than the chunk's arrays hold), every chunk's on every
    // shard, so that a row's bits do not depend on the shard. Not where layer 0 reads the CSR form.
    const bool once = !on_gpu && model.transforms_rows(l) && !(l == 0 && sparse != nullptr);
    if (once) {
      transformed.reset(graph.num_nodes(), model.transform_width(l), model.transform_heads(l));
      for (const samplers::BatchSpec& spec : plan) {
        gather_input(spec.seeds);
        transformed.put(spec.seeds,
                        model.infer_transform_rows(l, {input.data(), static_cast<int64_t>(spec.seeds.size()), in_cols}));
      }
    }
    // On the GPU, chunks are packed from the layer's input: the features, then a feature-store view
    // of the previous layer's outputs.
    const graph::FeatureStore source =
        l == 0 || !on_gpu ? features
                          : graph::FeatureStore(graph::HostArray<float>::view(nullptr, previous.data(),
                                                                              static_cast<std::size_t>(previous.size())),
                                                previous.rows(), previous.cols(), "layer outputs");
    for_each_chunk(parallel, plan, options, cache, [&](const graph::MiniBatch& chunk, graph::NodeId first) {
      const graph::Block& block = chunk.blocks.front();
      const models::MatrixView<float> y{out.data() + static_cast<int64_t>(first) * out.cols(), block.num_dst, out.cols()};
      const BatchLayout layout = BatchLayout::of(chunk, in_cols);
      const PackedArrays::Choice choice = arrays.next(layout.total_bytes);
      if (on_gpu) {
        if (choice.give_up) gpu->release(1);
        gpu->run(model, l, chunk, layout, source, y, choice.array);
        return;
      }
      const std::size_t rows = chunk.input_nodes.size();
      if (choice.give_up) packed_charge[1].release();
      if (budget != nullptr) {
        const std::size_t packed = memory::CachingAllocator::size_class(layout.total_bytes);
        memory::BudgetCharge& charge = packed_charge[choice.array];
        if (packed > charge.bytes()) {
          charge.release();
          charge = budget->charge(packed);
        }
      }
      if (l == 0 && sparse != nullptr) {
        model.infer_first_layer(block, sparse_chunk.gather(*sparse, chunk.input_nodes.span()), y, true);
        return;
      }
      if (once) {
        transformed.get(chunk.input_nodes.span(), model.transformed_rows(l, static_cast<int64_t>(rows)));
        model.infer_transformed(l, block, y);
        return;
      }
      gather_input(chunk.input_nodes.span());
      model.infer_layer(l, block, models::MatrixView<const float>{input.data(), static_cast<int64_t>(rows), in_cols}, y, true);
    }, from, to);
    if (gpu != nullptr) gpu->flush();  // every output of the layer in place before the next reads them
    if (options.shards > 1) options.share_rows(out, row_offsets);  // the other shards' rows
    if (options.on_layer) options.on_layer(l, out);
    previous = std::move(out);
  }
  return previous;
}

}  // namespace gnnpipe::pipeline
