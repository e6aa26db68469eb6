#include "input_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <numeric>
#include <optional>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"

namespace gnnpipe::pipeline::detail {

InputPlacement::InputPlacement(const TrainingSetup& s, memory::CachingAllocator& allocator,
                               const core::Stream& copy_stream, bool resident_candidate, bool fixed_batch)
    : s_(s),
      device_(s.model.context().device()),
      allocator_(allocator),
      copy_stream_(copy_stream),
      resident_candidate_(resident_candidate),
      fixed_batch_(fixed_batch) {}

// Multi-label targets: the 0/1 matrix [N x C] lives in the train context's memory for the run (on
// the CPU backend: the host matrix, charged to the budget as a GPU copy would be); packed batches
// carry each target's node id in their label section, and the train step gathers the rows.
void InputPlacement::place_labels() {
  const graph::Labels& labels = s_.data.labels;
  if (!labels.is_multi_label()) return;
  node_ids_ = graph::HostArray<int32_t>(static_cast<std::size_t>(s_.data.num_nodes()));
  std::iota(node_ids_.begin(), node_ids_.end(), 0);
  const std::size_t bytes = labels.multi.size();
  if (!device_.is_cuda()) {
    labels_charge_ = allocator_.charge(bytes);
    label_matrix_ = labels.multi.data();
    return;
  }
  uint8_t* dst = device_labels_.ensure(&allocator_, copy_stream_, bytes);
  core::Buffer<uint8_t> bounce(bytes, core::MemoryKind::kStaging, device_);
  std::memcpy(bounce.data(), labels.multi.data(), bytes);
  core::copy_bytes_async(dst, bounce.data(), bytes, copy_stream_);
  copy_stream_.synchronize();
  label_matrix_ = dst;
}

std::span<const int32_t> InputPlacement::label_source() const {
  return s_.data.labels.is_multi_label() ? node_ids_.span() : s_.data.labels.single.span();
}

// memory.features, decided by memory::plan_features from what the budget leaves after what is
// resident now and evaluation's bound, and from what the probe's batches take on top of that at
// most (the device slots and the train stream's arrays as the governor predicts them, packed with
// every row and assembled on the device, plus a quarter for the batches not sampled yet, plus the
// governor's tolerance of the budget; when one of them does not fit unsplit, the device side gets
// half of what is left); device and cache
// insist (an OutOfBudget naming memory.limit when they cannot fit). The device copy keeps the
// store's type: fp16/bf16 rows stay 16-bit there.
void InputPlacement::place_features(const Probe& probe, std::size_t eval_bound, const PredictProbe& predict) {
  const graph::FeatureStore& f = s_.data.features;
  const memory::FeaturePlacement wanted = s_.memory.features;
  // (A learned embedding's run has no feature columns: there is nothing to place.)
  if (wanted == memory::FeaturePlacement::kHost || f.empty() || f.cols() == 0) return;
  GNNPIPE_CHECK_CONFIG(!f.partitioned() || wanted != memory::FeaturePlacement::kDevice,
                       "memory.features: device holds the whole feature matrix, and dataset.partition {} gives rank {} "
                       "{} of its {} rows; use memory.features: auto, cache or host",
                       graph::to_string(f.shard()->owners.scheme), f.shard()->owners.rank, f.local_rows(), f.rows());
  const std::size_t row_bytes = f.bytes_per_row();
  const auto bytes = static_cast<std::size_t>(f.rows()) * row_bytes;
  const std::size_t taken = allocator_.stats().in_use_bytes + eval_bound;
  const std::size_t left = allocator_.budget() > taken ? allocator_.budget() - taken : 0;
  std::optional<std::size_t> batches;
  if (!probe.batches.empty()) {
    // Packed with every row and assembled on the device: the most any placement takes.
    if (const std::optional<std::size_t> most = predict(f.cols(), true)) {
      // The governor admits a batch while its prediction stays within (1 - tolerance) of the budget.
      const std::size_t need = *most > taken ? *most - taken : 0;
      const auto slack = static_cast<std::size_t>(std::ceil(static_cast<double>(allocator_.budget()) * s_.memory.tolerance));
      batches = need + need / 4 + slack;
    }
  }
  const memory::FeaturePlan plan = memory::plan_features(wanted, f.rows(), row_bytes, left, batches);
  if (plan.where == memory::FeaturePlacement::kHost) return;
  // A batch that may stay resident (a full batch) carries every row once, in its packed form; a
  // cache beside it would hold the hit rows a second time and the train stage would assemble all of
  // them into a third array, so that the batch splits into far more micro-batches than with its rows
  // on the host (Cora at 17-30 MiB: 48 against 2), or not at all (the 34,493 x 8,415 graph at
  // 2 GiB). auto gives such a batch the whole matrix where the batch fits unsplit beside it, and
  // otherwise keeps the rows on the host, where a split batch takes them a micro-batch at a time:
  // auto then fails only where host placement fails too.
  if (wanted == memory::FeaturePlacement::kAuto && fixed_batch_ &&
      (plan.where == memory::FeaturePlacement::kCache || !batches)) {
    return;
  }
  // On the CPU backend a device gather runs on the train thread, while the host gather of a sampled
  // batch overlaps training on the sampler threads: auto keeps sampled runs' features on the host
  // there (their memory is host memory either way), and moves only a fixed batch's. A fixed batch
  // that is not resident (MH-Aug's full batch, whose views change) would otherwise gather and copy
  // every row every epoch: Cora with MH-Aug, 2 cores, 5.5 -> 4.3 ms an epoch, the same bits.
  if (wanted == memory::FeaturePlacement::kAuto && !device_.is_cuda() && !fixed_batch_) return;
  if (plan.where == memory::FeaturePlacement::kCache) {
    build_cache(plan.cache_rows);
    return;
  }
  // (A partitioned store has no whole matrix to place: auto keeps its rows where they are, and a
  // batch carries the ones it reads.)
  if (f.partitioned()) return;
  if (wanted == memory::FeaturePlacement::kDevice) {
    const std::size_t in_use = allocator_.stats().in_use_bytes;
    const std::size_t free = allocator_.budget() > in_use ? allocator_.budget() - in_use : 0;
    // (The CPU backend charges the bytes themselves; a device allocation takes its size class.)
    const std::size_t need = device_.is_cuda() ? memory::CachingAllocator::size_class(bytes) : bytes;
    GNNPIPE_CHECK_AS(OutOfBudget, need <= free,
                     "memory.features: device: the feature matrix ({} x {} {}, {}) does not fit the {} the budget of {} "
                     "leaves on {} (memory.limit); use memory.features: auto, cache or host",
                     f.rows(), f.cols(), to_string(f.dtype()), core::format_bytes(bytes), core::format_bytes(free),
                     core::format_bytes(allocator_.budget()), device_.str());
  }
  const auto* host = f.is_16bit() ? reinterpret_cast<const std::byte*>(f.raw_16bit().data())
                                  : reinterpret_cast<const std::byte*>(f.float_values().data());
  if (!device_.is_cuda()) {
    // The CPU backend reads the host matrix in place and charges the budget a GPU copy would take.
    features_charge_ = allocator_.charge(bytes);
    device_store_ = host;
  } else {
    // Copied once on the copy stream through a pinned bounce buffer (the store is pageable, often
    // memory-mapped), 64 MiB at a time.
    std::byte* dst = device_features_.ensure(&allocator_, copy_stream_, bytes);
    constexpr std::size_t kChunk = std::size_t{64} << 20;
    core::Buffer<std::byte> bounce(std::min(kChunk, bytes), core::MemoryKind::kStaging, device_);
    for (std::size_t done = 0; done < bytes; done += kChunk) {
      const std::size_t n = std::min(kChunk, bytes - done);
      std::memcpy(bounce.data(), host + done, n);
      core::copy_bytes_async(dst + done, bounce.data(), n, copy_stream_);
      copy_stream_.synchronize();
    }
    device_store_ = dst;
  }
  device_store_rows_ = f.rows();
  features_on_device_ = true;
  core::logger().debug("memory.features {}: the {} feature matrix is on the {} for the run; batches carry node ids and "
                       "their rows are gathered there",
                       to_string(wanted), core::format_bytes(bytes), device_.str());
}

// memory.features cache: the `rows` rows sampled most often: with memory.cache_rank degree, taken
// to be the nodes that are most often a neighbour (most appearances among the graph's in-edge
// sources; ties: lower id), PaGraph's choice; with presample, the nodes most often among the input
// rows of the first cache_presample_epochs epochs' batches, sampled now (a batch is a function of
// (seed, epoch, batch), so epoch 1's counts are exactly what epoch 1 will read; GNNLab's choice),
// ties by the degree count. They are gathered on the host in 64 MiB chunks (in the store's type) and copied into the
// cache on the copy stream (on the CPU backend a memcpy into allocator memory, charged like a GPU's).
std::vector<int64_t> InputPlacement::presampled_appearances() const {
  std::vector<int64_t> counts(static_cast<std::size_t>(s_.data.graph.num_nodes()), 0);
  samplers::ParallelSampler parallel(s_.sampler);
  const auto window = static_cast<std::size_t>(std::max(1, s_.pipeline.sampler_threads) * 2);
  for (int epoch = 1; epoch <= s_.memory.cache_presample_epochs; ++epoch) {
    const std::vector<samplers::BatchSpec> plan = s_.sampler.plan_epoch(epoch);
    for (std::size_t begin = 0; begin < plan.size(); begin += window) {
      const std::size_t n = std::min(window, plan.size() - begin);
      for (const graph::MiniBatch& batch : parallel.sample(std::span<const samplers::BatchSpec>(plan).subspan(begin, n))) {
        for (const graph::NodeId v : batch.input_nodes.span()) ++counts[static_cast<std::size_t>(v)];
      }
    }
  }
  return counts;
}

void InputPlacement::build_cache(int64_t rows) {
  const graph::CsrGraph& g = s_.data.graph;
  const graph::FeatureStore& f = s_.data.features;
  std::vector<int64_t> appearances(static_cast<std::size_t>(g.num_nodes()), 0);
  for (graph::NodeId u : g.indices()) ++appearances[static_cast<std::size_t>(u)];
  std::vector<int64_t> sampled;
  if (s_.memory.cache_rank == memory::CacheRank::kPresample) sampled = presampled_appearances();
  std::vector<graph::NodeId> order(appearances.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](graph::NodeId a, graph::NodeId b) {
    const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
    if (!sampled.empty() && sampled[i] != sampled[j]) return sampled[i] > sampled[j];
    return appearances[i] > appearances[j];
  });
  order.resize(static_cast<std::size_t>(rows));
  cache_slot_of_.assign(appearances.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) cache_slot_of_[static_cast<std::size_t>(order[i])] = static_cast<int32_t>(i);
  const std::size_t row_bytes = f.bytes_per_row();
  std::byte* dst = cache_.ensure(&allocator_, copy_stream_, static_cast<std::size_t>(rows) * row_bytes);
  const std::size_t chunk_rows = std::max<std::size_t>(1, (std::size_t{64} << 20) / row_bytes);
  core::Buffer<std::byte> bounce(std::min(chunk_rows, order.size()) * row_bytes, core::MemoryKind::kStaging, device_);
  const auto values = static_cast<std::size_t>(f.cols());
  for (std::size_t begin = 0; begin < order.size(); begin += chunk_rows) {
    const std::size_t n = std::min(chunk_rows, order.size() - begin);
    const auto ids = std::span<const graph::NodeId>(order).subspan(begin, n);
    if (f.is_16bit()) {
      f.gather_raw(ids, std::span<uint16_t>(reinterpret_cast<uint16_t*>(bounce.data()), n * values));
    } else {
      f.gather(ids, std::span<float>(reinterpret_cast<float*>(bounce.data()), n * values));
    }
    core::copy_bytes_async(dst + begin * row_bytes, bounce.data(), n * row_bytes, copy_stream_);
    copy_stream_.synchronize();
  }
  cache_store_ = dst;
  cache_rows_ = rows;
  core::logger().debug("memory.features cache: the {} most sampled rows of {} ({}) are cached on the {}", rows, f.rows(),
                       core::format_bytes(static_cast<std::size_t>(rows) * row_bytes), device_.str());
}

