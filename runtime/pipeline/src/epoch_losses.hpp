#pragma once
// EpochLosses: the per-batch training losses of one epoch without a host synchronisation inside a
// step (docs/DESIGN.md §6.8). Each step writes its loss into its own slot in the op context's memory;
// at the epoch's end one copy brings every slot to (pinned) host memory, and mean() waits for that
// copy only when someone asks for the number (the evaluation thread, after the next epoch started).
// The mean weights each batch by its loss rows and adds in batch order, as the CPU always did.
// Used by the train thread (slot, end_epoch) and then by one reader (mean); end_epoch must not be
// called again before the previous mean() returned.
// It also times the epoch on the device: the stream's timeline from the previous epoch's end (or
// construction) to this one's, what a GPU epoch really took (the train thread only queues work,
// so its own clock runs ahead of the device).
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/models/op_context.hpp"

namespace gnnpipe::pipeline::detail {

class EpochLosses {
 public:
  explicit EpochLosses(const models::OpContext& ctx)
      : ctx_(ctx), ready_(ctx.device(), {.enable_timing = true}), previous_(ctx.device(), {.enable_timing = true}) {
    ready_.record(ctx_.stream());  // the timeline's start (start_timeline() moves it)
  }

  // Restarts the timeline: the first epoch's device time counts from here. Before the first
  // end_epoch only (the setup before a run's first epoch, e.g. placing a whole-graph block that
  // took 16 s on products, was counted in epoch 1 while the timeline began at construction).
  void start_timeline() { ready_.record(ctx_.stream()); }

  // Where batch `index` (of `batches` in its epoch) writes its loss; records its loss rows. The
  // first batch of an epoch sizes the slots (growth is ordered after earlier work on the stream).
  double* slot(int64_t index, int64_t batches, std::size_t loss_rows) {
    if (rows_.size() != static_cast<std::size_t>(batches)) rows_.assign(static_cast<std::size_t>(batches), 0);
    rows_[static_cast<std::size_t>(index)] = loss_rows;
    return losses_.ensure(ctx_, static_cast<std::size_t>(batches)) + index;
  }

  // The losses and loss rows of batches [0, n) of the epoch in progress (of `batches`), on the
  // host (waits for the stream): what a stopped run's checkpoint keeps of it. Rows 0: not trained.
  std::pair<std::vector<double>, std::vector<std::size_t>> prefix(int64_t n, int64_t batches) {
    const auto count = static_cast<std::size_t>(n);
    std::vector<double> values(count);
    // No slot yet in this epoch (its first batches had no loss rows): nothing trained.
    if (count == 0 || rows_.size() != static_cast<std::size_t>(batches)) return {values, std::vector<std::size_t>(count)};
    // `values` is pageable: a synchronous copy (staged through pinned memory on a GPU).
    core::copy_to_host_sync(values.data(), losses_.data(), count * sizeof(double), ctx_.stream());
    return {values, std::vector<std::size_t>(rows_.begin(), rows_.begin() + n)};
  }
  // A resumed epoch of `batches` whose first losses.size() batches trained before the checkpoint:
  // their losses and rows are put back, as if those steps had just run.
  void resume(int64_t batches, std::span<const double> losses, std::span<const std::size_t> rows) {
    GNNPIPE_CHECK(losses.size() == rows.size() && losses.size() <= static_cast<std::size_t>(batches),
                  "epoch losses: {} losses and {} rows resumed for an epoch of {} batches", losses.size(), rows.size(),
                  batches);
    rows_.assign(static_cast<std::size_t>(batches), 0);
    std::copy(rows.begin(), rows.end(), rows_.begin());
    double* slots = losses_.ensure(ctx_, static_cast<std::size_t>(batches));
    if (losses.empty()) return;
    // `losses` is pageable (and may go once this returns): a synchronous copy.
    core::copy_from_host_sync(slots, losses.data(), losses.size() * sizeof(double), ctx_.stream());
  }

  // Queues the copy of this epoch's losses to the host on the context's stream.
  void end_epoch() {
    reported_rows_ = rows_;
    const std::size_t n = reported_rows_.size();
    if (n > 0) {
      if (pinned_.size() < n) pinned_ = core::Buffer<double>(n, core::MemoryKind::kStaging, ctx_.device());
      core::copy_bytes_async(pinned_.data(), losses_.data(), n * sizeof(double), ctx_.stream());
    }
    std::swap(previous_, ready_);
    ready_.record(ctx_.stream());
    rows_.assign(rows_.size(), 0);
  }

  // The rows-weighted mean loss of the epoch passed to end_epoch (waits for its copy).
  double mean() {
    ready_.synchronize();
    device_seconds_ = static_cast<double>(core::Event::elapsed_ms(previous_, ready_)) / 1e3;
    double weighted = 0;
    std::size_t rows = 0;
    for (std::size_t i = 0; i < reported_rows_.size(); ++i) {
      if (reported_rows_[i] == 0) continue;  // not trained (no loss rows): its slot holds nothing
      weighted += pinned_.data()[i] * static_cast<double>(reported_rows_[i]);
      rows += reported_rows_[i];
    }
    return rows > 0 ? weighted / static_cast<double>(rows) : 0.0;
  }
  // Seconds on the context's stream between the last two end_epoch calls (the first: since
  // construction); valid after mean() returned.
  double device_seconds() const { return device_seconds_; }

 private:
  const models::OpContext& ctx_;
  models::DeviceArray<double> losses_;
  core::Buffer<double> pinned_;
  std::vector<std::size_t> rows_, reported_rows_;
  core::Event ready_, previous_;
  double device_seconds_ = 0;
};

}  // namespace gnnpipe::pipeline::detail
