#include "batch_path.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <tuple>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/trace_range.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/core/units.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "rank_share.hpp"
#include "stage_retry.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

constexpr std::size_t kPartAlign = 256;  // parts start where a packed batch's sections would
constexpr int kMaxRetries = 8;           // each retry halves every part
// A split batch's micro-batches are packed ahead (by the governor's stage, into the batch's
// staging slot) while they take at most this many times the sampled batch's bytes; beyond, the
// train stage packs each one in turn (bounded host memory, at the cost of a gather on that thread).
constexpr std::size_t kMaxSplitStaging = 3;

std::size_t align_up(std::size_t bytes) { return (bytes + kPartAlign - 1) / kPartAlign * kPartAlign; }

// GnnModel's input tags: the resident batch's (blocks and rows), and an augmented fixed batch's
// (its rows only: forward_view).
constexpr uint64_t kResidentTag = 1;
constexpr uint64_t kFixedInputTag = 2;

}  // namespace

BatchPath::BatchPath(const TrainingSetup& s, memory::CachingAllocator& allocator, const core::Stream& copy_stream,
                     RunCounters& counters, const InputPlacement& placement, bool resident_candidate,
                     Augmentation* augmentation, bool fixed_input)
    : s_(s),
      device_(s.model.context().device()),
      allocator_(allocator),
      copy_stream_(copy_stream),
      train_ctx_(s.model.context()),
      train_stream_(train_ctx_.stream()),
      counters_(counters),
      placement_(placement),
      resident_candidate_(resident_candidate),
      fixed_input_(fixed_input),
      staging_(resident_candidate_ ? 1 : std::max(1, s.pipeline.staging_slots), core::MemoryKind::kStaging, device_),
      train_to_copy_(device_),
      copy_to_train_(device_),
      losses_(train_ctx_),
      layerwise_(s.model, s.data.features),
      augmentation_(augmentation),
      augmented_(s) {}

void BatchPath::plan_device_slots(std::size_t largest_packed) {
  const int slots =
      resident_candidate_ ? 1 : memory::plan_device_slots(staging_.size(), allocator_.budget(), largest_packed);
  device_slots_.resize(static_cast<std::size_t>(slots));
  for (std::size_t i = 0; i < device_slots_.size(); ++i) {
    copied_.emplace_back(device_);
    released_.emplace_back(device_);
  }
}

void BatchPath::start_governing(const GovernorSetup& setup, std::optional<std::size_t> whole_eval_bound) {
  governor_.emplace(setup);
  whole_eval_bound_ = whole_eval_bound;
}

std::optional<WholeGraphBatch> BatchPath::resident_for_evaluation() const {
  if (!has_resident() || !resident_eval_) return std::nullopt;
  return WholeGraphBatch{
      .layout = &resident_layouts_.front(), .base = device_slots_.front().data(), .kept_rows = &gathered_};
}

bool BatchPath::adopt_resident(Item& item) const {
  if (!has_resident()) return false;
  item.resident = true;
  item.layouts = resident_layouts_;
  item.offsets = {0};
  item.total_bytes = resident_bytes_;
  item.loss_rows = resident_loss_rows_;
  item.admission = resident_admission_;
  return true;
}

graph::MiniBatch BatchPath::sample(const Item& item, samplers::ParallelSampler& sampler) {
  const core::TraceRange range("gnnpipe sample");
  // A batch is a function of its spec: an attempt leaves nothing behind.
  return retrying(s_, counters_, Stage::kSample, item.epoch, item.spec.index, [&](int) {
    const double t0 = s_.recorder.begin(Stage::kSample, item.epoch, item.spec.index);
    fault(Stage::kSample, item);
    graph::MiniBatch batch = sampler.sample_one(item.spec);
    if (s_.data_parallel()) {
      batch = rank_share(std::move(batch), s_.model.num_layers(), s_.collective->rank(), s_.collective->size());
    }
    if (augmentation_ != nullptr) augmentation_->attach(batch);
    s_.recorder.record(Stage::kSample, item.epoch, item.spec.index, t0, s_.recorder.now());
    return batch;
  });
}

