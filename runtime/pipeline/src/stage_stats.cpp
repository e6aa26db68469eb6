#include "gnnpipe/pipeline/stage_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::pipeline {
namespace {

thread_local const StageRecorder* tl_recorder = nullptr;
thread_local int tl_lane = -1;

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

}  // namespace

int StageRecorder::lane_locked(std::string_view name) {
  const int n = lane_counts_[std::string(name)]++;
  lane_names_.push_back(n == 0 ? std::string(name) : fmt::format("{} {}", name, n));
  return static_cast<int>(lane_names_.size()) - 1;
}

int StageRecorder::lane(std::string_view name) {
  std::lock_guard lock(mutex_);
  tl_recorder = this;
  tl_lane = lane_locked(name);
  return tl_lane;
}

void StageRecorder::record(Stage stage, int epoch, int64_t batch, double begin_s, double end_s) {
  std::lock_guard lock(mutex_);
  if (tl_recorder != this || tl_lane < 0) {  // a pool thread seen for the first time
    tl_recorder = this;
    tl_lane = lane_locked(stage == Stage::kSample || stage == Stage::kGather ? "sampler" : to_string(stage));
  }
  events_.push_back(StageEvent{stage, epoch, batch, tl_lane, begin_s, end_s});
  StageTotals& t = by_epoch_[{stage, epoch}];
  t.busy_s += end_s - begin_s;
  t.items += 1;
}

void StageRecorder::record_wait(Stage stage, int epoch, double seconds) {
  std::lock_guard lock(mutex_);
  by_epoch_[{stage, epoch}].wait_s += seconds;
}

std::map<Stage, StageTotals> StageRecorder::totals() const { return totals(-1); }

std::map<Stage, StageTotals> StageRecorder::totals(int epoch) const {
  std::lock_guard lock(mutex_);
  std::map<Stage, StageTotals> out;
  for (Stage s : kStages) out[s];
  for (const auto& [key, t] : by_epoch_) {
    if (epoch >= 0 && key.second != epoch) continue;
    StageTotals& sum = out[key.first];
    sum.busy_s += t.busy_s;
    sum.wait_s += t.wait_s;
    sum.items += t.items;
  }
  return out;
}

void StageRecorder::write_chrome_trace(const std::filesystem::path& path) const {
  std::lock_guard lock(mutex_);
  std::ofstream out(path);
  GNNPIPE_CHECK_DATA(out.good(), "{}: cannot write the trace", path.string());
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (std::size_t lane = 0; lane < lane_names_.size(); ++lane) {
    out << (first ? "" : ",\n")
        << fmt::format(R"({{"name":"thread_name","ph":"M","pid":1,"tid":{},"args":{{"name":"{}"}}}})", lane,
                       lane_names_[lane]);
    first = false;
  }
  for (const auto& e : events_) {
    out << (first ? "" : ",\n")
        << fmt::format(R"({{"name":"{}","cat":"stage","ph":"X","pid":1,"tid":{},"ts":{:.3f},"dur":{:.3f},"args":{{"epoch":{},"batch":{}}}}})",
                       to_string(e.stage), e.lane, e.begin_s * 1e6, (e.end_s - e.begin_s) * 1e6, e.epoch, e.batch);
    first = false;
  }
  out << "\n]}\n";
  GNNPIPE_CHECK_DATA(out.good(), "{}: writing the trace failed", path.string());
}

std::string epoch_verdict(const std::map<Stage, StageTotals>& t, double epoch_s, int sampler_threads, bool pipelined) {
  const auto busy = [&](Stage s) { auto it = t.find(s); return it == t.end() ? 0.0 : it->second.busy_s; };
  const double sampling = busy(Stage::kSample) + busy(Stage::kGather);
  if (!pipelined) {
    return fmt::format("sequential: sampling {:.0f}%, transfer {:.0f}%, training {:.0f}%, evaluation {:.0f}% of the epoch",
                       percent(sampling, epoch_s), percent(busy(Stage::kTransfer), epoch_s),
                       percent(busy(Stage::kTrain), epoch_s), percent(busy(Stage::kEval), epoch_s));
  }
  const double waited = t.count(Stage::kTrain) != 0U ? t.at(Stage::kTrain).wait_s : 0.0;
  const double sampler_util = percent(sampling, epoch_s * std::max(1, sampler_threads));
  const double transfer_util = percent(busy(Stage::kTransfer), epoch_s);
  const double train_util = percent(busy(Stage::kTrain), epoch_s);
  if (percent(waited, epoch_s) < 10.0 || (train_util >= sampler_util && train_util >= transfer_util)) {
    return fmt::format("bound by training: trainer {:.0f}% busy, waited {:.0f}% of the epoch for data (sampler threads {:.0f}% busy)",
                       train_util, percent(waited, epoch_s), sampler_util);
  }
  if (sampler_util >= transfer_util) {
    return fmt::format("bound by sampling: sampler threads {:.0f}% busy, trainer waited {:.0f}% of the epoch",
                       sampler_util, percent(waited, epoch_s));
  }
  return fmt::format("bound by transfer: copy {:.0f}% busy, trainer waited {:.0f}% of the epoch", transfer_util,
                     percent(waited, epoch_s));
}

}  // namespace gnnpipe::pipeline
