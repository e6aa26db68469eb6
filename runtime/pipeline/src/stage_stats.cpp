#include "gnnpipe/pipeline/stage_stats.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <fstream>
#include <set>
#include <utility>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::pipeline {
namespace {

// The recorder a thread's lane belongs to, by serial number: a recorder made later at the same
// address (a test's next run) must not inherit a stale lane.
std::atomic<uint64_t> g_next_serial{1};
thread_local uint64_t tl_recorder = 0;
thread_local int tl_lane = -1;

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// The calling thread's CPU time (a system call of well under a microsecond; a few per batch).
double thread_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

StageRecorder::StageRecorder(bool keep_events)
    : serial_(g_next_serial.fetch_add(1)), origin_(std::chrono::steady_clock::now()), keep_events_(keep_events) {}

int StageRecorder::lane_locked(std::string_view name) {
  const int n = lane_counts_[std::string(name)]++;
  lane_names_.push_back(n == 0 ? std::string(name) : fmt::format("{} {}", name, n));
  return static_cast<int>(lane_names_.size()) - 1;
}

int StageRecorder::lane(std::string_view name) {
  std::lock_guard lock(mutex_);
  tl_recorder = serial_;
  tl_lane = lane_locked(name);
  return tl_lane;
}

int StageRecorder::this_lane_locked(Stage stage) {
  if (tl_recorder != serial_ || tl_lane < 0) {  // a pool thread seen for the first time
    tl_recorder = serial_;
    tl_lane = lane_locked(stage == Stage::kSample || stage == Stage::kGather ? "sampler" : to_string(stage));
  }
  return tl_lane;
}

double StageRecorder::begin(Stage stage, int epoch, int64_t batch) {
  const double t = now();
  const double cpu = thread_cpu_seconds();
  std::lock_guard lock(mutex_);
  const int lane = this_lane_locked(stage);
  in_flight_[lane] = InFlight{stage, epoch, batch, lane_names_[static_cast<std::size_t>(lane)], t, cpu};
  last_activity_s_ = std::max(last_activity_s_, t);
  return t;
}

std::vector<StageRecorder::InFlight> StageRecorder::in_flight() const {
  std::lock_guard lock(mutex_);
  std::vector<InFlight> out;
  for (const auto& [lane, item] : in_flight_) out.push_back(item);
  std::sort(out.begin(), out.end(), [](const InFlight& a, const InFlight& b) { return a.since_s < b.since_s; });
  return out;
}

void StageRecorder::set_hand_offs(std::function<std::string()> describe) {
  std::lock_guard lock(hand_offs_mutex_);
  hand_offs_ = std::move(describe);
}

std::string StageRecorder::hand_offs() const {
  std::lock_guard lock(hand_offs_mutex_);
  return hand_offs_ ? hand_offs_() : std::string();
}

double StageRecorder::last_activity_s() const {
  std::lock_guard lock(mutex_);
  return last_activity_s_;
}

void StageRecorder::record(Stage stage, int epoch, int64_t batch, double begin_s, double end_s) {
  std::lock_guard lock(mutex_);
  const int lane = this_lane_locked(stage);
  double cpu_s = 0;  // read only for an item begin() marked on this thread (a system call)
  if (const auto it = in_flight_.find(lane); it != in_flight_.end()) {
    const InFlight& item = it->second;
    if (item.stage == stage && item.epoch == epoch && item.batch == batch) {
      cpu_s = std::max(0.0, thread_cpu_seconds() - item.thread_cpu_s);
    }
    in_flight_.erase(it);
  }
  last_activity_s_ = std::max(last_activity_s_, end_s);
  events_.push_back(StageEvent{stage, epoch, batch, tl_lane, begin_s, end_s});
  events_end_max_.push_back(std::max(end_s, events_end_max_.empty() ? end_s : events_end_max_.back()));
  StageTotals& t = by_epoch_[{stage, epoch}];
  t.busy_s += end_s - begin_s;
  t.items += 1;
  t.cpu_s += cpu_s;
}

void StageRecorder::record_wait(Stage stage, int epoch, double begin_s, double end_s, WaitFor what) {
  std::lock_guard lock(mutex_);
  by_epoch_[{stage, epoch}].wait_s += end_s - begin_s;
  last_activity_s_ = std::max(last_activity_s_, end_s);
  if (end_s > begin_s) {
    waits_.push_back(WaitEvent{stage, what, begin_s, end_s});
    waits_end_max_.push_back(std::max(end_s, waits_end_max_.empty() ? end_s : waits_end_max_.back()));
  }
}

std::map<Stage, StageTotals> StageRecorder::totals() const { return totals(-1); }

std::map<Stage, StageTotals> StageRecorder::totals(int epoch) const {
  std::lock_guard lock(mutex_);
  std::map<Stage, StageTotals> out;
  for (Stage s : kStages) {
    const auto folded = folded_.find(s);
    out[s] = epoch >= 0 || folded == folded_.end() ? StageTotals{} : folded->second;
  }
  for (const auto& [key, t] : by_epoch_) {
    if (epoch >= 0 && key.second != epoch) continue;
    out[key.first] += t;
  }
  return out;
}

void StageRecorder::forget(double before_s, int first_epoch) {
  std::lock_guard lock(mutex_);
  for (auto it = by_epoch_.begin(); it != by_epoch_.end();) {
    if (it->first.second >= first_epoch) {
      ++it;
      continue;
    }
    folded_[it->first.first] += it->second;
    it = by_epoch_.erase(it);
  }
  if (keep_events_) return;
  // The running maxima are non-decreasing: the prefix that ended by before_s is what window()
  // would never read again. The maxima kept still bound their (shorter) prefixes from above.
  const auto drop = [before_s](auto& events, std::vector<double>& end_max) {
    const auto n = std::upper_bound(end_max.begin(), end_max.end(), before_s) - end_max.begin();
    events.erase(events.begin(), events.begin() + n);
    end_max.erase(end_max.begin(), end_max.begin() + n);
  };
  drop(events_, events_end_max_);
  drop(waits_, waits_end_max_);
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

double WindowStats::share_of(double seconds) const {
  return std::min(100.0, percent(seconds, length_s));
}

double WindowStats::share(Stage stage) const {
  const auto busy = busy_s.find(stage);
  const auto n = lanes.find(stage);
  if (busy == busy_s.end() || n == lanes.end() || n->second == 0) return 0.0;
  return std::min(100.0, percent(busy->second, length_s * n->second));
}

double WindowStats::sampling_share() const {
  // Sample and gather run on the same pool threads: their busy time over those threads' time.
  const auto lanes_of = [&](Stage s) { auto it = lanes.find(s); return it == lanes.end() ? 0 : it->second; };
  const int threads = std::max(lanes_of(Stage::kSample), lanes_of(Stage::kGather));
  if (threads == 0) return 0.0;
  return std::min(100.0, percent(busy_s.at(Stage::kSample) + busy_s.at(Stage::kGather), length_s * threads));
}

WindowStats StageRecorder::window(double begin_s, double end_s) const {
  WindowStats w;
  w.length_s = std::max(0.0, end_s - begin_s);
  for (Stage s : kStages) w.busy_s[s] = 0.0;
  const auto overlap = [&](double b, double e) { return std::max(0.0, std::min(e, end_s) - std::max(b, begin_s)); };
  std::lock_guard lock(mutex_);
  std::map<Stage, std::set<int>> lanes;
  for (std::size_t i = events_.size(); i-- > 0 && events_end_max_[i] > begin_s;) {
    const StageEvent& e = events_[i];
    const double o = overlap(e.begin_s, e.end_s);
    if (o <= 0) continue;
    w.busy_s[e.stage] += o;
    lanes[e.stage].insert(e.lane);
    if (e.stage == Stage::kEval) w.eval_s_by_epoch[e.epoch] += o;
  }
  for (const auto& [stage, set] : lanes) w.lanes[stage] = static_cast<int>(set.size());
  for (std::size_t i = waits_.size(); i-- > 0 && waits_end_max_[i] > begin_s;) {
    const WaitEvent& e = waits_[i];
    if (e.stage != Stage::kTrain) continue;
    (e.what == WaitFor::kInput ? w.train_wait_input_s : w.train_wait_eval_s) += overlap(e.begin_s, e.end_s);
  }
  return w;
}

namespace {

// "evaluation of epoch 3 ran 42% of it" for the evaluations that ran within the window.
std::string evaluations(const WindowStats& w) {
  std::string text;
  for (const auto& [epoch, seconds] : w.eval_s_by_epoch) {
    text += fmt::format("{}evaluation of epoch {} {:.0f}%", text.empty() ? "" : ", ", epoch, w.share_of(seconds));
  }
  return text;
}

}  // namespace

namespace {

// The checkpoint writer's share of the window, where it wrote: it runs beside the stages (nothing
// waits for it), so it is said apart and never named as the bound.
std::string writer_note(const WindowStats& w) {
  const double writer = w.share(Stage::kCheckpoint);
  return writer >= 0.5 ? fmt::format("; checkpoint writer {:.0f}% busy (its own thread)", writer) : std::string();
}

}  // namespace

std::string epoch_verdict(const WindowStats& w, bool pipelined) {
  return epoch_verdict_of_stages(w, pipelined) + writer_note(w);
}

std::string epoch_verdict_of_stages(const WindowStats& w, bool pipelined) {
  const double sampling = w.sampling_share(), transfer = w.share(Stage::kTransfer), train = w.share(Stage::kTrain),
               eval = w.share(Stage::kEval);
  if (!pipelined) {
    const double gather = w.share(Stage::kGather), sample = w.share(Stage::kSample);
    return fmt::format("sequential: sampling {:.0f}%, transfer {:.0f}%, training {:.0f}%, evaluation {:.0f}% of the epoch",
                       std::min(100.0, sample + gather), transfer, train, eval);
  }
  const double wait_data = w.share_of(w.train_wait_input_s), wait_eval = w.share_of(w.train_wait_eval_s);
  const std::string waits = fmt::format("trainer waited {:.0f}% of the epoch for data{}", wait_data,
                                        wait_eval >= 0.5 ? fmt::format(", {:.0f}% for evaluation", wait_eval) : "");
  const std::string evals = w.eval_s_by_epoch.empty() ? std::string() : "; " + evaluations(w) + " of this epoch";
  // The evaluation thread evaluates, reduces each epoch's numbers (loss, scores) and reports epochs
  // (log line, metrics row, checkpoint hand-off): the trainer waits for all three, so all are its
  // busy time, and the verdict names the two beside evaluation where they took a share.
  const double metrics = w.share(Stage::kMetrics), report = w.share(Stage::kReport);
  const double eval_thread = std::min(100.0, eval + metrics + report);
  std::vector<std::string> parts;
  if (metrics >= 0.5) parts.push_back(fmt::format("metrics {:.0f}%", metrics));
  if (report >= 0.5) parts.push_back(fmt::format("reporting epochs {:.0f}%", report));
  const std::string reporting = parts.empty() ? std::string() : fmt::format(" ({})", fmt::join(parts, ", "));
  // The largest share names the bound; evaluation also when the trainer waited on it more than
  // on data (the next snapshot cannot be taken before the evaluation is done).
  if ((wait_eval >= 10.0 && wait_eval >= wait_data) ||
      (eval_thread > train && eval_thread >= sampling && eval_thread >= transfer)) {
    return fmt::format("bound by evaluation: evaluation thread {:.0f}% busy{}, trainer {:.0f}% busy, {}{}", eval_thread,
                       reporting, train, waits, evals);
  }
  // The trainer waited for data longer than it worked, and no stage feeding it was half busy: the
  // wait is latency (too few batches in flight for each one's path), not a stage's throughput.
  // Calling that "bound by training" sent users to the model (seen on an H200: a 320 MiB budget
  // splitting every batch, trainer 34% busy, waiting 64% for data, sampler threads 3% busy).
  const double governor = w.share(Stage::kGovern);
  if (wait_data >= 10.0 && wait_data > train && std::max({sampling, transfer, governor}) < 50.0) {
    return fmt::format("bound by data latency: {}, though no stage feeding it was half busy (sampler threads {:.0f}%, "
                       "governor {:.0f}%, copy thread {:.0f}%, trainer {:.0f}%){}",
                       waits, sampling, governor, transfer, train, evals);
  }
  if (wait_data < 10.0 || (train >= sampling && train >= transfer)) {
    return fmt::format("bound by training: trainer {:.0f}% busy, {} (sampler threads {:.0f}% busy){}", train, waits,
                       sampling, evals);
  }
  if (sampling >= transfer) {
    return fmt::format("bound by sampling: sampler threads {:.0f}% busy, {}{}", sampling, waits, evals);
  }
  return fmt::format("bound by transfer: copy thread {:.0f}% busy, {}{}", transfer, waits, evals);
}

}  // namespace gnnpipe::pipeline