void BatchPath::gather(Item& item, graph::MiniBatch batch) {
  const core::TraceRange range("gnnpipe gather");
  // An attempt rewrites the item's layout and the whole packed batch; `batch` is moved out last.
  retrying(s_, counters_, Stage::kGather, item.epoch, item.spec.index, [&](int) {
    const double t0 = s_.recorder.begin(Stage::kGather, item.epoch, item.spec.index);
    fault(Stage::kGather, item);
    const BatchLayout layout = placement_.layout_of(batch);
    item.layouts = {layout};
    item.offsets = {0};
    item.total_bytes = layout.total_bytes;
    item.loss_rows = batch.loss_rows.size();
    item.idle_share = s_.data_parallel() && idle_share(batch);
    item.unpacked = went_layerwise(batch);
    if (item.unpacked) {  // its layer-wise step reads `batch`; govern packs it if it is admitted otherwise
      s_.recorder.record(Stage::kGather, item.epoch, item.spec.index, t0, s_.recorder.now());
      return;
    }
    memory::StagingSlot& slot = staging_.slot(item.slot);
    core::tsan::acquire(&slot);  // slot hand-off: its token came back after its last copy (transfer)
    slot.ensure(layout.total_bytes);
    placement_.pack(batch, layout, slot.data());
    counters_.count_rows(item.epoch, layout);
    core::tsan::release(&slot);  // slot hand-off: the item names it on its way to the governor and the transfer thread
    s_.recorder.record(Stage::kGather, item.epoch, item.spec.index, t0, s_.recorder.now());
  });
  item.sampled = std::make_shared<graph::MiniBatch>(std::move(batch));
}

bool BatchPath::went_layerwise(const graph::MiniBatch& batch) const {
  const std::scoped_lock lock(layerwise_keys_mutex_);
  return !layerwise_keys_.empty() && layerwise_keys_.contains(MemoryGovernor::key_of(batch));
}

void BatchPath::pack_parts(Item& item, std::span<const graph::MiniBatch> parts) {
  const std::size_t gathered = item.total_bytes;  // the sampled batch, packed by gather
  item.layouts.clear();
  item.offsets.clear();
  std::size_t end = 0;
  for (const graph::MiniBatch& part : parts) {
    item.offsets.push_back(end);
    item.layouts.push_back(placement_.layout_of(part));
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
    placement_.pack(parts[i], item.layouts[i], slot.data() + item.offsets[i]);
    counters_.count_rows(parts[i].epoch, item.layouts[i]);
  }
  core::tsan::release(&slot);  // slot hand-off: on to the transfer thread
}

void BatchPath::govern(Item& item, samplers::ParallelSampler& sampler) {
  const core::TraceRange range("gnnpipe govern");
  retrying(s_, counters_, Stage::kGovern, item.epoch, item.spec.index, [&](int attempt) {
    // A failed attempt may have taken the sampled batch or repacked the staging slot: the batch
    // (a function of its spec) is sampled and packed again first.
    if (attempt > 0 && !item.resident) gather(item, sample(item, sampler));
    govern_once(item, sampler);
  });
}

void BatchPath::govern_once(Item& item, samplers::ParallelSampler& sampler) {
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
  // The governor's whole decision for the batch: how it runs (as sampled, split, resampled or
  // cut) and whether it stays on the device for the run.
  const MemoryGovernor::BatchKey key = MemoryGovernor::key_of(*item.sampled);
  Admission a = governor_->admit(std::move(*item.sampled), item.batches, s_.sampler.redraws(), redraw, residency());
  item.sampled.reset();
  item.governed = counters_of(a);
  {
    const std::scoped_lock lock(layerwise_keys_mutex_);
    if (a.action == MemoryAction::kLayerwise) {
      if (layerwise_keys_.size() >= kLayerwiseKeys) layerwise_keys_.clear();  // (bounded, like the governor's memo)
      layerwise_keys_.insert(key);
    } else {
      layerwise_keys_.erase(key);
    }
  }
  // A layer-wise step reads the admitted batch itself: nothing to pack.
  if (a.action != MemoryAction::kLayerwise && (a.action != MemoryAction::kFit || item.unpacked)) {
    pack_parts(item, a.parts);
    core::logger().debug("memory: {} {}: {} into {} part(s), predicted {}", describe(item), to_string(a.action),
                         a.edges_removed > 0 ? fmt::format("{} edges removed", a.edges_removed) : "",
                         a.parts.size(), core::format_bytes(a.predicted_total));
  }
  const bool keep = a.keep_resident;
  item.admission = std::make_shared<const Admission>(std::move(a));
  if (keep) keep_resident(item);
  s_.recorder.record(Stage::kGovern, item.epoch, item.spec.index, t0, s_.recorder.now());
}