// Puts a part's input rows of type T into `out` on ctx's stream: from the device matrix by node id,
// or (a cache) its cached rows and the missed rows it carried (`carried`), each to its position.
template <class T>
void InputPlacement::assemble_rows(const BatchLayout& layout, const PackedBatchView& view, const models::OpContext& ctx,
                                   const T* carried, models::MatrixView<T> out) const {
  const int64_t cols = out.cols;
  if (layout.cached) {
    // (An empty row list means 0, 1, ...: no hits or no misses copy nothing.)
    const models::MatrixView<const T> cache{reinterpret_cast<const T*>(cache_store_), cache_rows_, cols};
    if (!view.cache_hits.empty()) models::ops::copy_rows<T>(ctx, cache, view.cache_slots, out, view.cache_hits);
    const models::MatrixView<const T> missed{carried, layout.feature_rows - layout.cached_rows, cols};
    if (!view.cache_misses.empty()) models::ops::copy_rows<T>(ctx, missed, {}, out, view.cache_misses);
  } else {
    const models::MatrixView<const T> all{reinterpret_cast<const T*>(device_store_), device_store_rows_, cols};
    models::ops::copy_rows<T>(ctx, all, view.input_nodes, out, {});
  }
}

// The float32 input rows of a packed batch: its own (host placement), the device matrix's first
// rows (its input nodes are 0..k-1 in order: a full batch), or assembled on ctx's stream into
// `scratch` (assemble_rows). fp16/bf16 rows are moved in 16 bits (into `scratch16`) and widened
// into `scratch` last, exactly.
models::MatrixView<const float> InputPlacement::input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                           const models::OpContext& ctx, InputScratch& scratch,
                                                           bool resident) const {
  const int64_t rows = layout.feature_rows;
  const int64_t cols = s_.data.features.cols();
  if (resident && scratch.resident.load(std::memory_order_acquire)) return scratch.rows.view(rows, cols);
  const models::MatrixView<const float> made = make_input_rows(layout, view, ctx, scratch);
  if (resident && made.data == scratch.rows.data()) {
    scratch.rows16.release(ctx.stream());  // only the widened rows are read again
    scratch.resident.store(true, std::memory_order_release);
  }
  return made;
}

