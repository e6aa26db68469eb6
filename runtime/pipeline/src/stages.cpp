#include "stages.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/trace_range.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/samplers/inference_sampler.hpp"
#include "gnnpipe/pipeline/inference_plan.hpp"
#include "stage_failure.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kPartAlign = 256;  // parts start where a packed batch's sections would
constexpr int kMaxRetries = 8;           // each retry halves every part
// A split batch's micro-batches are packed ahead (by the governor's stage, into the batch's
// staging slot) while they take at most this many times the sampled batch's bytes; beyond, the
// train stage packs each one in turn (bounded host memory, at the cost of a gather on that thread).
constexpr std::size_t kMaxSplitStaging = 3;

// Removes and returns an epoch's entry (a value-initialised one when it has none).
template <class T>
T take_entry(std::map<int, T>& per_epoch, int epoch) {
  T value{};
  if (auto it = per_epoch.find(epoch); it != per_epoch.end()) {
    value = it->second;
    per_epoch.erase(it);
  }
  return value;
}

std::size_t align_up(std::size_t bytes) { return (bytes + kPartAlign - 1) / kPartAlign * kPartAlign; }

memory::CachingAllocator& allocator_of(const models::OpContext& ctx) {
  GNNPIPE_CHECK(ctx.allocator() != nullptr, "a training run needs an op context with an allocator (the memory budget)");
  return *ctx.allocator();
}

bool may_be_resident(const TrainingSetup& s) {
  return s.pipeline.resident && s.sampler.fixed_batch() && s.sampler.plan_epoch(1).size() == 1;
}

}  // namespace

Stages::Stages(const TrainingSetup& s)
    : s_(s),
      device_(s.model.context().device()),
      resident_candidate_(may_be_resident(s)),
      staging_(resident_candidate_ ? 1 : std::max(1, s.pipeline.staging_slots),
               core::MemoryKind::kStaging, device_),
      copy_stream_(device_),
      train_ctx_(s.model.context()),
      train_stream_(train_ctx_.stream()),
      allocator_(allocator_of(train_ctx_)),
      eval_stream_(device_),
      eval_ctx_(eval_stream_, train_ctx_.options(), train_ctx_.allocator()),
      epoch_end_(device_),
      snapshot_done_(device_),
      train_to_copy_(device_),
      copy_to_train_(device_),
      eval_model_(s.model_options, s.data.features.cols(), s.data.labels.num_classes, s.seed, eval_ctx_,
                  s.model.embedding().rows),
      losses_(train_ctx_) {
  // Epoch 1's first batches, sampled here once to plan the device slots and the feature placement
  // (a batch that may stay resident is the run's only one and has one slot: it is sampled only for
  // memory.features auto, which moves its features only where the batch fits beside them).
  const bool probe_resident = s.memory.features == memory::FeaturePlacement::kAuto && s.data.features.cols() > 0;
  const Probe probe = resident_candidate_ && !probe_resident ? Probe{} : sample_probe();
  std::size_t largest = 0;  // packed with every feature row: the most any placement packs
  for (const graph::MiniBatch& b : probe.batches) largest = std::max(largest, packed_bytes(b));
  const int slots = resident_candidate_ ? 1 : memory::plan_device_slots(staging_.size(), allocator_.budget(), largest);
  device_slots_.resize(static_cast<std::size_t>(slots));
  for (std::size_t i = 0; i < device_slots_.size(); ++i) {
    copied_.emplace_back(device_);
    released_.emplace_back(device_);
  }
  place_features(probe);
  place_labels();
  place_eval_graph();
  choose_eval_outputs(probe);
  // What is resident now stays for the run; the governor predicts everything else.
  governor_.emplace(governor_setup(packed_cols(), features_on_device_ || !cache_slot_of_.empty()));
  // A run resumed mid-epoch: that epoch's losses and counts so far (after the governor measured
  // what is resident, as the uninterrupted run's loss slots came after it too).
  if (const PartialEpoch& p = s.resumed_partial; p.epoch > 0) {
    losses_.resume(p.batches, p.losses, p.loss_rows);
    epoch_counters_[p.epoch] = p.counters;
  }
}

PartialEpoch Stages::partial_epoch(const Item& next) {
  PartialEpoch p;
  p.epoch = next.epoch;
  p.batches_done = next.spec.index;
  p.batches = next.batches;
  std::tie(p.losses, p.loss_rows) = losses_.prefix(next.spec.index, next.batches);
  const std::lock_guard lock(counters_mutex_);
  if (auto it = epoch_counters_.find(next.epoch); it != epoch_counters_.end()) p.counters = it->second;
  return p;
}

Stages::Probe Stages::sample_probe() const {
  constexpr std::size_t kProbeBatches = 4;
  const std::vector<samplers::BatchSpec> specs = s_.sampler.plan_epoch(1);
  Probe p;
  p.per_epoch = static_cast<int64_t>(specs.size());
  const std::size_t n = std::min(specs.size(), kProbeBatches);
  if (n == 0) return p;
  samplers::ParallelSampler sampler(s_.sampler);
  p.batches = sampler.sample(std::span<const samplers::BatchSpec>(specs).first(n));
  std::erase_if(p.batches, [](const graph::MiniBatch& b) { return b.loss_rows.empty(); });
  return p;
}

GovernorSetup Stages::governor_setup(int64_t packed_feature_cols, bool gathers_on_device) const {
  const std::size_t train_fixed = allocator_.in_use_bytes_on(train_stream_);
  const std::size_t resident = allocator_.stats().in_use_bytes;
  return GovernorSetup{s_.model, s_.data.features.cols(), s_.data.labels.num_classes, packed_feature_cols,
                       gathers_on_device, s_.data.features.dtype(), s_.memory, allocator_.budget(),
                       static_cast<int>(device_slots_.size()), resident - train_fixed, train_fixed, evaluation_bound(),
                       s_.cut_scores, s_.cut_weights, s_.seed};
}