void BatchPath::keep_resident(Item& item) {
  item.becomes_resident = true;
  resident_eval_ = item.admission->whole_eval;
  resident_layouts_ = item.layouts;
  resident_bytes_ = item.total_bytes;
  resident_loss_rows_ = item.loss_rows;
  resident_admission_ = item.admission;
  resident_.store(true, std::memory_order_release);
}

void BatchPath::transfer(const Item& item) {
  if (item.resident) return;  // skipped: device slot 0 holds the batch since epoch 1
  const core::TraceRange range("gnnpipe transfer");
  // An attempt copies the whole staging slot again.
  retrying(s_, counters_, Stage::kTransfer, item.epoch, item.spec.index, [&](int) { transfer_once(item); });
}

void BatchPath::transfer_once(const Item& item) {
  const double t0 = s_.recorder.begin(Stage::kTransfer, item.epoch, item.spec.index);
  fault(Stage::kTransfer, item);
  if (item.layouts.size() > 1 || layerwise(item)) {
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
  counters_.moved(item.epoch, {.copied_bytes = bytes});
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

void BatchPath::grow_slot_from_train(models::DeviceArray<std::byte>& slot, std::size_t bytes) {
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

void BatchPath::begin_step(std::size_t parts) {
  s_.model.params().zero_grad(train_ctx_);
  if (parts > 1) part_losses_.ensure(train_ctx_, parts);
}

void BatchPath::run_part(const Item& item, const BatchLayout& layout, std::byte* base, std::size_t part, std::size_t parts,
                      double* loss) {
  const PackedBatchView view = PackedBatchView::of(layout, nullptr, base);
  if (s_.step_fault) s_.step_fault(item.epoch, item.spec.index, part, parts);
  const auto blocks = graph::layer_blocks(view.blocks, s_.model.num_layers(), item.spec.index);
  // Every part draws its dropout from the batch's key: masks are keyed by global node id, so the
  // parts together draw exactly the unsplit batch's masks.
  // The resident batch's blocks and input rows are the same every epoch: tag 1 lets the model's
  // first layer reuse what it derived from them (GnnModel::forward).
  const uint64_t input_tag = item.resident || item.becomes_resident ? kResidentTag : 0;
  if (const uint64_t bytes = placement_.device_gathered_bytes(layout); bytes > 0) {
    counters_.moved(item.epoch, {.device_gathered_bytes = bytes});
  }
  const core::RngKey key =
      core::rng_key(s_.seed, {static_cast<uint64_t>(item.epoch), static_cast<uint64_t>(item.spec.index)});
  if (augmentation_ != nullptr) {
    GNNPIPE_CHECK(parts == 1 && !view.view_blocks.empty(), "{}: an augmented step over a part without views",
                  describe(item));  // compute_gradients refused those
    augmented_.run(
        view, placement_.input_rows(layout, view, train_ctx_, gathered_, false), key, item.spec.index,
        augmentation_->live_uncertainty(),
        [&](models::MatrixView<const float> logits, models::MatrixView<float> dlogits, double* target) {
          loss_of(view, logits, dlogits, target);
        },
        loss, item.admission == nullptr || item.admission->augment_keeps_aside,
        fixed_input_ ? kFixedInputTag : 0);
    return;
  }
  const auto x = placement_.input_rows(layout, view, train_ctx_, gathered_, input_tag == kResidentTag);
  const auto logits = s_.model.forward(blocks, x, view.input_nodes, true, key, input_tag);
  const auto dlogits = dlogits_.matrix(train_ctx_, logits.rows, logits.cols);
  loss_of(view, logits, dlogits, parts > 1 ? part_losses_.data() + part : loss);
  s_.model.backward(blocks, dlogits);
}

void BatchPath::loss_of(const PackedBatchView& view, models::MatrixView<const float> logits,
                        models::MatrixView<float> dlogits, double* target) {
  double* scratch = loss_scratch_.ensure(train_ctx_, view.loss_rows.size());
  if (const uint8_t* label_matrix = placement_.label_matrix(); label_matrix != nullptr) {
    // Multi-label: the targets' rows of the resident 0/1 matrix (the label section holds node ids).
    const int64_t classes = s_.data.labels.num_classes;
    const models::MatrixView<uint8_t> targets{
        target_rows_.ensure(train_ctx_, static_cast<std::size_t>(logits.rows * classes)), logits.rows, classes};
    models::ops::copy_rows<uint8_t>(train_ctx_, {label_matrix, s_.data.num_nodes(), classes}, view.labels, targets, {});
    models::ops::bce_with_logits<float>(train_ctx_, logits, targets, view.loss_rows, view.loss_weights, dlogits, scratch,
                                        target);
  } else {
    models::ops::log_softmax_nll<float>(train_ctx_, logits, view.labels, view.loss_rows, view.loss_weights, dlogits,
                                        scratch, target);
  }
}

void BatchPath::refuse_augmented(const Item& item, const std::string& why) const {
  GNNPIPE_THROW(OutOfBudget,
                "augment.type mh: {} does not fit memory.limit ({}) whole, and {}; MH-Aug's views are not split: raise "
                "memory.limit or lower sampler.batch_size",
                describe(item), core::format_bytes(allocator_.budget()), why);
}

void BatchPath::run_layerwise(const Item& item, double* loss) {
  const Admission& a = *item.admission;
  const auto chunks = static_cast<std::size_t>(a.layerwise->chunks.back());
  begin_step(chunks);
  if (s_.step_fault) s_.step_fault(item.epoch, item.spec.index, 0, 1);
  const core::RngKey key =
      core::rng_key(s_.seed, {static_cast<uint64_t>(item.epoch), static_cast<uint64_t>(item.spec.index)});
  const std::size_t moved = layerwise_.run(
      a.parts.front(), *a.layerwise, key, placement_.label_source(),
      [&](const PackedBatchView& chunk, models::MatrixView<const float> logits, models::MatrixView<float> dlogits,
          std::size_t index) { loss_of(chunk, logits, dlogits, chunks > 1 ? part_losses_.data() + index : loss); },
      placement_.placed_features());
  end_step(chunks, loss);
  counters_.moved(item.epoch, {.copied_bytes = moved});
}

void BatchPath::end_step(std::size_t parts, double* loss) {
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

void BatchPath::train(const Item& item) {
  const core::TraceRange range("gnnpipe train");
  double t0 = 0;
  // An attempt zeroes the gradients and recomputes them from the device slot (or the staging
  // slot's micro-batches) into the batch's loss slot; the parameters change only after it, in
  // the optimizer's step, which is never run again.
  const bool retried = retrying(s_, counters_, Stage::kTrain, item.epoch, item.spec.index, [&](int) {
    t0 = s_.recorder.begin(Stage::kTrain, item.epoch, item.spec.index);
    fault(Stage::kTrain, item);
    return compute_gradients(item, losses_.slot(item.spec.index, item.batches, item.loss_rows));
  });
  const auto dev = static_cast<std::size_t>(item.device_slot);
  const std::size_t parts = item.layouts.size();
  if (s_.data_parallel()) sum_over_ranks(item);
  s_.optimizer.step(s_.model.params());
  if (s_.data_parallel() && item.last_in_epoch()) {
    // The ranks stepped with the same sums: their parameters must be bitwise equal.
    s_.collective->check_equal(s_.model.params().checksum(train_stream_), "the parameters' checksum");
  }
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
  if (!retried && item.admission != nullptr && !layerwise(item)) governor_->observe(*item.admission, allocator_.in_use_bytes_on(train_stream_));
  counters_.count(item.epoch, c);
  s_.recorder.record(Stage::kTrain, item.epoch, item.spec.index, t0, s_.recorder.now());
  if (s_.on_step) s_.on_step(item.epoch, item.spec.index, item.batches, c.seeds);
}

void BatchPath::sum_over_ranks(const Item& item) {
  Collective& ranks = *s_.collective;
  if (device_.is_cuda()) {
    // GPU ranks (NCCL): the gradients and the batch's loss are summed where they are, queued on the
    // train stream; the loss-row count (a host value) through the host collective.
    GNNPIPE_CHECK(ranks.sums_on_device(), "data-parallel training on {} needs a collective that sums device memory "
                                          "(NCCL)", device_.str());
    const models::MatrixView<float> grads = s_.model.params().all_grads();
    ranks.sum_on_device(std::span<float>(grads.data, static_cast<std::size_t>(grads.cols)), train_stream_);
    double* slot = losses_.slot(item.spec.index, item.batches, item.loss_rows);
    ranks.sum_on_device(std::span<double>(slot, 1), train_stream_);
    std::array<double, 1> rows{item.idle_share ? 0.0 : static_cast<double>(item.loss_rows)};
    ranks.sum(rows);
    losses_.slot(item.spec.index, item.batches, static_cast<std::size_t>(rows[0]));
    return;
  }
  train_stream_.synchronize();
  ranks.sum(s_.model.params().grads());
  // The loss slot is host memory on the CPU backend; the epoch's loss weighs batches by their loss
  // rows, the whole batch's (an idle share adds none).
  double* slot = losses_.slot(item.spec.index, item.batches, item.loss_rows);
  std::array<double, 2> sums{*slot, item.idle_share ? 0.0 : static_cast<double>(item.loss_rows)};
  ranks.sum(sums);
  *slot = sums[0];
  losses_.slot(item.spec.index, item.batches, static_cast<std::size_t>(sums[1]));
}

bool BatchPath::compute_gradients(const Item& item, double* loss) {
  const auto dev = static_cast<std::size_t>(item.device_slot);
  GNNPIPE_CHECK(!item.resident || (dev == 0 && device_slots_.size() == 1), "{}: a resident batch lives in device slot 0 of 1, not {} of {}",
                describe(item), dev, device_slots_.size());
  core::tsan::acquire(&device_slots_[dev]);  // slot hand-off: filled by transfer
  train_stream_.wait(copied_[dev]);
  // The step's peak: the most the allocator (every stream) held from here to the step's end.
  allocator_.reset_batch_peak();
  const std::size_t parts = item.layouts.size();
  // MH-Aug's views are not split, cut or redrawn: a batch the governor changed carries none.
  if (augmentation_ != nullptr &&
      (layerwise(item) || parts != 1 || item.layouts.front().view_blocks.empty())) {
    refuse_augmented(item, layerwise(item) ? "it would have to run layer by layer"
                                           : "it would have to be split, cut or redrawn");
  }
  try {
    if (item.admission != nullptr && item.admission->trim) release_train_arrays();
    if (layerwise(item)) {
      run_layerwise(item, loss);
      return false;
    }
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
        counters_.moved(item.epoch, {.copied_bytes = bytes});
        run_part(item, item.layouts[i], slot.data(), i, parts, loss);
      }
    }
    end_step(parts, loss);
  } catch (const core::OutOfBudget& e) {
    if (layerwise(item)) throw;  // its chunks were sized to fit: a misprediction, not a batch to split
    if (augmentation_ != nullptr) refuse_augmented(item, fmt::format("its step ran out ({})", e.message()));
    core::logger().info("memory: {} ran out of budget in its step ({}); splitting it further and running it again",
                        describe(item), e.message());
    retry(item, loss);
    return true;
  }
  return false;
}

const std::byte* BatchPath::pack_part(const graph::MiniBatch& part, const BatchLayout& layout) {
  train_stream_.synchronize();  // the last copy out of part_staging_ completed
  if (part_staging_.size() < layout.total_bytes) {
    part_staging_ = core::Buffer<std::byte>();
    part_staging_ =
        core::Buffer<std::byte>(layout.total_bytes + layout.total_bytes / 8, core::MemoryKind::kStaging, device_);
  }
  placement_.pack(part, layout, part_staging_.data());
  counters_.count_rows(part.epoch, layout);
  return part_staging_.data();
}

void BatchPath::release_train_arrays() {
  s_.model.release_arrays();
  layerwise_.release();
  augmented_.release(train_stream_);
  for (models::DeviceArray<double>* a : {&loss_scratch_, &part_losses_, &ones_}) a->release(train_stream_);
  dlogits_.release(train_stream_);
  if (!gathered_.resident.load(std::memory_order_acquire)) {  // the resident batch's rows stay for the run
    gathered_.rows.release(train_stream_);
    gathered_.rows16.release(train_stream_);
  }
}

void BatchPath::retry(const Item& item, double* loss) {
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
        const BatchLayout layout = placement_.layout_of(parts[i]);
        const std::byte* packed = pack_part(parts[i], layout);
        models::DeviceArray<std::byte>& slot = device_slots_[dev];
        if (slot.capacity() < layout.total_bytes) grow_slot_from_train(slot, layout.total_bytes);
        core::copy_bytes_async(slot.data(), packed, layout.total_bytes, train_stream_);
        counters_.moved(item.epoch, {.copied_bytes = layout.total_bytes});
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

}  // namespace gnnpipe::pipeline::detail