models::MatrixView<const float> InputPlacement::make_input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                                const models::OpContext& ctx,
                                                                InputScratch& scratch) const {
  const int64_t rows = layout.feature_rows;
  const int64_t cols = s_.data.features.cols();
  const bool bf16 = layout.feature_dtype == graph::FeatureDType::kBFloat16;
  const auto widen = [&](const uint16_t* src) {
    const auto out = scratch.rows.matrix(ctx, rows, cols);
    models::ops::widen_16bit(ctx, src, bf16, rows * cols, out.data);
    return models::MatrixView<const float>(out);
  };
  const bool in_place = !layout.cached && !features_on_device_;
  if (layout.feature_dtype == graph::FeatureDType::kFloat32) {
    if (in_place) return view.features;
    if (layout.identity_rows) return {reinterpret_cast<const float*>(device_store_), rows, cols};
    const auto out = scratch.rows.matrix(ctx, rows, cols);
    assemble_rows<float>(layout, view, ctx, view.features.data, out);
    return out;
  }
  if (in_place) return widen(view.features16);
  if (layout.identity_rows) return widen(reinterpret_cast<const uint16_t*>(device_store_));
  const auto out16 = scratch.rows16.matrix(ctx, rows, cols);
  assemble_rows<uint16_t>(layout, view, ctx, view.features16, out16);
  return widen(out16.data);
}

void InputPlacement::describe(MemoryPlan& p) const {
  if (!cache_slot_of_.empty()) {
    p.features = "cache";
    p.cache_rows = cache_rows_;
    p.cache_rank = s_.memory.cache_rank == memory::CacheRank::kPresample
                       ? fmt::format("presample ({} epoch{})", s_.memory.cache_presample_epochs,
                                     s_.memory.cache_presample_epochs == 1 ? "" : "s")
                       : std::string("degree");
    p.device_features = static_cast<std::size_t>(cache_rows_) * s_.data.features.bytes_per_row();
  } else if (features_on_device_) {
    p.features = "device";
    p.device_features = static_cast<std::size_t>(device_store_rows_) * s_.data.features.bytes_per_row();
  }
}

}  // namespace gnnpipe::pipeline::detail