// memory.features, decided by memory::plan_features from what the budget leaves after what is
// resident now and evaluation's bound, and from what the probe's batches take on top of that at
// most (the device slots and the train stream's arrays as the governor predicts them, packed with
// every row and assembled on the device, plus a quarter for the batches not sampled yet, plus the
// governor's tolerance of the budget; when one of them does not fit unsplit, the device side gets
// half of what is left); device and cache
// insist (an OutOfBudget naming memory.limit when they cannot fit). The device copy keeps the
// store's type: fp16/bf16 rows stay 16-bit there.
// Multi-label targets: the 0/1 matrix [N x C] lives in the train context's memory for the run (on
// the CPU backend: the host matrix, charged to the budget as a GPU copy would be); packed batches
// carry each target's node id in their label section, and the train step gathers the rows.
void Stages::place_labels() {
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

std::span<const int32_t> Stages::label_source() const {
  return s_.data.labels.is_multi_label() ? node_ids_.span() : s_.data.labels.single.span();
}

void Stages::place_features(const Probe& probe) {
  const graph::FeatureStore& f = s_.data.features;
  const memory::FeaturePlacement wanted = s_.memory.features;
  // (A learned embedding's run has no feature columns: there is nothing to place.)
  if (wanted == memory::FeaturePlacement::kHost || f.empty() || f.cols() == 0) return;
  const std::size_t row_bytes = f.bytes_per_row();
  const auto bytes = static_cast<std::size_t>(f.rows()) * row_bytes;
  const std::size_t taken = allocator_.stats().in_use_bytes + evaluation_bound();
  const std::size_t left = allocator_.budget() > taken ? allocator_.budget() - taken : 0;
  std::optional<std::size_t> batches;
  if (!probe.batches.empty()) {
    const MemoryGovernor planner(governor_setup(f.cols(), true));
    if (const std::optional<std::size_t> most = planner.predict_unsplit(probe.batches, probe.per_epoch)) {
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
  if (wanted == memory::FeaturePlacement::kAuto && resident_candidate_ &&
      (plan.where == memory::FeaturePlacement::kCache || !batches)) {
    return;
  }
  // On the CPU backend a device gather runs on the train thread, while the host gather of a sampled
  // batch overlaps training on the sampler threads: auto keeps sampled runs' features on the host
  // there (their memory is host memory either way), and moves only a fixed batch's.
  if (wanted == memory::FeaturePlacement::kAuto && !device_.is_cuda() && !resident_candidate_) return;
  if (plan.where == memory::FeaturePlacement::kCache) {
    build_cache(plan.cache_rows);
    return;
  }
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

void Stages::place_eval_graph() {
  const EvalGraph wanted = s_.pipeline.eval_graph;
  // (A fixed batch evaluates over itself.)
  if (resident_candidate_ || wanted == EvalGraph::kLayerwise || wanted == EvalGraph::kLayerwiseDevice) return;
  if (wanted == EvalGraph::kAuto && !device_.is_cuda()) return;
  const graph::CsrGraph& g = s_.data.graph;
  const graph::FeatureStore& f = s_.data.features;
  const int64_t n = g.num_nodes();
  if (n == 0 || n > std::numeric_limits<int32_t>::max()) return;
  // Features on the device are read in place (the batch carries ids); otherwise the packed batch
  // carries the whole matrix (a cache's rows alone would not do).
  const int64_t cols = features_on_device_ ? 0 : f.cols();
  const std::size_t taken = allocator_.stats().in_use_bytes;
  const std::size_t left = allocator_.budget() > taken ? allocator_.budget() - taken : 0;
  const std::size_t eval_arrays = resident_evaluation_bound();
  // An upper bound of the packed block before building it: offsets and transposed offsets, and per
  // entry (in-edges plus a self-loop per node) its source, weight, transposed source and edge id.
  const auto entries = static_cast<std::size_t>(g.num_edges() + n);
  const std::size_t estimate = 16 * static_cast<std::size_t>(n + 1) + 20 * entries + 8 * static_cast<std::size_t>(n) +
                               (cols > 0 ? static_cast<std::size_t>(n) * f.bytes_per_row() : 0) + (16 << 10);
  const auto fits = [&](std::size_t graph_bytes) {
    const std::size_t need = memory::CachingAllocator::size_class(graph_bytes) + eval_arrays;
    return wanted == EvalGraph::kResident ? need <= left : need <= left / 4;
  };
  const auto refuse = [&](std::size_t graph_bytes) {
    GNNPIPE_THROW(OutOfBudget,
                  "pipeline.eval_graph: resident: the whole graph's block ({}) and evaluation's arrays ({}) do not fit the "
                  "{} the budget leaves on {} (memory.limit); use pipeline.eval_graph: layerwise",
                  core::format_bytes(graph_bytes), core::format_bytes(eval_arrays), core::format_bytes(left), device_.str());
  };
  if (!fits(estimate) && wanted == EvalGraph::kAuto) return;
  const auto sampler = samplers::make_inference_sampler(g, eval_model_.block_norm(), static_cast<int>(n));
  const auto workspace = sampler->make_workspace();
  const graph::MiniBatch batch = sampler->sample(sampler->plan_epoch(0).front(), *workspace);
  const BatchLayout layout = BatchLayout::of(batch, cols, std::span<const int32_t>{}, f.dtype());
  if (!fits(layout.total_bytes)) {
    if (wanted == EvalGraph::kAuto) return;
    refuse(layout.total_bytes);
  }
  core::Buffer<std::byte> packed(layout.total_bytes, core::MemoryKind::kStaging, device_);
  pack_batch(batch, f, label_source(), layout, packed.data(), {});
  std::byte* dst = eval_graph_.ensure(&allocator_, copy_stream_, layout.total_bytes);
  core::copy_bytes_async(dst, packed.data(), layout.total_bytes, copy_stream_);
  copy_stream_.synchronize();
  eval_graph_layout_ = layout;
  eval_graph_resident_ = true;
  core::logger().debug("pipeline.eval_graph {}: the whole graph's block ({}) is on the {} for the run; evaluation runs "
                      "over it one layer at a time",
                      to_string(wanted), core::format_bytes(layout.total_bytes), device_.str());
}

void Stages::choose_eval_outputs(const Probe& probe) {
  const EvalGraph wanted = s_.pipeline.eval_graph;
  if (resident_candidate_ || eval_graph_resident_) return;
  if (wanted != EvalGraph::kLayerwiseDevice && !(wanted == EvalGraph::kAuto && device_.is_cuda())) return;
  const std::size_t host_path = evaluation_bound();
  eval_outputs_on_device_ = true;
  const std::size_t bound = evaluation_bound();
  const std::size_t in_use = allocator_.stats().in_use_bytes;
  const std::size_t usable = static_cast<std::size_t>(static_cast<double>(allocator_.budget()) * (1.0 - s_.memory.tolerance));
  // layerwise_device insists only that the arrays fit beside what is resident (the governor then
  // splits batches as it must); auto also wants the probed batches as the governor would admit them
  // beside the arrays, with a quarter more for the batches not sampled (as place_features plans),
  // to need no split for them.
  bool fits = in_use + bound <= usable;
  if (fits && wanted == EvalGraph::kAuto && !probe.batches.empty()) {
    const MemoryGovernor planner(governor_setup(packed_cols(), features_on_device_ || !cache_slot_of_.empty()));
    const std::optional<std::size_t> most = planner.predict_unsplit(probe.batches, probe.per_epoch);
    const std::size_t fixed = in_use + bound;
    fits = most.has_value() && *most + (*most > fixed ? *most - fixed : 0) / 4 <= usable;
  }
  if (fits) {
    core::logger().debug("pipeline.eval_graph {}: evaluation keeps every layer's outputs on the {} ({} in all, against {} "
                         "with its chunks' rows gathered on the host)",
                         to_string(wanted), device_.str(), core::format_bytes(bound), core::format_bytes(host_path));
    return;
  }
  eval_outputs_on_device_ = false;
  GNNPIPE_CHECK_AS(OutOfBudget, wanted != EvalGraph::kLayerwiseDevice,
                   "pipeline.eval_graph: layerwise_device: evaluation's layer outputs and chunk arrays ({}) do not "
                   "fit the {} budget on {} beside what is resident ({}) (memory.limit); use pipeline.eval_graph: "
                   "layerwise",
                   core::format_bytes(bound), core::format_bytes(allocator_.budget()), device_.str(),
                   core::format_bytes(in_use));
}

// memory.features cache: the `rows` rows sampled most often: with memory.cache_rank degree, taken
// to be the nodes that are most often a neighbour (most appearances among the graph's in-edge
// sources; ties: lower id), PaGraph's choice; with presample, the nodes most often among the input
// rows of the first cache_presample_epochs epochs' batches, sampled now (a batch is a function of
// (seed, epoch, batch), so epoch 1's counts are exactly what epoch 1 will read; GNNLab's choice),
// ties by the degree count. They are gathered on the host in 64 MiB chunks (in the store's type) and copied into the
// cache on the copy stream (on the CPU backend a memcpy into allocator memory, charged like a GPU's).
std::vector<int64_t> Stages::presampled_appearances() const {
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

void Stages::build_cache(int64_t rows) {
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
void Stages::assemble_rows(const BatchLayout& layout, const PackedBatchView& view, const models::OpContext& ctx,
                           const T* carried, models::MatrixView<T> out) {
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
models::MatrixView<const float> Stages::input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                   const models::OpContext& ctx, InputScratch& scratch, bool resident) {
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

models::MatrixView<const float> Stages::make_input_rows(const BatchLayout& layout, const PackedBatchView& view,
                                                        const models::OpContext& ctx, InputScratch& scratch) {
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

// Evaluation over a whole-graph batch (whole_graph_logits) at most: every layer's
// infer_layer on the whole graph (a self-loop per node at most added), growing the twin's arrays
// layer after layer, plus the two [nodes x widest output] activation buffers it alternates between
// (and the widened input rows of fp16/bf16 features).
std::size_t Stages::resident_evaluation_bound() const {
  const graph::CsrGraph& g = s_.data.graph;
  const int64_t n = g.num_nodes();
  const models::BlockShape whole{n, n, g.num_edges() + n};
  memory::GrowOnlyFootprint arrays;
  int64_t widest_out = 0;
  for (std::size_t l = 0; l < eval_model_.num_layers(); ++l) {
    arrays.grow(eval_model_.inference_arrays(l, whole));
    widest_out = std::max(widest_out, eval_model_.layer_out_dim(l));
  }
  std::size_t bytes = arrays.bytes() + 2 * memory::CachingAllocator::size_class(static_cast<std::size_t>(n * widest_out) * sizeof(float));
  // fp16/bf16 input rows are widened into a float array of the eval stream's (input_rows).
  const graph::FeatureStore& f = s_.data.features;
  if (f.is_16bit()) bytes += memory::CachingAllocator::size_class(static_cast<std::size_t>(n * f.cols()) * sizeof(float));
  return bytes;
}

// Layer-wise inference's arrays at most: it runs chunks of eval_chunk_nodes consecutive
// destinations with all their in-edges (plus one self-loop each where the model adds them), so a
// chunk has at most the largest in-edge count of any chunk (inference_plan.hpp has the arithmetic).
std::size_t Stages::evaluation_bound() const {
  if (eval_graph_resident_) return resident_evaluation_bound();
  const graph::CsrGraph& g = s_.data.graph;
  const int64_t n = g.num_nodes();
  if (n == 0) return 0;
  const int64_t chunk = std::min<int64_t>(std::max(1, s_.eval_chunk_nodes), n);
  int64_t edges = 0;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    edges = std::max<int64_t>(edges, g.offsets()[static_cast<std::size_t>(end)] - g.offsets()[static_cast<std::size_t>(begin)]);
  }
  // Layer 0's chunk rows are features, or rows of a learned embedding.
  const int64_t input_cols = eval_model_.has_embedding() ? eval_model_.embedding().cols : s_.data.features.cols();
  const int64_t block_edges = inference_block_edges(eval_model_, chunk, edges);
  if (eval_outputs_on_device_) {
    return inference_chunk_bytes(eval_model_, input_cols, n, chunk, block_edges, InferenceArrays::kDeviceOutputs) +
           device_outputs_bytes(eval_model_, n);
  }
  return inference_chunk_bytes(eval_model_, input_cols, n, chunk, block_edges,
                               device_.is_cuda() ? InferenceArrays::kDevice : InferenceArrays::kModel);
}

MemoryPlan Stages::resident_plan() const {
  MemoryPlan p;
  p.device = device_.str();
  p.budget = allocator_.budget();
  p.reserve = s_.reserve_bytes;
  p.limit = s_.memory.limit_bytes;
  p.free_at_start = s_.free_at_start;
  p.clamped = s_.budget_clamped;
  p.policy = std::string(memory::to_string(s_.memory.policy));
  p.parameters = s_.parameter_bytes;
  p.optimizer = s_.optimizer_bytes;
  p.library = train_ctx_.library_workspace_bytes() + eval_ctx_.library_workspace_bytes();
  const std::size_t eval_resident = allocator_.in_use_bytes_on(eval_stream_);
  p.eval_twin = eval_resident - std::min(eval_resident, eval_ctx_.library_workspace_bytes());
  p.eval_graph = eval_graph_resident_ ? memory::CachingAllocator::size_class(eval_graph_.capacity()) : 0;
  p.eval_outputs_on_device = eval_outputs_on_device_;
  const std::size_t counted = p.parameters + p.optimizer + p.library + p.eval_twin + p.eval_graph;
  const std::size_t in_use = allocator_.stats().in_use_bytes;
  p.other = in_use > counted ? in_use - counted : 0;
  p.evaluation = governor_->setup().eval_bound;
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
  return p;
}

bool Stages::adopt_resident(Item& item) const {
  if (!has_resident()) return false;
  item.resident = true;
  item.layouts = resident_layouts_;
  item.offsets = {0};
  item.total_bytes = resident_bytes_;
  item.loss_rows = resident_loss_rows_;
  item.admission = resident_admission_;
  return true;
}

template <class Fn>
auto Stages::retrying(Stage stage, int epoch, int64_t batch, Fn&& fn) {
  for (int attempt = 0;; ++attempt) {
    try {
      return fn(attempt);
    } catch (...) {
      if (attempt >= s_.pipeline.stage_retries || !may_succeed_again(std::current_exception())) throw;
      note_retry(stage, epoch, batch, attempt);
    }
  }
}

void Stages::note_retry(Stage stage, int epoch, int64_t batch, int attempt) {
  std::string error = "unknown exception";
  try {
    throw;  // the exception being handled by retrying()
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
  }
  core::logger().warn("stage {}, {}: {}; running it again (retry {} of {}, pipeline.stage_retries)", to_string(stage),
                      batch >= 0 ? fmt::format("batch {} of epoch {}", batch, epoch) : fmt::format("epoch {}", epoch),
                      error, attempt + 1, s_.pipeline.stage_retries);
  if (stage == Stage::kEval) return;
  MemoryCounters c;
  c.stage_retries = 1;
  count(epoch, c);
}

graph::MiniBatch Stages::sample(const Item& item, samplers::ParallelSampler& sampler) {
  const core::TraceRange range("gnnpipe sample");
  // A batch is a function of its spec: an attempt leaves nothing behind.
  return retrying(Stage::kSample, item.epoch, item.spec.index, [&](int) {
    const double t0 = s_.recorder.begin(Stage::kSample, item.epoch, item.spec.index);
    fault(Stage::kSample, item);
    graph::MiniBatch batch = sampler.sample_one(item.spec);
    s_.recorder.record(Stage::kSample, item.epoch, item.spec.index, t0, s_.recorder.now());
    return batch;
  });
}

void Stages::gather(Item& item, graph::MiniBatch batch) {
  const core::TraceRange range("gnnpipe gather");
  // An attempt rewrites the item's layout and the whole packed batch; `batch` is moved out last.
  retrying(Stage::kGather, item.epoch, item.spec.index, [&](int) {
    const double t0 = s_.recorder.begin(Stage::kGather, item.epoch, item.spec.index);
    fault(Stage::kGather, item);
    const BatchLayout layout = BatchLayout::of(batch, packed_cols(), cache_slot_of_, s_.data.features.dtype());
    item.layouts = {layout};
    item.offsets = {0};
    item.total_bytes = layout.total_bytes;
    item.loss_rows = batch.loss_rows.size();
    memory::StagingSlot& slot = staging_.slot(item.slot);
    core::tsan::acquire(&slot);  // slot hand-off: its token came back after its last copy (transfer)
    slot.ensure(layout.total_bytes);
    pack_batch(batch, s_.data.features, label_source(), layout, slot.data(), cache_slot_of_);
    count_rows(item.epoch, layout);
    core::tsan::release(&slot);  // slot hand-off: the item names it on its way to the governor and the transfer thread
    s_.recorder.record(Stage::kGather, item.epoch, item.spec.index, t0, s_.recorder.now());
  });
  item.sampled = std::make_shared<graph::MiniBatch>(std::move(batch));
}

void Stages::pack_parts(Item& item, std::span<const graph::MiniBatch> parts) {
  const std::size_t gathered = item.total_bytes;  // the sampled batch, packed by gather
  item.layouts.clear();
  item.offsets.clear();
  std::size_t end = 0;
  for (const graph::MiniBatch& part : parts) {
    item.offsets.push_back(end);
    item.layouts.push_back(BatchLayout::of(part, packed_cols(), cache_slot_of_, s_.data.features.dtype()));
    end = align_up(end + item.layouts.back().total_bytes);
  }
  if (parts.size() > 1 && end > kMaxSplitStaging * gathered) {
    // Micro-batches that overlap this much (dense neighborhoods: each one's tree is most of the
    // batch) would multiply host staging; the train stage packs each one when its turn comes.
    item.offsets.clear();
    core::logger().debug("memory: {}: {} micro-batches would take {} of staging; packed one at a time by the train stage",
                         describe(item), parts.size(), core::format_bytes(end));
    return;
  }
  item.total_bytes = end;
  memory::StagingSlot& slot = staging_.slot(item.slot);
  core::tsan::acquire(&slot);  // slot hand-off: filled by gather
  slot.ensure(end);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    pack_batch(parts[i], s_.data.features, label_source(), item.layouts[i], slot.data() + item.offsets[i],
               cache_slot_of_);
    count_rows(parts[i].epoch, item.layouts[i]);
  }
  core::tsan::release(&slot);  // slot hand-off: on to the transfer thread
}

void Stages::govern(Item& item, samplers::ParallelSampler& sampler) {
  const core::TraceRange range("gnnpipe govern");
  retrying(Stage::kGovern, item.epoch, item.spec.index, [&](int attempt) {
    // A failed attempt may have taken the sampled batch or repacked the staging slot: the batch
    // (a function of its spec) is sampled and packed again first.
    if (attempt > 0 && !item.resident) gather(item, sample(item, sampler));
    govern_once(item, sampler);
  });
}

void Stages::govern_once(Item& item, samplers::ParallelSampler& sampler) {
  const double t0 = s_.recorder.begin(Stage::kGovern, item.epoch, item.spec.index);
  fault(Stage::kGovern, item);
  if (item.resident) {  // admitted in epoch 1, as it is; counted as that epoch's batch again
    item.governed = counters_of(*item.admission);
    return;
  }
  GNNPIPE_CHECK(item.sampled != nullptr, "{}: no sampled batch reached the governor", describe(item));
  const auto redraw = [&](int attempt) {
    samplers::BatchSpec spec = item.spec;
    spec.attempt = attempt;
    return sampler.sample_one(spec);
  };
  Admission a = governor_->admit(std::move(*item.sampled), item.batches, s_.sampler.redraws(), redraw);
  item.sampled.reset();
  item.governed = counters_of(a);
  if (a.action != MemoryAction::kFit) {
    pack_parts(item, a.parts);
    core::logger().debug("memory: {} {}: {} into {} part(s), predicted {}", describe(item), to_string(a.action),
                         a.edges_removed > 0 ? fmt::format("{} edges removed", a.edges_removed) : "",
                         a.parts.size(), core::format_bytes(a.predicted_total));
  }
  const bool keep = resident_candidate_ && a.action == MemoryAction::kFit && a.parts.size() == 1 && !has_resident();
  // A kept full-graph batch is evaluated in one piece when that fits next to it (its bound then
  // replaces layer-wise inference's); else evaluation stays layer-wise.
  const bool whole_eval = keep && s_.sampler.full_graph_batch() && governor_->try_raise_eval_bound(a, resident_evaluation_bound());
  item.admission = std::make_shared<const Admission>(std::move(a));
  if (keep) keep_resident(item, whole_eval);
  s_.recorder.record(Stage::kGovern, item.epoch, item.spec.index, t0, s_.recorder.now());
}

void Stages::keep_resident(Item& item, bool whole_eval) {
  item.becomes_resident = true;
  resident_eval_ = whole_eval;
  resident_layouts_ = item.layouts;
  resident_bytes_ = item.total_bytes;
  resident_loss_rows_ = item.loss_rows;
  resident_admission_ = item.admission;
  resident_.store(true, std::memory_order_release);
}

void Stages::transfer(const Item& item) {
  if (item.resident) return;  // skipped: device slot 0 holds the batch since epoch 1
  const core::TraceRange range("gnnpipe transfer");
  // An attempt copies the whole staging slot again.
  retrying(Stage::kTransfer, item.epoch, item.spec.index, [&](int) { transfer_once(item); });
}

void Stages::transfer_once(const Item& item) {
  const double t0 = s_.recorder.begin(Stage::kTransfer, item.epoch, item.spec.index);
  fault(Stage::kTransfer, item);
  if (item.layouts.size() > 1) {
    // Micro-batches enter the device slot one at a time, from the train stream (train()); the
    // staging slot travels on with the item and goes back after that step.
    s_.recorder.record(Stage::kTransfer, item.epoch, item.spec.index, t0, s_.recorder.now());
    return;
  }
  const auto dev = static_cast<std::size_t>(item.device_slot);
  const std::size_t bytes = item.total_bytes;
  copy_stream_.wait(released_[dev]);  // the last train step that read this device slot comes first
  models::DeviceArray<std::byte>& dst = device_slots_[dev];
  core::tsan::acquire(&staging_.slot(item.slot));  // slot hand-offs: filled by gather (or govern), and
  core::tsan::acquire(&dst);                       // the device slot's token returned by train after its step
  // Growth (1/8 headroom) frees the old memory in copy-stream order, after that wait: no host
  // synchronisation and no cudaFree (the run's caching allocator, under its budget).
  // (A resident batch is copied once: no headroom.)
  if (dst.capacity() < bytes) dst.ensure(&allocator_, copy_stream_, item.becomes_resident ? bytes : bytes + bytes / 8);
  const memory::StagingSlot& src = staging_.slot(item.slot);
  GNNPIPE_CHECK(src.capacity() >= bytes, "staging slot {} holds {} bytes, batch needs {}", item.slot, src.capacity(), bytes);
  core::copy_bytes_async(dst.data(), src.data(), bytes, copy_stream_);
  moved(item.epoch, {.copied_bytes = bytes});
  auto& copied = copied_[dev];
  copied.record(copy_stream_);
  copied.synchronize();
  if (item.becomes_resident) {
    staging_.slot(item.slot).release();  // no later epoch gathers into it
    core::logger().info("resident: the batch ({} packed) stays on the {} for the run: from epoch 2 its sample, gather, "
                        "govern and transfer are skipped{}",
                        core::format_bytes(bytes), device_.str(),
                        resident_eval_ ? ", and evaluation runs over it, one layer at a time on the whole graph" : "");
  }
  core::tsan::release(&staging_.slot(item.slot));  // slot hand-offs: the staging slot's token goes
  core::tsan::release(&dst);                       // back, the device slot on to the train thread
  s_.recorder.record(Stage::kTransfer, item.epoch, item.spec.index, t0, s_.recorder.now());
}

void Stages::grow_slot_from_train(models::DeviceArray<std::byte>& slot, std::size_t bytes) {
  // Device slots belong to the copy stream (its memory counts there, apart from the train
  // stream's arrays that the governor measures). The copy stream first waits for the train
  // stream's work (the old memory's last readers), and the train stream then waits for the copy
  // stream (the new memory may have been freed on it).
  train_to_copy_.record(train_stream_);
  copy_stream_.wait(train_to_copy_);
  slot.ensure(&allocator_, copy_stream_, bytes);
  copy_to_train_.record(copy_stream_);
  train_stream_.wait(copy_to_train_);
}

void Stages::begin_step(std::size_t parts) {
  s_.model.params().zero_grad(train_ctx_);
  if (parts > 1) part_losses_.ensure(train_ctx_, parts);
}

void Stages::run_part(const Item& item, const BatchLayout& layout, std::byte* base, std::size_t part, std::size_t parts,
                      double* loss) {
  const PackedBatchView view = PackedBatchView::of(layout, nullptr, base);
  if (s_.step_fault) s_.step_fault(item.epoch, item.spec.index, part, parts);
  const auto blocks = graph::layer_blocks(view.blocks, s_.model.num_layers(), item.spec.index);
  // Every part draws its dropout from the batch's key: masks are keyed by global node id, so the
  // parts together draw exactly the unsplit batch's masks.
  // The resident batch's blocks and input rows are the same every epoch: tag 1 lets the model's
  // first layer reuse what it derived from them (GnnModel::forward).
  const uint64_t input_tag = item.resident || item.becomes_resident ? 1 : 0;
  if (const uint64_t bytes = device_gathered_bytes(layout); bytes > 0) moved(item.epoch, {.device_gathered_bytes = bytes});
  const auto logits = s_.model.forward(
      blocks, input_rows(layout, view, train_ctx_, gathered_, input_tag == 1), view.input_nodes, true,
      core::rng_key(s_.seed, {static_cast<uint64_t>(item.epoch), static_cast<uint64_t>(item.spec.index)}), input_tag);
  const auto dlogits = dlogits_.matrix(train_ctx_, logits.rows, logits.cols);
  double* target = parts > 1 ? part_losses_.data() + part : loss;
  double* scratch = loss_scratch_.ensure(train_ctx_, view.loss_rows.size());
  if (label_matrix_ != nullptr) {
    // Multi-label: the targets' rows of the resident 0/1 matrix (the label section holds node ids).
    const int64_t classes = s_.data.labels.num_classes;
    const models::MatrixView<uint8_t> targets{
        target_rows_.ensure(train_ctx_, static_cast<std::size_t>(logits.rows * classes)), logits.rows, classes};
    models::ops::copy_rows<uint8_t>(train_ctx_, {label_matrix_, s_.data.num_nodes(), classes}, view.labels, targets, {});
    models::ops::bce_with_logits<float>(train_ctx_, logits, targets, view.loss_rows, view.loss_weights, dlogits, scratch,
                                        target);
  } else {
    models::ops::log_softmax_nll<float>(train_ctx_, logits, view.labels, view.loss_rows, view.loss_weights, dlogits,
                                        scratch, target);
  }
  s_.model.backward(blocks, dlogits);
}

void Stages::end_step(std::size_t parts, double* loss) {
  if (parts <= 1) return;
  // loss = sum of the parts' losses, as one [1 x n] [n x 1] product on the train stream (no host
  // read inside a step); the micro-batches' weights already make it the batch's loss.
  const auto n = static_cast<int64_t>(parts);
  double* ones = ones_.ensure(train_ctx_, parts);
  core::fill_bytes_async(ones, parts, sizeof(double), std::bit_cast<uint64_t>(1.0), train_stream_);
  models::ops::gemm<double>(train_ctx_, false, false, 1.0, models::MatrixView<const double>{ones, 1, n},
                            models::MatrixView<const double>{part_losses_.data(), n, 1}, 0.0,
                            models::MatrixView<double>{loss, 1, 1});
}

void Stages::train(const Item& item) {
  const core::TraceRange range("gnnpipe train");
  double t0 = 0;
  // An attempt zeroes the gradients and recomputes them from the device slot (or the staging
  // slot's micro-batches) into the batch's loss slot; the parameters change only after it, in
  // the optimizer's step, which is never run again.
  const bool retried = retrying(Stage::kTrain, item.epoch, item.spec.index, [&](int) {
    t0 = s_.recorder.begin(Stage::kTrain, item.epoch, item.spec.index);
    fault(Stage::kTrain, item);
    return compute_gradients(item, losses_.slot(item.spec.index, item.batches, item.loss_rows));
  });
  const auto dev = static_cast<std::size_t>(item.device_slot);
  const std::size_t parts = item.layouts.size();
  s_.optimizer.step(s_.model.params());
  released_[dev].record(train_stream_);
  if (parts > 1) {
    // The staging slot goes back with this item: its copies must have completed.
    released_[dev].synchronize();
    core::tsan::release(&staging_.slot(item.slot));
  }
  core::tsan::release(&device_slots_[dev]);  // slot hand-off: its token goes back
  MemoryCounters c = item.governed;
  c.retried = retried ? 1 : 0;
  c.peak_bytes = allocator_.stats().batch_peak_bytes;
  c.reserved_bytes = allocator_.stats().held_bytes;
  c.seeds = static_cast<int64_t>(item.loss_rows);
  for (const BatchLayout& layout : item.layouts) {
    for (const BlockSections& b : layout.blocks) c.edges += static_cast<int64_t>(b.indices.bytes / sizeof(graph::NodeId));
  }
  if (!retried && item.admission != nullptr) governor_->observe(*item.admission, allocator_.in_use_bytes_on(train_stream_));
  count(item.epoch, c);
  s_.recorder.record(Stage::kTrain, item.epoch, item.spec.index, t0, s_.recorder.now());
  if (s_.on_step) s_.on_step(item.epoch, item.spec.index, item.batches, c.seeds);
}

bool Stages::compute_gradients(const Item& item, double* loss) {
  const auto dev = static_cast<std::size_t>(item.device_slot);
  GNNPIPE_CHECK(!item.resident || (dev == 0 && device_slots_.size() == 1), "{}: a resident batch lives in device slot 0 of 1, not {} of {}",
                describe(item), dev, device_slots_.size());
  core::tsan::acquire(&device_slots_[dev]);  // slot hand-off: filled by transfer
  train_stream_.wait(copied_[dev]);
  // The step's peak: the most the allocator (every stream) held from here to the step's end.
  allocator_.reset_batch_peak();
  const std::size_t parts = item.layouts.size();
  try {
    if (item.admission != nullptr && item.admission->trim) release_train_arrays();
    begin_step(parts);
    if (parts == 1) {
      run_part(item, item.layouts[0], device_slots_[dev].data(), 0, 1, loss);
    } else {
      // A split batch: each micro-batch is copied from the staging slot into the device slot on
      // the train stream, after the step of the previous one, so the device slot holds one at a
      // time (what the governor planned for).
      models::DeviceArray<std::byte>& slot = device_slots_[dev];
      const memory::StagingSlot& staging = staging_.slot(item.slot);
      core::tsan::acquire(&staging);  // slot hand-off: packed by govern, passed on by transfer
      for (std::size_t i = 0; i < parts; ++i) {
        const std::size_t bytes = item.layouts[i].total_bytes;
        const std::byte* packed = item.offsets.empty() ? pack_part(item.admission->parts[i], item.layouts[i])
                                                       : staging.data() + item.offsets[i];
        if (slot.capacity() < bytes) grow_slot_from_train(slot, bytes + bytes / 8);
        core::copy_bytes_async(slot.data(), packed, bytes, train_stream_);
        moved(item.epoch, {.copied_bytes = bytes});
        run_part(item, item.layouts[i], slot.data(), i, parts, loss);
      }
    }
    end_step(parts, loss);
  } catch (const core::OutOfBudget& e) {
    core::logger().info("memory: {} ran out of budget in its step ({}); splitting it further and running it again",
                        describe(item), e.message());
    retry(item, loss);
    return true;
  }
  return false;
}

const std::byte* Stages::pack_part(const graph::MiniBatch& part, const BatchLayout& layout) {
  train_stream_.synchronize();  // the last copy out of part_staging_ completed
  if (part_staging_.size() < layout.total_bytes) {
    part_staging_ = core::Buffer<std::byte>();
    part_staging_ =
        core::Buffer<std::byte>(layout.total_bytes + layout.total_bytes / 8, core::MemoryKind::kStaging, device_);
  }
  pack_batch(part, s_.data.features, label_source(), layout, part_staging_.data(), cache_slot_of_);
  count_rows(part.epoch, layout);
  return part_staging_.data();
}

void Stages::release_train_arrays() {
  s_.model.release_arrays();
  for (models::DeviceArray<double>* a : {&loss_scratch_, &part_losses_, &ones_}) a->release(train_stream_);
  dlogits_.release(train_stream_);
  if (!gathered_.resident.load(std::memory_order_acquire)) {  // the resident batch's rows stay for the run
    gathered_.rows.release(train_stream_);
    gathered_.rows16.release(train_stream_);
  }
}

void Stages::retry(const Item& item, double* loss) {
  GNNPIPE_CHECK(item.admission != nullptr, "{}: no admission to retry from", describe(item));
  const auto dev = static_cast<std::size_t>(item.device_slot);
  const std::size_t layers = s_.model.num_layers();
  std::vector<graph::MiniBatch> parts;  // empty in the first round: the admitted parts
  for (int round = 1;; ++round) {
    // Halve every part that can be halved.
    const std::span<const graph::MiniBatch> current =
        round == 1 ? std::span<const graph::MiniBatch>(item.admission->parts) : std::span<const graph::MiniBatch>(parts);
    std::vector<graph::MiniBatch> smaller;
    bool shrank = false;
    for (const graph::MiniBatch& p : current) {
      const int k = p.loss_rows.size() > 1 ? 2 : 1;
      shrank = shrank || k > 1;
      for (graph::MiniBatch& q : graph::split_batch(p, layers, k)) smaller.push_back(std::move(q));
    }
    GNNPIPE_CHECK_AS(OutOfBudget, shrank && round <= kMaxRetries,
                     "memory.limit: {} does not fit the budget of {} even in {} parts of one loss row or fewer",
                     describe(item), core::format_bytes(allocator_.budget()), current.size());
    parts = std::move(smaller);
    release_train_arrays();  // the halves need arrays of their own shapes, not the failed step's as well
    try {
      // One part at a time: packed into pinned memory, copied into the device slot on the train
      // stream after the previous part's step (the slot is this step's alone), then run. The host
      // waits before packing the next part: a rare path, kept simple.
      begin_step(parts.size());
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const BatchLayout layout = BatchLayout::of(parts[i], packed_cols(), cache_slot_of_, s_.data.features.dtype());
        const std::byte* packed = pack_part(parts[i], layout);
        models::DeviceArray<std::byte>& slot = device_slots_[dev];
        if (slot.capacity() < layout.total_bytes) grow_slot_from_train(slot, layout.total_bytes);
        core::copy_bytes_async(slot.data(), packed, layout.total_bytes, train_stream_);
        moved(item.epoch, {.copied_bytes = layout.total_bytes});
        run_part(item, layout, slot.data(), i, parts.size(), loss);
      }
      end_step(parts.size(), loss);
      train_stream_.synchronize();  // part_staging_ may be repacked by the next retry
      return;
    } catch (const core::OutOfBudget& e) {
      core::logger().info("memory: {} still out of budget in {} parts ({}); halving them again", describe(item),
                          parts.size(), e.message());
    }
  }
}

void Stages::count(int epoch, const MemoryCounters& c) {
  const std::lock_guard lock(counters_mutex_);
  epoch_counters_[epoch].add(c);
}

void Stages::moved(int64_t epoch, const DataMovement& d) {
  const std::lock_guard lock(counters_mutex_);
  epoch_moved_[static_cast<int>(epoch)].add(d);
  total_moved_.add(d);
}

DataMovement Stages::take_epoch_movement(int epoch) {
  const std::lock_guard lock(counters_mutex_);
  return take_entry(epoch_moved_, epoch);
}

DataMovement Stages::data_movement() const {
  const std::lock_guard lock(counters_mutex_);
  return total_moved_;
}

MemoryCounters Stages::take_epoch_counters(int epoch) {
  const std::lock_guard lock(counters_mutex_);
  const MemoryCounters c = take_entry(epoch_counters_, epoch);
  total_counters_.add(c);
  return c;
}

MemoryCounters Stages::total_counters() const {
  const std::lock_guard lock(counters_mutex_);
  MemoryCounters c = total_counters_;
  c.peak_bytes = std::max(c.peak_bytes, allocator_.stats().peak_in_use_bytes);
  return c;
}

void Stages::snapshot() {
  epoch_end_.record(train_stream_);
  eval_stream_.wait(epoch_end_);
  eval_model_.params().copy_values_from(s_.model.params(), eval_stream_);
  snapshot_done_.record(eval_stream_);
  train_stream_.wait(snapshot_done_);
}

void Stages::evaluate(EpochResult& r) {
  const core::TraceRange range("gnnpipe eval");
  // An attempt reads the snapshot, which nothing changes until the next epoch's, and rewrites
  // every score of `r`.
  const int attempts = retrying(Stage::kEval, r.epoch, -1, [&](int attempt) {
    evaluate_once(r);
    return attempt + 1;
  });
  if (attempts > 1) {
    // The epoch's counters were taken before its evaluation: add to its result and the run's totals.
    r.memory.stage_retries += attempts - 1;
    const std::lock_guard lock(counters_mutex_);
    total_counters_.stage_retries += attempts - 1;
  }
}

void Stages::evaluate_once(EpochResult& r) {
  const double t0 = s_.recorder.begin(Stage::kEval, r.epoch, -1);
  if (s_.fault) s_.fault(Stage::kEval, r.epoch, -1);
  models::Matrix<float> layerwise;
  models::MatrixView<const float> logits;
  if (evaluates_resident()) {
    logits = whole_graph_logits(resident_layouts_.front(), device_slots_.front().data());
  } else if (eval_graph_resident_) {
    logits = whole_graph_logits(eval_graph_layout_, eval_graph_.data());
  } else {
    layerwise = infer_layerwise(eval_model_, s_.data.graph, layerwise_input(eval_model_, s_.data.features, eval_stream_, embedding_host_),
                                {.chunk_nodes = s_.eval_chunk_nodes,
                                 .parallel_chunks = s_.pipeline.sampler_threads,
                                 .chunks = nullptr,
                                 .cut = {},
                                 .charge_packed = false,
                                 .overlap_bytes = 0,  // the governor's evaluation bound has one packed chunk
                                 .device_outputs = eval_outputs_on_device_,
                                 .on_layer = {}},
                                eval_workspace_);
    logits = layerwise.cview();
  }
  const auto& sp = s_.data.splits;
  r.evaluated = true;
  if (s_.data.labels.is_multi_label()) {
    // Micro-F1 at threshold 0.5 is the run's score; macro-F1 and the top-k (DeepWalk) variants beside it.
    const graph::Labels& l = s_.data.labels;
    const models::MatrixView<const uint8_t> targets{l.multi.data(), s_.data.num_nodes(), l.num_classes};
    // The run's score (run.metric) for every split; the other F1 scores for val and test only.
    const Score score = s_.pipeline.score;
    const bool top_k_score = score == Score::kMicroF1TopK || score == Score::kMacroF1TopK;
    const auto scores = [&](const graph::HostArray<graph::NodeId>& split, bool all) {
      MultiLabelScores m;
      if (split.empty()) return m;
      if (all || !top_k_score) {
        const auto at_half = models::cpu::multi_label_f1<float>(logits, targets, split.span(), false);
        m.micro = at_half.micro;
        m.macro = at_half.macro;
      }
      if (all || top_k_score) {
        const auto top_k = models::cpu::multi_label_f1<float>(logits, targets, split.span(), true);
        m.micro_topk = top_k.micro;
        m.macro_topk = top_k.macro;
      }
      return m;
    };
    r.train_acc = scores(sp.train, false).of(score);
    r.val_f1 = scores(sp.val, true);
    r.test_f1 = scores(sp.test, true);
    r.val_acc = r.val_f1.of(score);
    r.test_acc = r.test_f1.of(score);
  } else {
    const auto labels = s_.data.labels.single.span();
    r.train_acc = models::cpu::accuracy<float>(logits, labels, sp.train.span());
    r.val_acc = sp.val.empty() ? NAN : models::cpu::accuracy<float>(logits, labels, sp.val.span());
    r.test_acc = sp.test.empty() ? NAN : models::cpu::accuracy<float>(logits, labels, sp.test.span());
  }
  eval_stream_.synchronize();
  s_.recorder.record(Stage::kEval, r.epoch, -1, t0, s_.recorder.now());
}

// Inference of the whole graph one layer at a time over the resident full-graph batch (its
// targets are every node in id order; every layer reads its one block): the computation of
// layer-wise inference with a single chunk, on device memory already there. The eval stream reads
// device slot 0 while the train stream may read it too (neither writes it).
models::MatrixView<const float> Stages::whole_graph_logits(const BatchLayout& layout, const std::byte* base) {
  const PackedBatchView view = PackedBatchView::of(layout, nullptr, const_cast<std::byte*>(base));
  const auto blocks = graph::layer_blocks(view.blocks, eval_model_.num_layers(), 0);
  const int64_t n = s_.data.graph.num_nodes();
  // Its input rows are every node's (of which a feature cache holds some: view.features has the rest).
  GNNPIPE_CHECK(blocks.back()->num_dst == n && layout.feature_rows == n,
                "the resident full-graph batch has {} targets and {} input rows for {} nodes", blocks.back()->num_dst,
                layout.feature_rows, n);
  // A learned embedding is its own input: every node's row, in id order.
  // The input rows the train step made for the resident batch, when it made any (a snapshot
  // follows that step), else made here and kept on the eval stream for the next evaluation.
  const auto rows = [&]() -> models::MatrixView<const float> {
    if (gathered_.resident.load(std::memory_order_acquire) && &layout == &resident_layouts_.front()) {
      return gathered_.rows.view(layout.feature_rows, s_.data.features.cols());
    }
    return input_rows(layout, view, eval_ctx_, eval_gathered_, true);
  };
  models::MatrixView<const float> x = eval_model_.has_embedding() ? eval_model_.embedding() : rows();
  for (std::size_t l = 0; l < eval_model_.num_layers(); ++l) {
    models::DeviceArray<float>& out = eval_activations_[l % 2];
    const auto y = out.matrix(eval_ctx_, n, eval_model_.layer_out_dim(l));
    eval_model_.infer_layer(l, *blocks[l], x, y);
    x = y;
  }
  const auto count = static_cast<std::size_t>(x.rows * x.cols);
  if (eval_logits_.size() < count) {
    eval_logits_ = core::Buffer<float>();
    eval_logits_ = core::Buffer<float>(count, core::MemoryKind::kStaging, device_);
  }
  core::copy_bytes_async(eval_logits_.data(), x.data, count * sizeof(float), eval_stream_);
  eval_stream_.synchronize();
  return {eval_logits_.data(), x.rows, x.cols};
}

void Stages::restore_snapshot() {
  s_.model.params().copy_values_from(eval_model_.params(), train_stream_);
  train_stream_.synchronize();
}

void Stages::drain() {
  copy_stream_.synchronize();
  train_stream_.synchronize();
  eval_stream_.synchronize();
}

void Stages::drain_after_failure() noexcept {
  for (const core::Stream* stream : std::initializer_list<const core::Stream*>{&copy_stream_, &train_stream_, &eval_stream_}) {
    try {
      stream->synchronize();
    } catch (const std::exception& e) {
      core::logger().debug("after the run failed, waiting for a stream failed too: {}", e.what());
    }
  }
}

}  // namespace gnnpipe::pipeline::detail
