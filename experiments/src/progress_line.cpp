#include "progress_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "gnnpipe/core/log.hpp"

namespace gnnpipe::experiments {
namespace {

std::string duration_text(double s) {
  if (s < 0) return "?";
  const auto total = static_cast<int64_t>(s + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

}  // namespace

std::string progress_text(int epoch, int epochs, int64_t done, int64_t batches, double seeds_per_s, double eta_s,
                          const std::string& bound) {
  constexpr int kWidth = 10;
  const int filled = batches > 0 ? static_cast<int>(std::min<int64_t>(kWidth, done * kWidth / batches)) : 0;
  std::string text = fmt::format("epoch {}/{} [{}{}] {}/{} batches | {:.0f} seeds/s | ETA {}", epoch, epochs,
                                 std::string(static_cast<std::size_t>(filled), '#'),
                                 std::string(static_cast<std::size_t>(kWidth - filled), '-'), done, batches, seeds_per_s,
                                 duration_text(eta_s));
  if (!bound.empty()) text += " | " + bound;
  return text;
}

ProgressLine::ProgressLine(int epochs, bool enabled) : enabled_(enabled), epochs_(epochs) {
  if (enabled_) core::set_console_line_reset(true);
}

ProgressLine::~ProgressLine() {
  clear();
  if (enabled_) core::set_console_line_reset(false);
}

void ProgressLine::step(int epoch, int64_t batch, int64_t batches, int64_t seeds) {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  const double now = watch_.seconds();
  if (epoch != epoch_) {
    // An epoch runs from the previous epoch's last step (the run's start for the first).
    const double start = epoch_ == 0 ? 0.0 : last_step_s_;
    if (epoch_ != 0) {
      epoch_s_sum_ += start - epoch_start_s_;
      ++epochs_timed_;
    }
    epoch_ = epoch;
    epoch_start_s_ = start;
    seeds_ = 0;
  }
  last_step_s_ = now;
  seeds_ += seeds;
  const bool last = batch + 1 == batches;
  if (!last && now - last_draw_s_ < 0.2) return;
  last_draw_s_ = now;
  const double in_epoch = now - epoch_start_s_;
  const int64_t done = batch + 1;
  const double epoch_estimate = epochs_timed_ > 0 ? epoch_s_sum_ / epochs_timed_
                                                  : in_epoch * static_cast<double>(batches) / static_cast<double>(done);
  const double left_this = std::max(0.0, epoch_estimate - in_epoch);
  const double eta = left_this + epoch_estimate * std::max(0, epochs_ - epoch);
  const std::string text = progress_text(epoch, epochs_, done, batches, in_epoch > 0 ? seeds_ / in_epoch : 0.0, eta, bound_);
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::epoch_done(const pipeline::EpochResult& r) {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  // "bound by training: trainer 98% busy, ..." -> "bound by training"
  bound_ = r.verdict.substr(0, r.verdict.find(':'));
}

void ProgressLine::clear() {
  if (!enabled_) return;
  const std::lock_guard lock(mutex_);
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace gnnpipe::experiments
